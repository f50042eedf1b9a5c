"""`npu_bridge.estimator.npu.npu_strategy`."""

from npu_bridge_compat.distributed import NPUStrategy  # noqa: F401
