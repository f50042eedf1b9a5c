"""The host plan: what to do on this host for a validated `NpuOptions`, as plain data, with its report.

Each concern module contributes ConfigProto edits, environment settings, runtime features and report lines;
`build_plan` merges them, and fills in the report from the option table for every other option that was set.
The doors apply a plan; nothing here changes the process.
"""

from __future__ import annotations

import dataclasses
from types import MappingProxyType
from typing import Any, Mapping

from npu_bridge_compat.host.compilation import plan_compilation
from npu_bridge_compat.host.contribution import Contribution
from npu_bridge_compat.host.debugging import plan_debugging
from npu_bridge_compat.host.features import Feature, GpuMemoryLimit
from npu_bridge_compat.host.placement import plan_placement
from npu_bridge_compat.host.platform import HostFacts, detect_host
from npu_bridge_compat.host.precision import plan_precision
from npu_bridge_compat.host.report import IGNORED, Report, ReportEntry
from npu_bridge_compat.host.runtime import plan_runtime
from npu_bridge_compat.options.readers import NPU_OPTIMIZER, npu_optimizer_entries
from npu_bridge_compat.options.spec import Effect
from npu_bridge_compat.options.table import OPTIONS

PLANNERS = (plan_placement, plan_precision, plan_debugging, plan_runtime, plan_compilation)


@dataclasses.dataclass(frozen=True)
class HostPlan:
    options: Any  # NpuOptions
    host: HostFacts
    config_edits: Mapping[str, Any]  # dotted ConfigProto field -> value; enum values by name
    environment: Mapping[str, str]
    features: tuple[Feature, ...]
    report: Report

    def __deepcopy__(self, memo: dict) -> "HostPlan":
        return self  # immutable; RunConfig.replace() deep-copies its attributes

    @property
    def uses_mixed_precision(self) -> bool:
        """Whether a grappler mixed-precision pass runs (keep_dtype_scope then matters)."""
        return any(path.rsplit(".", 1)[-1].startswith("auto_mixed_precision") and value == "ON"
                   for path, value in self.config_edits.items())

    def feature(self, kind: type) -> Any:
        """The planned feature of that type, or None."""
        return next((f for f in self.features if isinstance(f, kind)), None)

    def host_config(self, config=None):
        """A copy of `config` for host TensorFlow: no NpuOptimizer entry, no explicit grappler optimizer list
        (on stock TF it replaces the default pipeline and disables mixed precision), plus the plan's edits."""
        from tensorflow.core.protobuf import config_pb2

        result = config_pb2.ConfigProto()
        if config is not None:
            result.CopyFrom(config)
        rewrite = result.graph_options.rewrite_options
        kept = [entry for entry in rewrite.custom_optimizers if entry.name != NPU_OPTIMIZER]
        del rewrite.custom_optimizers[:]
        rewrite.custom_optimizers.extend(kept)
        del rewrite.optimizers[:]
        for path, value in self.config_edits.items():
            _set_field(result, path, value)
        memory = self.feature(GpuMemoryLimit)
        if memory is not None:  # one virtual GPU of that size: TensorFlow's memory cap for a session
            result.gpu_options.experimental.ClearField("virtual_devices")
            result.gpu_options.experimental.virtual_devices.add().memory_limit_mb.append(memory.megabytes)
        return result


def _set_field(message, dotted: str, value: Any) -> None:
    *parents, name = dotted.split(".")
    for parent in parents:
        message = getattr(message, parent)
    field = message.DESCRIPTOR.fields_by_name[name]
    if field.enum_type is not None and isinstance(value, str):
        value = field.enum_type.values_by_name[value].number
    setattr(message, name, value)


def build_plan(options, host: HostFacts | None = None, config=None) -> HostPlan:
    """Plan `options` for `host` (this host by default). `config`, the ConfigProto the options came from, lets
    the report say what the host copy removes from it."""
    host = host or detect_host()
    merged = Contribution()
    for planner in PLANNERS:
        part = planner(options, host)
        merged.config.update(part.config)
        merged.environment.update(part.environment)
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
    )
    return HostPlan(
        options=options,
        host=host,
        config_edits=MappingProxyType(dict(merged.config)),
        environment=MappingProxyType(dict(merged.environment)),
        features=tuple(merged.features),
        report=report,
    )


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
        notes.append(f"{len(entries)} custom optimizer entr{'y' if len(entries) == 1 else 'ies'} named "
                     f"{NPU_OPTIMIZER} removed from the host ConfigProto (stock TensorFlow cannot load it)")
    optimizers = list(config.graph_options.rewrite_options.optimizers)
    if optimizers:
        notes.append(f"explicit grappler optimizer list {optimizers} removed: on stock TensorFlow it replaces "
                     "the default pipeline (and so disables mixed precision)")
    return notes
