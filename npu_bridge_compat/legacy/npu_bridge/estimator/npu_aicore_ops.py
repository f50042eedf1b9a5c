"""`npu_bridge.estimator.npu_aicore_ops`."""

from npu_bridge_compat.ops import fast_gelu, npu_aicore_ops  # noqa: F401

dropout_v3 = npu_aicore_ops.dropout_v3
