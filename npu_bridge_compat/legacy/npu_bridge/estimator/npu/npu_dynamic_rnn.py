"""`npu_bridge.estimator.npu.npu_dynamic_rnn`."""

from npu_bridge_compat.legacy.rnn import DynamicAUGRU, DynamicGRUV2, DynamicRNN  # noqa: F401
