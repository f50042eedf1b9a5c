"""The host plan: what to do on this host for a validated `NpuOptions`, as typed features, with its report.

Each concern module contributes features (plan/features.py) and report lines; `build_plan` merges them, and
fills in the report from the option table for every other option that was set. A plan is data: the doors apply it
through the run-time core (runtime/doors.py, runtime/process.py), which also resolves what the plan leaves to
measurement (runtime/precision.py); nothing here changes the process.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from npu_bridge_compat.options.readers import NPU_OPTIMIZER, npu_optimizer_entries
from npu_bridge_compat.options.spec import Effect
from npu_bridge_compat.options.table import OPTIONS
from npu_bridge_compat.plan.compilation import plan_compilation
from npu_bridge_compat.plan.contribution import Contribution
from npu_bridge_compat.plan.debugging import plan_debugging
from npu_bridge_compat.plan.features import (
    Feature,
    GraphKernelFusion,
    MixedPrecision,
    PrecisionChoice,
    RewriteSetting,
    SessionSetting,
    StepLoop,
)
from npu_bridge_compat.plan.placement import plan_placement
from npu_bridge_compat.plan.platform import HostFacts, PlanEnvironment, detect_host, plan_environment
from npu_bridge_compat.plan.precision import plan_precision
from npu_bridge_compat.plan.report import IGNORED, Report, ReportEntry
from npu_bridge_compat.plan.settings import plan_recompute, plan_settings


@dataclasses.dataclass(frozen=True)
class HostPlan:
    options: Any  # NpuOptions
    host: HostFacts
    features: tuple[Feature, ...]
    report: Report

    def __deepcopy__(self, memo: dict) -> HostPlan:
        return self  # immutable; RunConfig.replace() deep-copies its attributes

    def feature(self, kind: type) -> Any:
        """The planned feature of that type, or None."""
        return next((f for f in self.features if isinstance(f, kind)), None)

    def features_of(self, kind: type) -> tuple:
        """The planned features of that type (or base type)."""
        return tuple(f for f in self.features if isinstance(f, kind))

    @property
    def steps_per_run(self) -> int:
        """Training steps per session run or train-function call (the StepLoop), 1 without a loop."""
        loop = self.feature(StepLoop)
        return loop.iterations if loop else 1

    def with_entry(self, key: str, effect: str, how: str, notes: tuple[str, ...] = ()) -> HostPlan:
        """The same plan with the report's entry for `key` saying `how` (what the run-time core resolved)."""
        entries = tuple(
            dataclasses.replace(entry, effect=effect, how=how) if entry.key == key else entry
            for entry in self.report.entries
        )
        report = dataclasses.replace(self.report, entries=entries, notes=self.report.notes + notes)
        return dataclasses.replace(self, report=report)

    @property
    def mixed_precision(self) -> MixedPrecision | None:
        """The grappler mixed-precision pass that runs, if any (keep_dtype_scope then matters)."""
        return self.feature(MixedPrecision)

    @property
    def environment(self) -> Mapping[str, str]:
        """The environment variables the features need."""
        merged: dict[str, str] = {}
        for feature in self.features:
            merged.update(feature.environment())
        return MappingProxyType(merged)

    def rewrite_options(self, rewrite_options) -> None:
        """Apply the grappler rewrite settings to a RewriterConfig (the part of the plan Keras' functions take)."""
        for feature in self.features_of(RewriteSetting):
            feature.rewrite(rewrite_options)

    def configure_function_calls(self, config) -> None:
        """Apply the settings a function call's ConfigProto carries (what Keras' traced steps and a TF2 program's
        functions take): the grappler rewrite settings and graph-kernel fusion (XLA auto-clustering). A mixed
        precision that each function's runs decide (MEASURED) stays off here: the timed functions' calls turn it on
        where it pays (runtime/forms.py), so one that keeps float32 runs with these settings as they are."""
        self.rewrite_options(config.graph_options.rewrite_options)
        mixed = self.mixed_precision
        if mixed is not None and mixed.choice is PrecisionChoice.MEASURED:
            mixed.rewrite_form(config.graph_options.rewrite_options, reduced=False)
        fusion = self.feature(GraphKernelFusion)
        if fusion is not None:
            fusion.apply_to_function_calls(config)

    def host_config(self, config=None):
        """A copy of `config` for host TensorFlow: no NpuOptimizer entry, no explicit grappler optimizer list
        (on stock TF it replaces the default pipeline and disables mixed precision), plus the plan's settings."""
        from tensorflow.core.protobuf import config_pb2

        result = config_pb2.ConfigProto()
        if config is not None:
            result.CopyFrom(config)
        rewrite = result.graph_options.rewrite_options
        kept = [entry for entry in rewrite.custom_optimizers if entry.name != NPU_OPTIMIZER]
        del rewrite.custom_optimizers[:]
        rewrite.custom_optimizers.extend(kept)
        del rewrite.optimizers[:]
        for feature in self.features_of(SessionSetting):
            feature.apply_to(result)
        return result


def build_plan(
    options,
    host: HostFacts | None = None,
    config=None,
    recompute: str | None = None,
    environment: PlanEnvironment | None = None,
) -> HostPlan:
    """Plan `options` for `host` in `environment`; given neither, this host's facts (detected: that lists
    TensorFlow's devices) and this process's environment (plan_environment). Given both, it reads nothing of the
    process. `config`, the ConfigProto the options came from, lets the report say what the host copy removes from
    it. `recompute` is GraphMemoryOptimizeConfig's mode, which the adapter hands the graph rather than the session.
    Changes nothing in the process."""
    if host is None:
        host = detect_host()
    if environment is None:
        environment = plan_environment()
    parts = (
        plan_placement(options, host, environment),
        plan_precision(options, host),
        plan_debugging(options, environment.working_directory),
        plan_settings(options, host),
        plan_compilation(options, host, environment.fusion_flags_problem),
        plan_recompute(recompute),
    )
    merged = Contribution()
    for part in parts:
        merged.features.extend(part.features)
        merged.entries.update(part.entries)
        merged.notes.extend(part.notes)
    if config is not None:
        merged.notes.extend(_config_notes(config))
    report = Report(
        source=options.source,
        host=host.describe(),
        entries=tuple(_entry(options, key, merged) for key in OPTIONS if options.is_set(key)),
        notes=tuple(merged.notes),
        names=options.names,
    )
    return HostPlan(options=options, host=host, features=tuple(merged.features), report=report)


def _entry(options, key: str, merged: Contribution) -> ReportEntry:
    spec = OPTIONS[key]
    value = getattr(options, key)
    if not options.is_active(key):
        how = f"{' / '.join(spec.requires)} is off, so the adapter does not read it"
        return ReportEntry(key, value, spec.concern, IGNORED, how)
    if key in merged.entries:
        effect, how = merged.entries[key]
    elif value == spec.default and spec.host.effect in (Effect.TRANSLATED, Effect.APPROXIMATED):
        effect, how = Effect.NOT_NEEDED, "the adapter's default: nothing to change on the host"
    else:
        effect, how = spec.host.effect, spec.host.how
    if spec.deprecated:
        how = f"{how} [{spec.deprecated}]"
    return ReportEntry(key, value, spec.concern, effect.value, how)


def _config_notes(config) -> list[str]:
    notes = []
    entries = npu_optimizer_entries(config)
    if entries:
        notes.append(
            f"{len(entries)} custom optimizer entr{'y' if len(entries) == 1 else 'ies'} named "
            f"{NPU_OPTIMIZER} removed from the host ConfigProto (stock TensorFlow cannot load it)"
        )
    optimizers = list(config.graph_options.rewrite_options.optimizers)
    if optimizers:
        notes.append(
            f"explicit grappler optimizer list {optimizers} removed: on stock TensorFlow it replaces "
            "the default pipeline (and so disables mixed precision)"
        )
    return notes
