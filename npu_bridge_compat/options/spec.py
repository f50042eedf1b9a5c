"""The vocabulary of the option table: kinds, concerns, host effects and the per-option spec."""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

from npu_bridge_compat.options.grammars import Check


class OptionKind(str, enum.Enum):
    """The `AttrValue` field an option is read from, and the Python type it becomes."""

    BOOL = "b"
    INT = "i"
    STRING = "s"

    @property
    def python_type(self) -> type:
        return {OptionKind.BOOL: bool, OptionKind.INT: int, OptionKind.STRING: str}[self]


class Concern(str, enum.Enum):
    """What part of training an option is about; the host plan is built per concern."""

    PLACEMENT = "placement"
    LOOP = "loop"
    DATA = "data"
    PRECISION = "precision"
    MEMORY = "memory"
    DUMP = "dump"
    DEBUG = "debug"
    PROFILING = "profiling"
    DYNAMIC_SHAPE = "dynamic shape"
    TUNING = "tuning"
    COMPILE = "compile"
    DISTRIBUTED = "distributed"
    RUNTIME = "runtime"
    EXPERIMENTAL = "experimental"


class Effect(str, enum.Enum):
    """What an option does on a host."""

    TRANSLATED = "translated"
    APPROXIMATED = "approximated"
    NOT_NEEDED = "not needed on a host"
    NO_EQUIVALENT = "no host equivalent"


@dataclasses.dataclass(frozen=True)
class HostAction:
    effect: Effect
    how: str  # what it becomes on the host, or why it has no host meaning


def translated(how: str) -> HostAction:
    return HostAction(Effect.TRANSLATED, how)


def approximated(how: str) -> HostAction:
    return HostAction(Effect.APPROXIMATED, how)


def not_needed(why: str) -> HostAction:
    return HostAction(Effect.NOT_NEEDED, why)


def no_equivalent(why: str) -> HostAction:
    return HostAction(Effect.NO_EQUIVALENT, why)


@dataclasses.dataclass(frozen=True)
class OptionSpec:
    """Everything known about one NPU session option.

    `requires` names options of which at least one must be on (truthy) for the adapter to read this one; while
    none is, a set value has no effect, and a malformed one is only warned about, as the NPU ignores it too.
    `host_extension` marks the few keys only npu_bridge_compat reads (the adapter has no such key).
    """

    key: str
    kind: OptionKind
    default: Any  # the adapter's value when the key is absent; None: left to the NPU software
    concern: Concern
    host: HostAction
    doc: str
    check: Check | None = None
    requires: tuple[str, ...] = ()
    deprecated: str | None = None  # why, and what replaces it
    tf2_name: str | None = None  # its dotted name in the TF2 adapter's npu_device.global_options(), if it has one
    tf1: bool = True  # whether the TF1 adapter (npu_bridge) reads it; False: a key of the TF2 adapter only
    # A host extension: a key the adapter does not have (an NPU does this by itself), read by every door here.
    host_extension: bool = False

    @property
    def python_type(self) -> type:
        return self.kind.python_type
