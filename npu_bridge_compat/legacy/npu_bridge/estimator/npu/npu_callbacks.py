"""`npu_bridge.estimator.npu.npu_callbacks`."""

from npu_bridge_compat.keras import NPUBroadcastGlobalVariablesCallback  # noqa: F401
