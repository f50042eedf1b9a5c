"""`npu_bridge.hccl`."""
