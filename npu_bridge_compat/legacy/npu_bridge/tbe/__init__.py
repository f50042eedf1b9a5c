"""`npu_bridge.tbe`."""
