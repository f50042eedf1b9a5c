"""`npu_bridge.estimator.npu_ops`."""

# npu_onnx_graph_op (ONNX models as graph ops) lives apart from the TensorFlow-backed ops.
from npu_bridge_compat.onnx_graph import npu_onnx_graph_op  # noqa: E402,F401
from npu_bridge_compat.ops import (  # noqa: F401
    LARS,
    LARSV2,
    NPUInit,
    NPUShutdown,
    adam_apply_one_assign,
    adam_apply_one_with_decay_assign,
    basic_lstm_cell,
    dropout,
    initialize_system,
    shutdown_system,
)
