"""Applying the process-wide part of a plan: environment variables and switches that TensorFlow reads.

Grappler reads its mixed-precision lists (and XLA its flags) from the environment each time it optimises a
graph, for the whole process. They are set here, in one place, and a second configuration that needs other
values in the same process is refused, since the first one's graphs would silently change. The switches (op
determinism, TF32) are settings TensorFlow reads and writes through its own API; graph-kernel fusion needs XLA's
process flags (compat/xla.py). Everything goes through the changes registry.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.compat.xla import reserve_fusion_flags
from npu_bridge_compat.errors import NpuOptionValueError
from npu_bridge_compat.plan.features import AMP_ENV_PREFIX, GraphKernelFusion, OpDeterminism, TensorFloat32

# Variables holding space-separated flags: ours are added to what the user and other owners set.
FLAG_VARIABLES = ("TF_XLA_FLAGS", "XLA_FLAGS")

OWNER = Owner.PLAN_ENVIRONMENT
_lock = threading.Lock()
# variable -> (value we set, source of the configuration, its change in the registry)
APPLIED = changes.ProcessState("the environment variables the plans set", OWNER, dict)


def apply_environment(plan) -> None:
    """Set the plan's environment variables; refuse values that contradict an earlier configuration's."""
    with _lock:
        applied = _forget_undone()
        _check_op_lists(plan, applied)
        for name, value in plan.environment.items():
            previous = applied.get(name)
            if previous and previous[0] != value:
                raise NpuOptionValueError(
                    f"{plan.options.source} needs {name}={value!r}, but {previous[1]} already set it to "
                    f"{previous[0]!r} in this process. TensorFlow reads it process-wide, so two configurations "
                    "with different values cannot be used in one process (restore_environment() undoes the first)."
                )
        for name, value in plan.environment.items():
            reason = f"read process-wide by TensorFlow; {plan.options.source} sets it"
            if name in FLAG_VARIABLES:
                change = changes.add_to_environment_list(name, value.split(), owner=OWNER, reason=reason)
            else:
                change = changes.set_environment(name, value, owner=OWNER, reason=reason)
            applied.setdefault(name, (value, plan.options.source, change))


def _forget_undone() -> dict[str, tuple[str, str, changes.Change]]:
    """The variables the plans set: those whose change was undone through the registry (`changes.undo`) no
    longer bind the process and are left out."""
    applied = changes.state(APPLIED)
    for name, entry in list(applied.items()):
        if OWNER not in entry[2].owners:
            del applied[name]
    return applied


def _check_op_lists(plan, applied: dict) -> None:
    """The mixed-precision op lists are one setting: a plan that runs a mixed-precision pass must find either
    no lists set or exactly its own."""
    wanted = {n: v for n, v in plan.environment.items() if n.startswith(AMP_ENV_PREFIX)}
    current = {n: entry[0] for n, entry in applied.items() if n.startswith(AMP_ENV_PREFIX)}
    if current and (wanted or plan.mixed_precision) and wanted != current:
        source = next(entry[1] for n, entry in applied.items() if n.startswith(AMP_ENV_PREFIX))
        raise NpuOptionValueError(
            f"{plan.options.source} needs the mixed-precision op lists {wanted or 'unchanged'}, but {source} "
            f"already set {current} in this process. Grappler reads them process-wide, so two configurations "
            "with different modify_mixlist files cannot be used in one process (restore_environment() undoes "
            "the first)."
        )


def restore_environment(names=None) -> None:
    """Give the variables set by `apply_environment` (all, or `names`) their earlier values back."""
    with _lock:
        applied = _forget_undone()
        chosen = [name for name in (list(applied) if names is None else names) if name in applied]
        changes.undo(owner=OWNER, changes=[applied.pop(name)[2] for name in chosen])


@contextlib.contextmanager
def applied_environment(plan) -> Iterator[None]:
    """The plan's environment for the duration of a block (a Keras fit), restored afterwards."""
    fresh = [name for name in plan.environment if name not in changes.state(APPLIED)]
    apply_environment(plan)
    try:
        yield
    finally:
        restore_environment(fresh)


def apply_process_settings(plan) -> None:
    """Process-wide TensorFlow switches a plan asks for (op determinism, TF32 matmuls) and XLA's fusion flags."""
    import tensorflow as tf

    from npu_bridge_compat.compat.config import op_determinism_enabled, set_op_determinism

    if plan.feature(OpDeterminism) is not None:
        changes.change_setting(
            "TensorFlow op determinism",
            True,
            read=op_determinism_enabled,
            write=set_op_determinism,
            owner=Owner.PLAN_SETTINGS,
            reason="deterministic=1: every op deterministic, process-wide",
        )
    tf32 = plan.feature(TensorFloat32)
    if tf32 is not None:
        changes.change_setting(
            "TensorFlow TF32 execution",
            tf32.enabled,
            read=tf.config.experimental.tensor_float_32_execution_enabled,
            write=tf.config.experimental.enable_tensor_float_32_execution,
            owner=Owner.PLAN_SETTINGS,
            reason=f"TF32 matmuls and convolutions {'allowed' if tf32.enabled else 'forbidden'}, process-wide",
        )
    if plan.feature(GraphKernelFusion) is not None:
        reserve_fusion_flags()  # no-op when a door reserved them before detecting the host (runtime/doors.py)
