"""`npu_bridge.profiler.profiler`."""

from npu_bridge_compat.fused.profiler import Profiler  # noqa: F401
