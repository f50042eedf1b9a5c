"""`npu_bridge.profiler.profiler`: Ascend's profiler API; profile with profiling_mode / profiling_options
instead, which become TensorFlow profiler traces."""

from npu_bridge_compat.errors import device_only

Profiler = device_only("npu_bridge.profiler.Profiler")
