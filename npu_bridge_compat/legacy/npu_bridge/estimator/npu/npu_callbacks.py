"""`npu_bridge.estimator.npu.npu_callbacks`."""

from npu_bridge_compat.distributed import NPUBroadcastGlobalVariablesCallback, broadcast_global_variables  # noqa: F401
