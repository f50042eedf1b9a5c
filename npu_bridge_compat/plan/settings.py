"""Session and process settings: memory caps, determinism, timeouts, compilation cache, fusion switches,
recomputation (thread counts are planned with parallelism, in compilation.py)."""

from __future__ import annotations

from npu_bridge_compat.options.rules import GRAPH_MEMORY_DEFAULT, VARIABLE_MEMORY_DEFAULT
from npu_bridge_compat.options.spec import Effect
from npu_bridge_compat.plan.contribution import Contribution
from npu_bridge_compat.plan.features import (
    GpuMemoryLimit,
    GrapplerSwitch,
    OpDeterminism,
    OperationTimeout,
    Recomputation,
    XlaCompileCache,
)
from npu_bridge_compat.plan.platform import HostFacts

MIB = 1024**2


def plan_settings(options, host: HostFacts) -> Contribution:
    result = Contribution()
    _plan_memory(options, host, result)
    if options.deterministic == 1:
        result.features.append(OpDeterminism())
    elif options.is_set("deterministic"):
        result.say("deterministic", Effect.TRANSLATED, "0: TensorFlow's default (non-deterministic) kernels")
    if options.is_set("graph_exec_timeout"):
        result.features.append(OperationTimeout(options.graph_exec_timeout))
        result.say(
            "graph_exec_timeout",
            Effect.APPROXIMATED,
            f"ConfigProto.operation_timeout_in_ms={options.graph_exec_timeout} (per blocking op)",
        )
    _plan_compile_cache(options, result)
    switches = options.parsed.get("fusion_switch_file")
    if options.fusion_switch_file and switches is None:
        result.say(
            "fusion_switch_file",
            Effect.NO_EQUIVALENT,
            "the file is not on this host; Ascend fusion passes have no host counterpart anyway",
        )
    elif switches is not None:
        if switches.get(("GraphFusion", "ALL")) == "off":
            result.features.append(GrapplerSwitch("remapping", on=False))
            result.say(
                "fusion_switch_file",
                Effect.APPROXIMATED,
                "GraphFusion ALL off: grappler remapping (op fusion) turned OFF; other switches have no "
                "host counterpart",
            )
        else:
            result.say(
                "fusion_switch_file", Effect.NO_EQUIVALENT, "individual Ascend fusion passes have no host counterpart"
            )
    return result


def _plan_memory(options, host: HostFacts, result: Contribution) -> None:
    keys = [key for key in ("graph_memory_max_size", "variable_memory_max_size") if options.is_set(key)]
    if not keys:
        return
    total = options.parsed.get("graph_memory_max_size", GRAPH_MEMORY_DEFAULT) + options.parsed.get(
        "variable_memory_max_size", VARIABLE_MEMORY_DEFAULT
    )
    if host.has_gpu:
        result.features.append(GpuMemoryLimit(megabytes=total // MIB))
        how = f"GPU memory capped at {total // MIB} MiB (graph + variable memory)"
        effect = Effect.APPROXIMATED
    else:
        how = "a CPU host has no device memory to cap"
        effect = Effect.NO_EQUIVALENT
    for key in keys:
        result.say(key, effect, how)


def _plan_compile_cache(options, result: Contribution) -> None:
    """Ascend's compile caches become XLA's persistent cache; it matters only where XLA compiles."""
    directory = options.op_compiler_cache_dir or options.graph_compiler_cache_dir
    if options.op_compiler_cache_mode == "disable":
        result.say("op_compiler_cache_mode", Effect.TRANSLATED, "disable: no persistent compilation cache")
        return
    if not directory:
        if options.op_compiler_cache_mode:
            result.say(
                "op_compiler_cache_mode",
                Effect.NO_EQUIVALENT,
                "no cache directory is set (op_compiler_cache_dir), so there is nothing to persist to",
            )
        return
    result.features.append(XlaCompileCache(directory))
    how = f"XLA persistent compilation cache in {directory} (used when XLA compiles)"
    for key in ("op_compiler_cache_mode", "op_compiler_cache_dir", "graph_compiler_cache_dir"):
        if options.is_set(key):
            result.say(key, Effect.APPROXIMATED, how)


# GraphMemoryOptimizeConfig(recompute=...) reaches the adapter's graph as an attribute, not as a session option.
RECOMPUTE_MODES = {"auto": "RECOMPUTATION_HEURISTICS", "manual": "MANUAL"}


def plan_recompute(mode: str | None) -> Contribution:
    """`recompute` ('auto' / 'manual') as grappler's memory optimizer, which recomputes activations for the
    gradients instead of keeping them: by its heuristics, or only the ops marked by npu_recompute_scope."""
    result = Contribution()
    if mode is None:
        return result
    result.features.append(Recomputation(RECOMPUTE_MODES[mode]))
    which = (
        "ops it finds cheap to recompute"
        if mode == "auto"
        else "ops built under npu_scope.npu_recompute_scope() (marked _recompute_hint)"
    )
    result.notes.append(
        f"GraphMemoryOptimizeConfig(recompute={mode!r}): grappler memory_optimization="
        f"{RECOMPUTE_MODES[mode]} recomputes {which} during backpropagation (approximated)"
    )
    return result
