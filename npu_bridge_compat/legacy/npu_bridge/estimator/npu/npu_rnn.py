"""`npu_bridge.estimator.npu.npu_rnn`."""

from npu_bridge_compat.fused.rnn import npu_dynamic_rnn  # noqa: F401
