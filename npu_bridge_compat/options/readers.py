"""Readers: every door's input becomes the same validated `NpuOptions`.

- `options_from_config_proto`: the `NpuOptimizer` entries of a `ConfigProto` (session scripts, Keras sessions,
  `NPURunConfig(session_config=...)`); later entries win key by key, as in the adapter.
- `options_from_kwargs`: Python keyword values (what `NPURunConfig` and `NPUCallback` pass); None means unset.

Both check kinds, then each option's grammar, then the cross-option rules. A key the option table lacks is
warned about with the closest known key and otherwise ignored: it is not validated and has no host effect.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from npu_bridge_compat.errors import (
    IgnoredOptionWarning,
    NpuOptionTypeError,
    NpuOptionValueError,
    UnknownOptionWarning,
    closest_name,
    warn,
)
from npu_bridge_compat.options.grammars import ByteSize, GrammarError
from npu_bridge_compat.options.rules import check_rules
from npu_bridge_compat.options.spec import OptionKind, OptionSpec
from npu_bridge_compat.options.table import OPTIONS
from npu_bridge_compat.options.values import NpuOptions

NPU_OPTIMIZER = "NpuOptimizer"
_ATTR_FIELD_TYPES = {
    "b": "bool",
    "i": "int",
    "s": "bytes",
    "f": "float",
    "list": "list",
    "type": "DataType",
    "shape": "TensorShape",
    "tensor": "Tensor",
    "func": "function",
    "placeholder": "placeholder",
}


def closest_option(key: str) -> str | None:
    """The known option name nearest to `key` (for typo suggestions)."""
    return closest_name(key, OPTIONS)


def _warn_unknown(key: str, source: str) -> None:
    suggestion = closest_option(key)
    hint = f" Did you mean '{suggestion}'?" if suggestion else ""
    warn(
        f"Unknown NPU option '{key}' ({source}): npu_bridge_compat's option table does not have it, so it is "
        f"not validated and has no effect on this host.{hint}",
        UnknownOptionWarning,
    )


def _type_name(value: Any) -> str:
    return type(value).__name__


def typed_value(spec: OptionSpec, value: Any, source: str) -> Any:
    """Check and normalise a keyword value to the option's Python type."""
    if spec.kind is OptionKind.BOOL and isinstance(value, bool):
        return value
    if spec.kind is OptionKind.INT and isinstance(value, int) and not isinstance(value, bool):
        return value
    if spec.kind is OptionKind.STRING:
        if isinstance(value, str):
            return value
        if isinstance(value, bytes):
            return _decode(spec.key, value, source)
        if isinstance(spec.check, ByteSize) and isinstance(value, int) and not isinstance(value, bool):
            return str(value)  # NPURunConfig passes memory sizes through str() as well
    raise NpuOptionTypeError(
        f'NPU option "{spec.key}" ({source}) must be {spec.python_type.__name__}, got {_type_name(value)} {value!r}'
    )


def _decode(key: str, value: bytes, source: str) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise NpuOptionValueError(f'NPU option "{key}" ({source}) is not valid UTF-8 text: {value!r}') from None


def _attr_value(spec: OptionSpec, attr, source: str) -> Any:
    """Read an `AttrValue` the way the adapter does, but refuse a value put in the wrong field."""
    field = attr.WhichOneof("value")
    if field is None:  # an entry touched but never assigned reads as the field's zero value
        return spec.python_type()
    if field != spec.kind.value:
        raise NpuOptionTypeError(
            f'NPU option "{spec.key}" ({source}) is read from the AttrValue field .{spec.kind.value} '
            f"({_ATTR_FIELD_TYPES[spec.kind.value]}), but the value was given in .{field} "
            f"({_ATTR_FIELD_TYPES.get(field, field)}): {getattr(attr, field)!r}. "
            f'Write custom_op.parameter_map["{spec.key}"].{spec.kind.value} = ...'
        )
    value = getattr(attr, field)
    return _decode(spec.key, value, source) if spec.kind is OptionKind.STRING else value


def parsed_value(spec: OptionSpec, value: Any, active: bool, source: str, name: str | None = None) -> Any:
    """Run the option's grammar; a malformed value of an option the adapter does not read only warns. `name`: the
    option's name as the configuration wrote it (its key by default)."""
    name = name or spec.key
    try:
        return spec.check.parse(value)
    except GrammarError as error:
        message = (
            f'NPU option "{name}" ({source}) has an invalid value {value!r}: {error}. Allowed: {spec.check.describe()}.'
        )
        if active:
            raise NpuOptionValueError(message) from None
        warn(
            f"{message} It is ignored, as on the NPU, because {' / '.join(spec.requires)} is off.",
            IgnoredOptionWarning,
        )
        return None


def build_options(values: Mapping[str, Any], source: str, names: Mapping[str, str] | None = None) -> NpuOptions:
    """Validate already typed `values` (known keys only) into an `NpuOptions`; `names` maps keys to the names the
    configuration used for them, where they differ."""
    names = MappingProxyType(dict(names or {}))
    options = NpuOptions(**values, explicit=frozenset(values), source=source, names=names)
    parsed = {}
    for key in values:
        spec = OPTIONS[key]
        if spec.check is not None:
            result = parsed_value(spec, values[key], options.is_active(key), source, options.name_of(key))
            if result is not None:
                parsed[key] = result
    options = NpuOptions(
        **values, explicit=frozenset(values), parsed=MappingProxyType(parsed), source=source, names=names
    )
    check_rules(options)
    return options


def _known(items: Iterable[tuple[str, Any]], source: str) -> Iterable[tuple[OptionSpec, Any]]:
    for key, value in items:
        if not isinstance(key, str):
            raise NpuOptionTypeError(f"NPU option names must be strings ({source}), got {_type_name(key)} {key!r}")
        if key in OPTIONS:
            yield OPTIONS[key], value
        else:
            _warn_unknown(key, source)


def options_from_kwargs(
    values: Mapping[str, Any] | None = None, /, *, source: str = "keyword arguments", **kwargs: Any
) -> NpuOptions:
    """Options from Python values, e.g. `options_from_kwargs(iterations_per_loop=10, precision_mode="...")`.

    A value of None means "not set", as NPURunConfig's defaults do.
    """
    merged = {**(values or {}), **kwargs}
    typed = {
        spec.key: typed_value(spec, value, source)
        for spec, value in _known(merged.items(), source)
        if value is not None
    }
    return build_options(typed, source)


def npu_optimizer_entries(config) -> list:
    """The `custom_optimizers` entries of `config` named NpuOptimizer, in order."""
    return [entry for entry in config.graph_options.rewrite_options.custom_optimizers if entry.name == NPU_OPTIMIZER]


def config_proto_values(config, *, source: str = "ConfigProto") -> dict[str, Any]:
    """The typed values of every `NpuOptimizer` entry (later entries win), not yet validated together."""
    typed: dict[str, Any] = {}
    for entry in npu_optimizer_entries(config):
        for spec, attr in _known(sorted(entry.parameter_map.items()), source):
            typed[spec.key] = _attr_value(spec, attr, source)
    return typed


def options_from_config_proto(config, *, source: str = "ConfigProto") -> NpuOptions:
    """Options from every `NpuOptimizer` entry of a `tf.compat.v1.ConfigProto` (later entries win)."""
    return build_options(config_proto_values(config, source=source), source)
