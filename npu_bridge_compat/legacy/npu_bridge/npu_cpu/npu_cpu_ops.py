"""`npu_bridge.npu_cpu.npu_cpu_ops`: Ascend AI CPU kernels."""

from npu_bridge_compat.ops import embeddingrankid, randomchoicewithmask  # noqa: F401
