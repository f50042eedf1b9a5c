"""`npu_device`: Ascend's TF2 adapter, as an alias of npu_bridge_compat's TF2 door (npu_bridge_compat/tf2/).

Importing it joins the job's collective runtime when RANK_SIZE > 1: ported TF2 scripts import npu_device before
TensorFlow runs anything, and eager collectives must be set up by then.
"""

# Relative imports: under the alias the submodules are npu_device.*, as scripts reach them (npu_device.npu_device).
from npu_bridge_compat.scope import keep_dtype_scope, npu_recompute_scope  # noqa: F401

from . import compat, configs, distribute, npu_device, ops, train  # noqa: F401
from .npu_device import (  # noqa: F401
    gen_npu_ops,
    global_options,
    is_inf_nan_enabled,
    npu_compat_function,
    npu_run_context,
    open,
    set_device_sat_mode,
    set_npu_loop_size,
)

if __name__ == "npu_device":  # a script's import through the alias, not npu_bridge_compat's own (scan)
    from npu_bridge_compat.distributed.collective_runtime import start_if_several_ranks

    start_if_several_ranks()
    del start_if_several_ranks  # not one of the adapter's names
