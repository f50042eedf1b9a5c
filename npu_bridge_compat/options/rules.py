"""Cross-option rules of the adapter (options-spec §1i), checked on every configuration before anything runs.

Where the adapter fails (a Python error, a session error or a process abort) the rule raises; where its
documentation only advises (or it only logs a warning), the rule warns. Messages start with the adapter's own
wording, so an Ascend user recognises them, and add the values given.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from npu_bridge_compat.errors import ConfigurationAdvice, IgnoredOptionWarning, NpuOptionValueError, warn
from npu_bridge_compat.options.grammars import GIB
from npu_bridge_compat.options.precision_modes import MIXED_PRECISION_MODES, MIXED_PRECISION_MODES_V2

GRAPH_MEMORY_DEFAULT = 26 * GIB  # what the Graph Engine assumes when the key is absent
VARIABLE_MEMORY_DEFAULT = 5 * GIB
ASCEND_910_MEMORY = 31 * GIB
GEAR_KEYS = ("input_shape", "dynamic_dims", "dynamic_node_type")  # gear-mode dynamic shapes, set together

Rule = Callable[[Any], None]  # takes an NpuOptions
RULES: list[Rule] = []


def rule(function: Rule) -> Rule:
    RULES.append(function)
    return function


def check_rules(options) -> None:
    """Run every cross-option rule on `options`; raise on the first violation."""
    for check in RULES:
        check(options)


@rule
def mixed_compute_runs_one_step(options) -> None:
    if options.mix_compile_mode and options.iterations_per_loop != 1:
        raise NpuOptionValueError(
            '"iterations_per_loop" must be 1 with "mix_compile_mode" is True '
            f"(got iterations_per_loop={options.iterations_per_loop}). In mixed compute some ops run on the "
            "host between device steps, so a session run cannot loop on the device."
        )


@rule
def in_out_pair_needs_mixed_compute(options) -> None:
    if options.in_out_pair and not options.mix_compile_mode:
        raise NpuOptionValueError(
            "mix_compile_mode must be True when use in_out_pair. "
            f"(got in_out_pair={options.in_out_pair!r}, mix_compile_mode=False)"
        )


@rule
def dumps_need_a_path(options) -> None:
    if (options.enable_dump or options.enable_dump_debug) and not options.dump_path:
        switch = "enable_dump" if options.enable_dump else "enable_dump_debug"
        raise NpuOptionValueError(
            f"if use dump function, dump_path must be set. ({switch}=True but dump_path is not set; "
            "give an existing, writable directory)"
        )


@rule
def dump_and_overflow_detection_apart(options) -> None:
    if options.enable_dump and options.enable_dump_debug:
        warn(
            "enable_dump and enable_dump_debug are both True; the Ascend documentation says to use one at a "
            "time. Both are honoured here.",
            ConfigurationAdvice,
        )


@rule
def one_precision_mode_key(options) -> None:
    if options.is_set("precision_mode") and options.is_set("precision_mode_v2"):
        raise NpuOptionValueError(
            "'precision_mode' and 'precision_mode_v2' can not be assigned at the same time. "
            f"(got precision_mode={options.precision_mode!r}, precision_mode_v2={options.precision_mode_v2!r}; "
            "keep one of them)"
        )


@rule
def mixlist_needs_mixed_precision(options) -> None:
    if not options.modify_mixlist:
        return
    if options.is_set("precision_mode"):
        if options.precision_mode not in MIXED_PRECISION_MODES:
            raise NpuOptionValueError(
                "modify_mixlist is assigned, please ensure that precision_mode is assigned to "
                f"{' or '.join(repr(m) for m in MIXED_PRECISION_MODES)} "
                f"(got precision_mode={options.precision_mode!r})"
            )
    elif options.is_set("precision_mode_v2"):
        if options.precision_mode_v2 not in MIXED_PRECISION_MODES_V2:
            raise NpuOptionValueError(
                "modify_mixlist is assigned, please ensure that precision_mode_v2 is assigned to "
                f"{' or '.join(repr(m) for m in MIXED_PRECISION_MODES_V2)} "
                f"(got precision_mode_v2={options.precision_mode_v2!r})"
            )
    else:
        raise NpuOptionValueError(
            "modify_mixlist is assigned, please ensure that precision_mode is assigned to 'allow_mix_precision' "
            "(or precision_mode_v2 to 'mixed_float16'); neither precision_mode nor precision_mode_v2 is set"
        )


@rule
def implmode_list_needs_implmode(options) -> None:
    if options.optypelist_for_implmode and not options.op_select_implmode:
        raise NpuOptionValueError(
            "when use optypelist_for_implmode, op_select_implmode must be set. "
            f"(got optypelist_for_implmode={options.optypelist_for_implmode!r})"
        )


@rule
def op_precision_mode_wins(options) -> None:
    if options.op_precision_mode and (options.op_select_implmode or options.optypelist_for_implmode):
        warn(
            "op_precision_mode is set together with op_select_implmode/optypelist_for_implmode; on the NPU "
            "op_precision_mode wins and the others are ignored.",
            ConfigurationAdvice,
        )


@rule
def gear_options_together(options) -> None:
    present = [key for key in GEAR_KEYS if options.is_set(key)]
    if present and len(present) < len(GEAR_KEYS):
        missing = [key for key in GEAR_KEYS if key not in present]
        raise NpuOptionValueError(
            "input_shape, dynamic_dims and dynamic_node_type should use together. "
            f"(set: {', '.join(present)}; missing: {', '.join(missing)})"
        )
    if not present:
        return
    if options.mix_compile_mode:
        raise NpuOptionValueError(
            "dynamic config can not use with mix compile. (input_shape/dynamic_dims are set and mix_compile_mode=True)"
        )
    dynamic_dims = sum(dim == -1 for _, shape in options.parsed_value("input_shape") for dim in shape)
    gears = options.parsed_value("dynamic_dims")
    if len(gears) < 2:
        raise NpuOptionValueError(f"dynamic_dims must list more than one gear (got {options.dynamic_dims!r})")
    for gear in gears:
        if len(gear) != dynamic_dims:
            raise NpuOptionValueError(
                f"dynamic_dims gear {','.join(map(str, gear))} has {len(gear)} sizes, but input_shape "
                f"{options.input_shape!r} has {dynamic_dims} dynamic (-1) dimensions"
            )


@rule
def hybrid_compile_needs_placeholder_gears(options) -> None:
    if options.compile_hybrid_mode != 1:
        return
    if not any(options.is_set(key) for key in GEAR_KEYS):
        raise NpuOptionValueError(
            "input_shape, dynamic_dims and dynamic_node_type should be set when compile_hybrid_mode is 1 "
            "(none of them is set)"
        )
    if options.dynamic_node_type != 1:
        raise NpuOptionValueError(
            "When compile_hybrid_mode set, dynamic_node_type should be 1. "
            f"(got dynamic_node_type={options.dynamic_node_type}; hybrid compilation supports placeholder inputs "
            "only)"
        )


@rule
def dynamic_compile_apart_from_other_dynamic_shapes(options) -> None:
    if not options.compile_dynamic_mode:
        return
    if options.dynamic_input:
        raise NpuOptionValueError(
            "Option compile_dynamic_mode cannot set when set dynamic_input to 1. "
            "(compile_dynamic_mode=True and dynamic_input=True; keep one)"
        )
    if any(options.is_set(key) for key in GEAR_KEYS):
        raise NpuOptionValueError(
            "Option compile_dynamic_mode cannot set when set input_shape, dynamic_dims and "
            "dynamic_node_type. (compile_dynamic_mode=True with gear options; keep one)"
        )


@rule
def shape_generalization_needs_online_compilation(options) -> None:
    mode = options.shape_generalization_mode
    if mode == "STRICT":
        return
    if options.compile_dynamic_mode:
        warn(
            f"compile_dynamic_mode is true, so shape_generalization_mode[{mode}] will be ignore, please set "
            "compile_dynamic_mode=false.",
            IgnoredOptionWarning,
        )
    elif options.jit_compile != "true":
        warn(
            f"jit_compile is not true, so shape_generalization_mode[{mode}] will be ignore, please set "
            f"jit_compile=true and shape_generalization_mode={mode}. (jit_compile={options.jit_compile!r})",
            IgnoredOptionWarning,
        )


@rule
def lazy_recompile_runs_one_step(options) -> None:
    if (
        options.dynamic_input
        and options.dynamic_graph_execute_mode == "lazy_recompile"
        and options.iterations_per_loop > 1
    ):
        raise NpuOptionValueError(
            f"iterations_per_loop only support 1 in lazy_recompile mode. Current is:{options.iterations_per_loop}"
        )


@rule
def compress_weight_keys_apart(options) -> None:
    if options.is_set("enable_compress_weight") and options.is_set("compress_weight_conf"):
        raise NpuOptionValueError(
            "enable_compress_weight can not use with compress_weight_conf. (both keys are present; keep one)"
        )


@rule
def device_memory_fits(options) -> None:
    if not (options.is_set("graph_memory_max_size") or options.is_set("variable_memory_max_size")):
        return
    graph = options.parsed.get("graph_memory_max_size", GRAPH_MEMORY_DEFAULT)
    variables = options.parsed.get("variable_memory_max_size", VARIABLE_MEMORY_DEFAULT)
    if graph + variables > ASCEND_910_MEMORY:
        warn(
            f"graph_memory_max_size + variable_memory_max_size = {graph + variables} bytes "
            f"({(graph + variables) / GIB:.1f} GiB) exceeds the 31 GiB an Ascend 910 offers; the NPU would fail "
            "with 'Out of memory'.",
            ConfigurationAdvice,
        )
