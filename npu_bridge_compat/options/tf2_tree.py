"""`npu_device.global_options()`: the TF2 adapter's option tree, over the one option table.

The tree's groups and names are the table's `tf2_name`s (options/table.py, TF2_GROUPS): every leaf is a row of the
table, so its kind, grammar, rules and planner are the TF1 adapter's. As in the adapter
(tf_adapter_2.x/python/npu_device/configs/option_base.py), an assignment is checked at once: an unknown name is a
ValueError listing the group's options (with the closest one), a value outside an option's list a ValueError, a
value of the wrong type a TypeError. Values the adapter only hands to its Graph Engine (paths, JSON files, sizes)
are checked with the rest of the configuration when `open()` reads the tree, as the Graph Engine does then.
"""

from __future__ import annotations

from typing import Any

from npu_bridge_compat.errors import (
    NpuCompatWarning,
    NpuConfigError,
    NpuOptionTypeError,
    NpuOptionValueError,
    closest_name,
    warn,
)
from npu_bridge_compat.options.grammars import Choice, GrammarError
from npu_bridge_compat.options.spec import OptionKind, OptionSpec
from npu_bridge_compat.options.table import OPTIONS, TF2_GROUPS

SOURCE = "npu_device.global_options()"
RECOMPUTE = "experimental.graph_memory_optimize_config.recompute"  # handed to the graph, as GraphMemoryOptimizeConfig
_RECOMPUTE_MODES = ("auto", "manual")

# The adapter's class name of each group: its error messages name them.
_GROUP_CLASSES = {
    "": "NpuConfig",
    "dump_config": "NpuDumpConfig",
    "profiling_config": "NpuProfilingConfig",
    "memory_config": "MemoryConfig",
    "aoe_config": "NpuAoeConfig",
    "experimental": "NpuExperimentalConfig",
    "experimental.multi_branches_config": "NpuMultiBranchesConfig",
    "experimental.logical_device_deploy_config": "LogicalDeviceDeployConfig",
    "experimental.model_deploy_config": "ModelDeployConfig",
    "experimental.graph_memory_optimize_config": "GraphMemoryOptimizeConfig",
}
_SPEC_OF_NAME = {spec.tf2_name: spec for spec in OPTIONS.values() if spec.tf2_name}


class _Reading:
    """Whether open() has read a tree, and whether an assignment after that was warned about (once: scripts set
    several in a row); one per tree, shared by its groups."""

    def __init__(self) -> None:
        self.read = False
        self.late_warned = False


def mark_read(tree: OptionGroup, read: bool = True) -> None:
    """open() has read `tree`'s options: later assignments cannot reach the device (`read=False`: the device it
    opened is let go, and the next open() reads the tree again)."""
    reading = object.__getattribute__(tree, "_reading")
    reading.read, reading.late_warned = read, False


class NoSuchOptionError(NpuConfigError, AttributeError):
    """Reading an option the tree does not have."""


class OptionValue:
    """One option of the tree, as the adapter's `OptionValue`: `default`, `optional` (its allowed values or None)
    and `value` (None while unset; True/False read back as "1"/"0", everything else as a string)."""

    def __init__(self, name: str, spec: OptionSpec | None) -> None:
        self.name, self.spec, self._value = name, spec, None

    @property
    def default(self) -> Any:
        return self.spec.default if self.spec is not None else None

    @property
    def optional(self) -> list | None:
        if self.spec is None:
            return list(_RECOMPUTE_MODES)
        if self.spec.kind is OptionKind.BOOL:
            return [True, False]
        return list(self.spec.check.values) if isinstance(self.spec.check, Choice) else None

    @property
    def value(self) -> str | None:
        if self._value is None:
            return None
        if isinstance(self._value, bool):
            return "1" if self._value else "0"
        return str(self._value)

    @value.setter
    def value(self, value: Any) -> None:
        self._value = None if value is None else _checked(self.name, self.spec, value)

    @property
    def typed(self) -> Any:
        """The assigned value in the table's type, or None while unset."""
        return self._value


def _checked(name: str, spec: OptionSpec | None, value: Any) -> Any:
    """`value` in the table's type, refused as the adapter refuses it at the assignment."""
    where = f"{SOURCE}.{name}"
    if spec is None:  # recompute
        if value not in _RECOMPUTE_MODES:
            raise NpuOptionValueError(f"{where}: '{value}' not in optional list {list(_RECOMPUTE_MODES)}")
        return value
    typed = _typed(where, spec, value)
    if isinstance(spec.check, Choice):
        try:
            spec.check.parse(typed)
        except GrammarError:
            raise NpuOptionValueError(f"{where}: '{value}' not in optional list {list(spec.check.values)}") from None
    return typed


def _typed(where: str, spec: OptionSpec, value: Any) -> Any:
    """The adapter takes Python values and hands their str() to its Graph Engine; the table's kind says what
    that string means, and so which Python values are the same setting."""
    if spec.kind is OptionKind.BOOL:
        if isinstance(value, bool):
            return value
        if value in ("1", "0", 1, 0):
            return str(value) == "1"
        raise NpuOptionTypeError(f"{where}: Expected bool, got {type(value).__name__} {value!r}")
    if spec.kind is OptionKind.INT:
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, int):
            return value
        if isinstance(value, str) and value.lstrip("-").isdigit():
            return int(value)
        raise NpuOptionTypeError(f"{where}: Expected int, got {type(value).__name__} {value!r}")
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value)
    raise NpuOptionTypeError(f"{where}: Expected str, got {type(value).__name__} {value!r}")


class OptionGroup:
    """A group of the tree (the adapter's `NpuBaseConfig`): its options and subgroups as attributes; assigning
    an option sets its value."""

    def __init__(self, path: str, reading: _Reading | None = None) -> None:
        reading = reading or _Reading()
        members: dict[str, OptionValue | OptionGroup] = {}
        prefix = f"{path}." if path else ""
        for group in TF2_GROUPS:
            if group.startswith(prefix) and group != path and "." not in group[len(prefix) :]:
                members[group[len(prefix) :]] = OptionGroup(group, reading)
        for name, spec in _SPEC_OF_NAME.items():
            if name.startswith(prefix) and "." not in name[len(prefix) :]:
                members[name[len(prefix) :]] = OptionValue(name, spec)
        if RECOMPUTE.startswith(prefix) and "." not in RECOMPUTE[len(prefix) :]:
            members[RECOMPUTE[len(prefix) :]] = OptionValue(RECOMPUTE, None)
        object.__setattr__(self, "_path", path)
        object.__setattr__(self, "_members", members)
        object.__setattr__(self, "_reading", reading)

    def __getattr__(self, name: str) -> Any:
        members = object.__getattribute__(self, "_members")
        if name in members:
            return members[name]
        raise NoSuchOptionError(self._unknown(name))

    def __setattr__(self, name: str, value: Any) -> None:
        member = self._members.get(name)
        if member is None:
            raise NpuOptionValueError(self._unknown(name))
        if isinstance(member, OptionGroup):
            raise NpuOptionValueError(f"{SOURCE}.{self._qualified(name)} is a group of options; set its options")
        member.value = value
        if self._reading.read and not self._reading.late_warned:
            self._reading.late_warned = True
            warn(
                f"{SOURCE}.{self._qualified(name)} was set after npu_device.open(), which reads the options once: "
                "as on the NPU, it and every option set after it have no effect. Set options before the first "
                "open() (a second open() returns the device the first one opened).",
                NpuCompatWarning,
            )

    def __dir__(self) -> list[str]:
        return sorted(self._members)

    def _qualified(self, name: str) -> str:
        return f"{self._path}.{name}" if self._path else name

    def _unknown(self, name: str) -> str:
        spec = OPTIONS.get(name)
        if spec is not None and spec.tf2_name is None:
            hint = f" ({name} is a key of the TF1 adapter, npu_bridge; npu_device has no such option.)"
        elif spec is not None and spec.tf2_name != self._qualified(name):
            hint = f" Did you mean '{spec.tf2_name}'?"
        else:
            close = closest_name(name, self._members)
            hint = f" Did you mean '{close}'?" if close else ""
        return f"{_GROUP_CLASSES[self._path]} has no option {name}.{hint}"

    def leaves(self) -> list[OptionValue]:
        """Every option of the group and its subgroups."""
        found: list[OptionValue] = []
        for member in self._members.values():
            found.extend(member.leaves() if isinstance(member, OptionGroup) else [member])
        return found

    def as_dict(self) -> dict[str, str]:
        """The options set, flattened to their leaf names with the adapter's string values."""
        return {leaf.name.rsplit(".", 1)[-1]: leaf.value for leaf in self.leaves() if leaf.value is not None}


def assigned(tree: OptionGroup) -> tuple[dict[str, Any], dict[str, str], str | None]:
    """The table values the script assigned, the dotted name of each, and the recompute mode."""
    values, names, recompute = {}, {}, None
    for leaf in tree.leaves():
        if leaf.typed is None:
            continue
        if leaf.spec is None:
            recompute = leaf.typed
        else:
            values[leaf.spec.key] = leaf.typed
            names[leaf.spec.key] = leaf.name
    return values, names, recompute
