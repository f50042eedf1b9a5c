"""XLA's process-wide flags for graph-kernel fusion, set in this one place before TensorFlow reads them.

Graph-kernel fusion is XLA auto-clustering (a session's `global_jit_level`, a function call's config) restricted
to the ops XLA fuses: `--tf_xla_ops_to_cluster=FUSIBLE` (element-wise, reductions, shapes; MatMul and Conv keep
their oneDNN / cuBLAS / cuDNN kernels) and, on a CPU, `--tf_xla_cpu_global_jit`. TensorFlow parses TF_XLA_FLAGS
once, when it first needs one of them (the eager context starting its devices, a session's first graph), and
never again: `pywrap_tfe.TF_SetTfXlaCpuGlobalJit` and `TF_ResetJitCompilerFlags` do not reach the flags the graph
passes read. So the two flags are added to TF_XLA_FLAGS (`reserve_fusion_flags`, through the changes registry) as
early as a user of the package can be known: when `run` / `launch` start a script, when the adapters' import paths
are installed, when a door plans graph-kernel fusion (too late if TensorFlow already started: the report says
so). Both are inert until auto-clustering is turned on, which this package does only where enable_graph_kernel
asks for it; a flag the user already set in TF_XLA_FLAGS is left as the user set it. Checked on TensorFlow 2.15
and 2.21.
"""

from __future__ import annotations

import os
import sys

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner

TF_XLA_FLAGS = "TF_XLA_FLAGS"
FUSION_FLAGS = ("--tf_xla_cpu_global_jit", "--tf_xla_ops_to_cluster=FUSIBLE")

# "missed": why the flags may not be in force, once reserving them came too late
MISSED = changes.ProcessState("whether XLA's fusion flags came too late", Owner.GRAPH_KERNEL_FUSION, dict)
_MISSED = (
    "TensorFlow started before graph-kernel fusion was asked for and has read its XLA flags; use "
    "`python -m npu_bridge_compat run` (or `install_aliases()` before running TensorFlow), or set "
    f"{TF_XLA_FLAGS}='{' '.join(FUSION_FLAGS)}'"
)


def _flag_name(flag: str) -> str:
    return flag.split("=", 1)[0]


def reserve_fusion_flags(tensorflow_read_flags: bool | None = None) -> None:
    """Add the fusion flags to TF_XLA_FLAGS unless they are there (flags the user set there win).
    `tensorflow_read_flags`: whether TensorFlow has parsed its flags already (asked of TensorFlow when not given)."""
    current = os.environ.get(TF_XLA_FLAGS, "").split()
    names = {_flag_name(flag) for flag in current}
    added = [flag for flag in FUSION_FLAGS if _flag_name(flag) not in names]
    if not added:
        return
    if tensorflow_read_flags is None:
        tensorflow_read_flags = _tensorflow_read_flags()
    if tensorflow_read_flags:
        changes.state(MISSED)["missed"] = _MISSED
        return
    changes.add_to_environment_list(
        TF_XLA_FLAGS,
        added,
        owner=Owner.GRAPH_KERNEL_FUSION,
        reason="XLA auto-clustering of the fusible ops only (MatMul and Conv keep their library kernels), read by "
        "TensorFlow once; inert until a plan turns fusion on",
    )


def fusion_flags_problem() -> str | None:
    """Why auto-clustering would not be restricted to fusible ops on a CPU in this process, or None (it only
    reads: the environment and whether TensorFlow has read its flags)."""
    missed = changes.state(MISSED).get("missed")
    if missed:
        return missed
    flags = os.environ.get(TF_XLA_FLAGS, "").split()
    chosen = {_flag_name(flag): flag for flag in flags}
    if any(_flag_name(flag) not in chosen for flag in FUSION_FLAGS) and _tensorflow_read_flags():
        return _MISSED
    wrong = [flag for flag in FUSION_FLAGS if chosen.get(_flag_name(flag), flag) != flag]
    if wrong:
        return f"{TF_XLA_FLAGS} sets {', '.join(chosen[_flag_name(flag)] for flag in wrong)} (the user's choice wins)"
    return None


def _tensorflow_read_flags() -> bool:
    """Whether TensorFlow may already have parsed TF_XLA_FLAGS: its eager context has started, or it has listed
    the physical devices (`tf.config.list_physical_devices`: XLA's device factories read the flags); a session
    that ran before is not seen."""
    context = sys.modules.get("tensorflow.python.eager.context")
    if context is None:
        return False
    eager = getattr(context, "_context", None)
    if eager is None:
        return False
    return getattr(eager, "_context_handle", None) is not None or getattr(eager, "_physical_devices", None) is not None
