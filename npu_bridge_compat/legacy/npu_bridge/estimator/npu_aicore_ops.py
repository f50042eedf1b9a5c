"""`npu_bridge.estimator.npu_aicore_ops`."""

from npu_bridge_compat.ops import dropout_v3, fast_gelu, npu_aicore_ops  # noqa: F401
