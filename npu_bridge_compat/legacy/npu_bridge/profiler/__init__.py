"""`npu_bridge.profiler`."""
