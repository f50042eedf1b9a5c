"""`npu_device.train`."""

from . import optimizer  # noqa: F401
