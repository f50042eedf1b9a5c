"""`npu_device.npu_device`: the device, its options and context."""

import contextlib

from npu_bridge_compat.errors import DeviceOnlyFeatureError
from npu_bridge_compat.options.tf2_tree import OptionGroup
from npu_bridge_compat.tf2.device import (  # noqa: F401
    NpuDeviceHandle,
    enable_v1,
    global_npu_ctx,
    global_options,
    open,
    set_npu_loop_size,
)

from . import gen_npu_ops  # noqa: F401


def npu_compat_function(func=None, *args, **kwargs):
    """The adapter's tf.function for the NPU (XLA compilation skipped there); on a host, tf.function itself."""
    import tensorflow as tf

    if func is not None:
        return tf.function(func, *args, **kwargs)
    return lambda decorated: tf.function(decorated, *args, **kwargs)


def is_inf_nan_enabled() -> bool:
    """Host arithmetic is IEEE: an overflow gives Inf/NaN (the NPU's INF-NAN mode), never a saturated value."""
    return True


def set_device_sat_mode(mode) -> None:
    """Mode 1 (INF-NAN) is how a host computes; saturation (0) exists only on the NPU."""
    if mode != 1:
        raise DeviceOnlyFeatureError(
            f"npu_device.set_device_sat_mode({mode!r}): saturation mode needs Ascend hardware; a host computes "
            "in INF-NAN mode (1) only."
        )


class NpuRunContextOptions:
    """Options of one npu_run_context: its `experimental` group, as in global_options()."""

    def __init__(self) -> None:
        self.experimental = OptionGroup("experimental")


@contextlib.contextmanager
def npu_run_context(options=None):
    """The adapter's per-run options (graph memory optimisation); a host plans them once, in global_options()."""
    if options is not None and not isinstance(options, NpuRunContextOptions):
        raise TypeError("options type must be NpuRunContextOptions")
    yield
