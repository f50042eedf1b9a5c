"""Graph compilation and parallelism: constant folding, graph-kernel fusion, AI Core counts, multi-stream execution.

Grappler's constant folding is the host's own pass of the same name. Ascend's core and stream counts cap how
much of the chip one operator, or the graph as a whole, may use; TensorFlow's thread pools are the host's caps:
intra-op threads (cores per op) and inter-op threads (ops at once).
"""

from __future__ import annotations

from npu_bridge_compat.options.spec import Effect
from npu_bridge_compat.plan.contribution import Contribution
from npu_bridge_compat.plan.features import (
    GraphKernelFusion,
    GraphOptimizerLevel,
    GrapplerSwitch,
    InterOpThreads,
    IntraOpThreads,
)
from npu_bridge_compat.plan.platform import GRAPH_KERNEL_ENV, HostFacts

FUSION_KEPT_OUT = (
    "MatMul and Conv keep their library kernels; ops under without_npu_compile_scope and in_out_pair host regions, "
    "py_func and the dumps and numeric checks stay out of the clusters"
)


def plan_compilation(options, host: HostFacts, fusion_flags_problem: str | None) -> Contribution:
    """`fusion_flags_problem`: why XLA's flags for graph-kernel fusion may not be in force (PlanEnvironment)."""
    result = Contribution()
    if options.is_set("oo_constant_folding") and not options.oo_constant_folding:
        # TensorFlow folds constants twice: in grappler, and in the graph optimizer that runs on every partition
        # (its level L1 always folds; L0 folds only on request, and keeps common-subexpression elimination so).
        result.features += [GrapplerSwitch("constant_folding", on=False), GraphOptimizerLevel("L0")]
        result.say(
            "oo_constant_folding",
            Effect.TRANSLATED,
            "constant folding OFF in grappler and in the graph optimizer (common subexpressions are still eliminated)",
        )
    _plan_graph_kernel(options, host, fusion_flags_problem, result)
    cores = options.parsed.get("aicore_num")
    if cores is not None:
        threads = max(cores)
        result.features.append(IntraOpThreads(threads))
        result.say(
            "aicore_num",
            Effect.APPROXIMATED,
            f"intra_op_parallelism_threads={threads} (the larger of {cores[0]} Cube and {cores[1]} Vector "
            "cores: the most cores one op uses)",
        )
    _plan_inter_op_threads(options, result)
    return result


def _plan_inter_op_threads(options, result: Contribution) -> None:
    """Ops at once: stream_max_parallel_num (per engine; the largest wins), else the multi-stream mode's count."""
    if options.stream_max_parallel_num:
        threads = max(int(item.split(":")[1]) for item in options.stream_max_parallel_num.split(","))
        result.features.append(InterOpThreads(threads))
        result.say(
            "stream_max_parallel_num",
            Effect.APPROXIMATED,
            f"inter_op_parallelism_threads={threads} (the largest engine parallelism)",
        )
    multistream = options.parsed.get("auto_multistream_parallel_mode")
    if multistream is None:
        return
    mode, streams = multistream
    if streams is None:
        result.say(
            "auto_multistream_parallel_mode",
            Effect.NO_EQUIVALENT,
            "cv runs the AI Core's Cube and Vector units side by side; a host has no such units",
        )
    elif options.stream_max_parallel_num:
        result.say(
            "auto_multistream_parallel_mode",
            Effect.NOT_NEEDED,
            "stream_max_parallel_num already sets the inter-op thread count",
        )
    else:
        result.features.append(InterOpThreads(streams))
        result.say(
            "auto_multistream_parallel_mode",
            Effect.APPROXIMATED,
            f"inter_op_parallelism_threads={streams} ({mode}: up to {streams} ops at once)",
        )


def _plan_graph_kernel(options, host: HostFacts, flags_problem: str | None, result: Contribution) -> None:
    """enable_graph_kernel (or the environment's mode) as XLA auto-clustering of fusible ops, unless the fusion
    switch file turns every Ascend fusion pass off. enable_graph_kernel=True means auto, where each function's
    first runs decide between the fused and the unfused form, unless the environment says on (always fused)."""
    if options.is_set("enable_graph_kernel"):
        mode = ("on" if host.graph_kernel == "on" else "auto") if options.enable_graph_kernel else "off"
        by = "enable_graph_kernel"
    else:
        mode, by = host.graph_kernel, f"{GRAPH_KERNEL_ENV}={host.graph_kernel}"
    if mode == "off":
        if options.is_set("enable_graph_kernel"):
            result.say("enable_graph_kernel", Effect.TRANSLATED, "False: no fusion (each op its own kernel)")
        return
    switches = options.parsed.get("fusion_switch_file") or {}
    if switches.get(("GraphFusion", "ALL")) == "off" and switches.get(("UBFusion", "ALL")) == "off":
        why = (
            "no fusion: fusion_switch_file turns GraphFusion and UBFusion ALL off, which wins over the request "
            "for graph-kernel fusion"
        )
        if options.is_set("enable_graph_kernel"):
            result.say("enable_graph_kernel", Effect.TRANSLATED, why)
        else:
            result.notes.append(f"{by}: {why}")
        return
    how = (
        f"XLA auto-clustering of fusible ops (element-wise, reductions, shapes) on the {host.device}: each chain "
        f"runs as one fused kernel; {FUSION_KEPT_OUT}; "
        + (
            "on: every function runs fused"
            if mode == "on"
            else (
                "auto: the first runs of each function (session run signature, Keras or tf.function) and input "
                "shapes run both forms and keep the faster, logged with the times measured"
            )
        )
    )
    if flags_problem:
        how += f". Warning: {flags_problem}, so clusters may not form or may take MatMul/Conv too"
    result.features.append(GraphKernelFusion(mode))
    if options.is_set("enable_graph_kernel"):
        result.say("enable_graph_kernel", Effect.TRANSLATED, how)
    else:
        result.notes.append(f"{by}: graph-kernel fusion, {how}")
