"""`npu_device.compat`: `enable_v1()`, then the TF1 adapter's API under `npu_device.compat.v1`."""

from npu_bridge_compat.tf2.device import enable_v1  # noqa: F401

from . import v1  # noqa: F401
