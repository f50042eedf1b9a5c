"""The option translator's input side: the table, the grammars, the rules and the readers."""

from npu_bridge_compat.options.readers import (
    closest_option,
    npu_optimizer_entries,
    options_from_config_proto,
    options_from_kwargs,
)
from npu_bridge_compat.options.spec import Concern, Effect, HostAction, OptionKind, OptionSpec
from npu_bridge_compat.options.table import OPTIONS
from npu_bridge_compat.options.values import NpuOptions

__all__ = [
    "OPTIONS",
    "Concern",
    "Effect",
    "HostAction",
    "OptionKind",
    "NpuOptions",
    "OptionSpec",
    "closest_option",
    "npu_optimizer_entries",
    "options_from_config_proto",
    "options_from_kwargs",
]
