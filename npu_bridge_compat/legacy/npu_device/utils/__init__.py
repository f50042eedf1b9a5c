"""`npu_device.utils`."""
