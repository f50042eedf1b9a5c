"""`npu_bridge.tbe.npu_vector_ops`."""

from npu_bridge_compat.ops import lamb_apply_optimizer_assign, lamb_apply_weight_assign  # noqa: F401
