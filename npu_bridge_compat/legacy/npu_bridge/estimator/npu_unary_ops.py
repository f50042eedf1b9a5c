"""`npu_bridge.estimator.npu_unary_ops`."""

from npu_bridge_compat.ops import gelu, npu_unary_ops  # noqa: F401
