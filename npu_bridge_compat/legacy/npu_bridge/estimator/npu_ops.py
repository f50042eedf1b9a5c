"""`npu_bridge.estimator.npu_ops`."""

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
