"""`NpuOptions`: the one frozen, typed value every door produces.

Its fields are generated from the option table (one field per option, typed by the option's kind, defaulting to
the adapter's value for an absent key), so adding an option to the table is all it takes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from npu_bridge_compat.options.table import OPTIONS


class _NpuOptionsMethods:
    """Behaviour shared by the generated `NpuOptions` dataclass."""

    explicit: frozenset
    parsed: Mapping[str, Any]
    source: str
    names: Mapping[str, str]

    def name_of(self, key: str) -> str:
        """The option's name as the configuration wrote it."""
        return self.names.get(key, key)

    def is_set(self, key: str) -> bool:
        """Whether the configuration named `key` (the adapter matches by presence, defaults included)."""
        return key in self.explicit

    def is_active(self, key: str) -> bool:
        """Whether the adapter reads `key`: it has no prerequisite, or one of them is on."""
        requires = OPTIONS[key].requires
        return not requires or any(getattr(self, other) for other in requires)

    def set_options(self) -> dict[str, Any]:
        """The options the configuration named, in table order, with their values."""
        return {key: getattr(self, key) for key in OPTIONS if key in self.explicit}

    def parsed_value(self, key: str) -> Any:
        """The value as its grammar parsed it (e.g. dump_step as step ranges), or the plain value."""
        return self.parsed.get(key, getattr(self, key))

    def __deepcopy__(self, memo: dict) -> _NpuOptionsMethods:
        return self  # immutable; RunConfig.replace() deep-copies its attributes

    def __repr__(self) -> str:
        items = ", ".join(f"{key}={value!r}" for key, value in self.set_options().items())
        return f"NpuOptions({items})"


def _field(spec) -> tuple[str, Any, dataclasses.Field]:
    annotation = spec.python_type if spec.default is not None else spec.python_type | None
    return spec.key, annotation, dataclasses.field(default=spec.default)


NpuOptions = dataclasses.make_dataclass(
    "NpuOptions",
    [_field(spec) for spec in OPTIONS.values()]
    + [
        ("explicit", frozenset, dataclasses.field(default=frozenset())),
        ("parsed", Mapping, dataclasses.field(default_factory=lambda: MappingProxyType({}), compare=False, hash=False)),
        ("source", str, dataclasses.field(default="defaults", compare=False, hash=False)),
        # option key -> the name the script used, where it is not the key (npu_device's dump_config.enable_dump)
        ("names", Mapping, dataclasses.field(default_factory=lambda: MappingProxyType({}), compare=False, hash=False)),
    ],
    bases=(_NpuOptionsMethods,),
    frozen=True,
    repr=False,
)
NpuOptions.__module__ = __name__
NpuOptions.__doc__ = """A validated NPU configuration: one attribute per option of the table.

Build it with `options_from_kwargs` or `options_from_config_proto`; `explicit` holds the keys the configuration
named (the adapter treats a present key differently from an absent one), `parsed` the grammar-parsed values.
"""
