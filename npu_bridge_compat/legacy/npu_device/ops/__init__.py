"""`npu_device.ops`."""

from npu_bridge_compat.tf2.kernels import gelu  # noqa: F401
