"""What a door declares it carries out, and the one step by which every door enters a plan.

A door (NPUEstimator, NPUSession, NPUCallback, NPURunConfig under a plain Estimator) names the feature kinds it
applies. Entering a plan logs its report once, sets its environment and process-wide switches, and warns once per
door and feature kind about each planned feature the door does not carry out, so nothing is dropped silently.
It also keeps TensorFlow's messages from being printed twice (logs.py) and watches the forward-compatibility
horizons the program asks for (compat/batchnorm.py: batch norm changes only inside one before 2019-06-06).
"""

from __future__ import annotations

import dataclasses

from npu_bridge_compat.compat.batchnorm import install_horizon_gate
from npu_bridge_compat.errors import NpuCompatWarning, warn
from npu_bridge_compat.logs import defer_tensorflow_handler
from npu_bridge_compat.plan import log_once
from npu_bridge_compat.plan.apply import apply_environment, apply_process_settings
from npu_bridge_compat.plan.features import (
    BatchNormWorkaround,
    GpuMemoryLimit,
    GraphKernelFusion,
    GraphOptimizerLevel,
    HostRegions,
    InterOpThreads,
    IntraOpThreads,
    NumericChecks,
    OperationTimeout,
    ProcessSetting,
    ProfilerTrace,
    RewriteSetting,
    StepLoop,
    TensorDump,
    VisibleDevice,
)

RUN_UNITS = (StepLoop, BatchNormWorkaround, HostRegions, ProfilerTrace, TensorDump, NumericChecks)
SESSION_SETTINGS = (
    RewriteSetting,
    GpuMemoryLimit,
    VisibleDevice,
    InterOpThreads,
    IntraOpThreads,
    OperationTimeout,
    GraphOptimizerLevel,
    GraphKernelFusion,  # its config part; NPUSession and NPUEstimator also report what fused (units.py)
)


@dataclasses.dataclass(frozen=True)
class Door:
    name: str
    applies: tuple[type, ...]  # the feature kinds (or base kinds) it carries out
    hint: str = ""  # what to do about the others

    def carries_out(self, feature) -> bool:
        return isinstance(feature, (ProcessSetting, *self.applies))


_warned: set[tuple[str, tuple[str, ...]]] = set()


def unapplied(plan, door: Door) -> list:
    """The planned features `door` does not carry out."""
    return [feature for feature in plan.features if not door.carries_out(feature)]


def narrowed(plan, kinds: tuple[type, ...]):
    """The plan with only the features of `kinds` (what one part of a door carries out, such as the Keras calls
    of the TF2 door, whose process-wide part the door applied already)."""
    return dataclasses.replace(plan, features=tuple(f for f in plan.features if isinstance(f, kinds)))


def enter_plan(plan, door: Door | None = None, process: bool = True) -> None:
    """Log the plan's report once, apply its process-wide part (its environment and switches; `process=False`:
    the door applies them itself for the time it trains) and, for a door, warn once about what it does not carry
    out (once per door and set of features: the same configuration again is not warned about twice). From then
    on a script's own forward_compatibility_horizon(2019, 5, 1) gives the pre-V3 batch norm (compat.batchnorm), as
    the plan's own mixed compute does; without such a horizon batch norm stays TensorFlow's."""
    defer_tensorflow_handler()
    log_once(plan.report)
    install_horizon_gate()
    if process:
        apply_environment(plan)
        apply_process_settings(plan)
    if door is None:
        return
    dropped = unapplied(plan, door)
    key = (door.name, tuple(map(str, dropped)))
    if dropped and key not in _warned:
        _warned.add(key)
        many = len(dropped) > 1
        warn(
            f"{door.name} does not carry out {', '.join(map(str, dropped))}: the report lists "
            f"{'them' if many else 'it'} as planned, but {'they have' if many else 'it has'} no effect through "
            f"this door.{' ' + door.hint if door.hint else ''}",
            NpuCompatWarning,
        )
