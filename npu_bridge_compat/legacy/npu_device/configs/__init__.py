"""`npu_device.configs`."""

from ..npu_device import NpuRunContextOptions as run_context_options  # noqa: F401
from . import experimental  # noqa: F401
