"""`npu_bridge.helper`."""
