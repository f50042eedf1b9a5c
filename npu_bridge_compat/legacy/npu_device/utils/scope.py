"""`npu_device.utils.scope`: the same node attributes as the TF1 adapter's scopes."""

from npu_bridge_compat.scope import keep_dtype_scope, npu_recompute_scope  # noqa: F401
