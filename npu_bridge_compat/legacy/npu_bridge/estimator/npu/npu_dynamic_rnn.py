"""`npu_bridge.estimator.npu.npu_dynamic_rnn`."""

from npu_bridge_compat.fused.rnn import (  # noqa: F401
    DYNAMIC_RNN_BIDIRECTION,
    DYNAMIC_RNN_REDIRECTIONAL,
    DYNAMIC_RNN_UNIDIRECTION,
    DynamicAUGRU,
    DynamicGRUV2,
    DynamicRNN,
)
