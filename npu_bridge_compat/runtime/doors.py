"""What a door declares it carries out, how a door plans, and the one step by which every door enters a plan.

A door (NPUEstimator, NPUSession, NPUCallback, NPURunConfig under a plain Estimator, npu_device) plans its options
with `plan_for_door`: XLA's fusion flags reserved where the options may fuse (before the host's devices are
listed, which makes TensorFlow read them), this host's facts, and what the plan leaves to a probe of this host
resolved (runtime/precision.py). It names the feature kinds it applies. Entering a plan logs its report once,
applies its process-wide part (runtime/process.py) and warns once per door and feature kind about each planned
feature the door does not carry out, so nothing is dropped silently.
It also keeps TensorFlow's messages from being printed twice (logs.py) and watches the forward-compatibility
horizons the program asks for (compat/batchnorm.py: batch norm changes only inside one before 2019-06-06).
"""

from __future__ import annotations

import dataclasses

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.compat.batchnorm import install_horizon_gate
from npu_bridge_compat.compat.xla import reserve_fusion_flags
from npu_bridge_compat.errors import NpuCompatWarning, warn
from npu_bridge_compat.logs import defer_tensorflow_handler, log_line
from npu_bridge_compat.plan import HostPlan, build_plan, log_once
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
    PrecisionChoice,
    ProcessSetting,
    ProfilerTrace,
    RewriteSetting,
    StepLoop,
    TensorDump,
    VisibleDevice,
)
from npu_bridge_compat.plan.platform import requested_graph_kernel
from npu_bridge_compat.runtime.precision import resolve_precision
from npu_bridge_compat.runtime.process import apply_environment, apply_process_settings

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
    measures_precision: bool = False  # its run-time units decide a MEASURED mixed precision per function

    def carries_out(self, feature) -> bool:
        return isinstance(feature, (ProcessSetting, *self.applies))


WARNED_DOORS = changes.ProcessState("the doors warned about features they do not carry out", Owner.PLAN_SETTINGS, set)
UNMEASURED_DOORS = changes.ProcessState(
    "the doors said to run a measured mixed precision unmeasured", Owner.PRECISION, set
)


def plan_for_door(options, config=None, recompute: str | None = None) -> HostPlan:
    """The plan a door applies, for this host: XLA's fusion flags reserved first where the options may fuse (the
    host's detection lists TensorFlow's devices, which makes it read them), and a PROBED mixed precision resolved
    by the probe of this host (cached once measured)."""
    if _may_fuse(options):
        reserve_fusion_flags()
    return resolve_precision(build_plan(options, config=config, recompute=recompute))


def _may_fuse(options) -> bool:
    """Whether a plan of `options` may turn graph-kernel fusion on (asked for by the options or the environment)."""
    if options.is_set("enable_graph_kernel"):
        return bool(options.enable_graph_kernel)
    return requested_graph_kernel() != "off"


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
    mixed = plan.mixed_precision
    if mixed is not None and mixed.choice is PrecisionChoice.MEASURED and not (door and door.measures_precision):
        name = door.name if door else "host_session_config"
        unmeasured = changes.state(UNMEASURED_DOORS)
        if name not in unmeasured:
            unmeasured.add(name)
            log_line(
                f"{name} runs no run-time units, so {mixed.dtype} mixed precision runs without the check of each "
                "function's first runs against float32; NPUSession and NPUEstimator make it"
            )
    if door is None:
        return
    dropped = unapplied(plan, door)
    key = (door.name, tuple(map(str, dropped)))
    warned = changes.state(WARNED_DOORS)
    if dropped and key not in warned:
        warned.add(key)
        many = len(dropped) > 1
        warn(
            f"{door.name} does not carry out {', '.join(map(str, dropped))}: the report lists "
            f"{'them' if many else 'it'} as planned, but {'they have' if many else 'it has'} no effect through "
            f"this door.{' ' + door.hint if door.hint else ''}",
            NpuCompatWarning,
        )
