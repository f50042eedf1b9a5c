"""`npu_bridge.npu_cpu`."""
