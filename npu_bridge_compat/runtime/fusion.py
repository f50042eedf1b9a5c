"""Graph-kernel fusion's decisions and reports: which form each function keeps, and what fused.

Whether a cluster pays depends on the host's CPU, its threads and the sizes, so in mode auto fusion is decided by
measurement: the first runs of each function and input shapes (a session's run signature, a Keras or TF2
function) run its fused and its unfused form in turn and keep the faster (`FusionTrial`, a trial of
runtime/timed_trial.py). The decision is logged once per function with the times measured.

What fused: how many clusters XLA formed in the executed graphs and which op types they absorbed, logged once per
graph after its first fused run (the host's counterpart of MindSpore's graph-kernel dump).

In the executed partition graphs (`RunOptions(output_partition_graphs=True)`, or the eager context's run metadata
for Keras' functions) each cluster is one `_XlaCompile` / `_XlaRun` pair (lazy compilation) or one `XlaLaunch`
node, calling the cluster's function; the ops of the graph that ran and no longer appear as nodes are the ones
the clusters absorbed (grappler may also have folded a few of them away). Functions run inlined into their
callers, so a node is matched by the tail of its executed name.
"""

from __future__ import annotations

import dataclasses
import statistics
import threading
from collections.abc import Hashable

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.compat.graph import op_type_is_stateful
from npu_bridge_compat.logs import log_line
from npu_bridge_compat.runtime.timed_trial import (
    TimedTrial,
    TimedTrials,
    Verdict,
    left_out_text,
    median_speedup,
    per_run_text,
    timed_pairs_text,
)

CLUSTER_OPS = ("_XlaCompile", "XlaLaunch")
# Not worth naming: what every graph has, and what only carries values in and out.
_PLUMBING = frozenset(
    {
        "Const",
        "Identity",
        "IdentityN",
        "NoOp",
        "Placeholder",
        "PlaceholderWithDefault",
        "_Arg",
        "_Retval",
        "PartitionedCall",
        "StatefulPartitionedCall",
        "If",
        "StatelessIf",
        "While",
        "StatelessWhile",
        # v1 control flow, which clusters never take in
        "Enter",
        "Exit",
        "Merge",
        "Switch",
        "NextIteration",
        "LoopCond",
    }
)
# Library kernels that stay their own nodes (oneDNN / cuBLAS / cuDNN), as TensorFlow names them after its rewrites.
_LIBRARY_MARKS = ("MatMul", "Conv", "Einsum")

_lock = threading.Lock()
OBSERVED = changes.ProcessState("what graph-kernel fusion reported", Owner.GRAPH_KERNEL_FUSION, list)
DECIDED = changes.ProcessState("the forms graph-kernel fusion kept", Owner.GRAPH_KERNEL_FUSION, list)


@dataclasses.dataclass(frozen=True)
class FusionSummary:
    where: str  # the graph or function that ran
    clusters: int
    absorbed: tuple[str, ...]  # op types compiled inside the clusters (or folded away by grappler)
    library: tuple[str, ...]  # MatMul / Conv kernels that ran as their own nodes

    def __str__(self) -> str:
        text = f"graph-kernel fusion in {self.where}: {self.clusters} XLA cluster{'s' * (self.clusters != 1)}"
        if self.absorbed:
            text += f" absorbing {', '.join(self.absorbed)}"
        if self.library:
            text += f"; kept as library kernels: {', '.join(self.library)}"
        return text


def summarize(where: str, partition_graphs, original_nodes) -> FusionSummary:
    """The clusters of `partition_graphs` (GraphDefs that ran) and the op types of `original_nodes` ((name, op
    type) pairs of the graph before optimization) that they absorbed."""
    nodes = [node for graph in partition_graphs for node in graph.node]
    clusters = {
        node.attr["function"].func.name if "function" in node.attr else node.name
        for node in nodes
        if node.op in CLUSTER_OPS
    }
    # A function's nodes run inlined into its caller, under the call's name scope: match names by their tails.
    executed = {"/".join(parts[i:]) for parts in (node.name.split("/") for node in nodes) for i in range(len(parts))}
    absorbed = (
        sorted({kind for name, kind in original_nodes if name not in executed and _may_be_clustered(kind)})
        if clusters
        else []
    )
    library = sorted({node.op for node in nodes if _is_library(node.op)})
    return FusionSummary(where, len(clusters), tuple(absorbed), tuple(library))


def _may_be_clustered(kind: str) -> bool:
    """Whether ops of this type can be in a fusible cluster: no plumbing, control flow, state or library kernel."""
    if kind in _PLUMBING or kind.startswith("_") or "Dataset" in kind or _is_library(kind):
        return False
    return not op_type_is_stateful(kind)


def _is_library(kind: str) -> bool:
    return any(mark in kind for mark in _LIBRARY_MARKS)


def merge(where: str, summaries) -> FusionSummary:
    """One summary of several graphs (a Keras function and the functions it calls)."""
    summaries = list(summaries)
    return FusionSummary(
        where,
        sum(s.clusters for s in summaries),
        tuple(sorted({kind for s in summaries for kind in s.absorbed})),
        tuple(sorted({kind for s in summaries for kind in s.library})),
    )


def record(summary: FusionSummary) -> None:
    """Keep the summary (`observed_fusion`) and log it in one line."""
    with _lock:
        changes.state(OBSERVED).append(summary)
    log_line(str(summary))


def observed_fusion() -> tuple[FusionSummary, ...]:
    """What graph-kernel fusion reported in this process so far, oldest first."""
    with _lock:
        return tuple(changes.state(OBSERVED))


# --- deciding by measurement ----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class FusionDecision:
    where: str  # the function (and input shapes) decided
    fused: bool  # the form kept
    fused_seconds: tuple[float, ...]  # each form's runs in the pairs compared (all pairs, if none was)
    unfused_seconds: tuple[float, ...]
    uncompared_pairs: int = 0  # timed pairs left out: one of their runs faulted fresh memory in, the other not
    calls_per_run: float = 1.0  # the seconds above are per call
    left_out: tuple[str, ...] = ()  # runs left out for what they carried besides the step

    @classmethod
    def of(cls, verdict: Verdict) -> FusionDecision:
        """A trial's verdict, whose candidate form is the fused one."""
        return cls(
            verdict.where,
            verdict.candidate_kept,
            verdict.candidate_seconds,
            verdict.baseline_seconds,
            verdict.uncompared_pairs,
            verdict.calls_per_run,
            verdict.left_out,
        )

    @property
    def speedup(self) -> float:
        """The fused form's speed over the unfused one's: the median of the pairs' ratios."""
        return median_speedup(self.fused_seconds, self.unfused_seconds)

    def __str__(self) -> str:
        if not self.fused_seconds:
            return (
                f"graph-kernel fusion for {self.where}: unfused form kept, untimed: every run that could be timed "
                f"carried more than its step{left_out_text(self.left_out)}"
            )
        fused, unfused = statistics.median(self.fused_seconds), statistics.median(self.unfused_seconds)
        left_out = (
            f", {self.uncompared_pairs} more left out as one of their runs faulted fresh memory in"
            if self.uncompared_pairs
            else ""
        )
        return (
            f"graph-kernel fusion for {self.where}: {'fused' if self.fused else 'unfused'} form kept, "
            f"{fused * 1e3:.3g} ms fused vs {unfused * 1e3:.3g} ms unfused {per_run_text(self.calls_per_run)} "
            f"({timed_pairs_text(len(self.fused_seconds), self.calls_per_run)}{left_out}; {self.speedup:.2f}x, "
            f"the pairs' median ratio){left_out_text(self.left_out)}"
        )


class FusionTrial(TimedTrial):
    """The trial (runtime/timed_trial.py) of one function and input shapes between its fused form (the candidate: kept
    only where it pays `PAYS`) and its unfused one. The unfused form, the run as asked, warms up first, so that
    the program's buffers are first allocated as they are without fusion: XLA's compilation allocates and frees
    large blocks, which moves the allocator's thresholds, and buffers first allocated after it can stay slower
    for good."""

    CANDIDATE_WARMS_FIRST = False

    def form_name(self, candidate: bool) -> str:
        return "fused" if candidate else "unfused"

    @property
    def decision(self) -> FusionDecision | None:
        """The verdict in fusion's words, once made."""
        return FusionDecision.of(self.verdict) if self.verdict is not None else None


def fusion_trials() -> TimedTrials:
    """The fusion trials of one function, per input shapes (or run signature); each decision is kept
    (`fusion_decisions`) and logged once."""
    return TimedTrials(FusionTrial, _decided_fusion)


def _decided_fusion(verdict: Verdict) -> None:
    decision = FusionDecision.of(verdict)
    with _lock:
        changes.state(DECIDED).append(decision)
    log_line(str(decision))


def fusion_decisions() -> tuple[FusionDecision, ...]:
    """The forms graph-kernel fusion kept in this process so far, oldest first."""
    with _lock:
        return tuple(changes.state(DECIDED))


def shape_key(structure) -> tuple:
    """The shapes of a call's inputs, flattened (`structure` holds tensors, arrays, iterators of batches or
    Python values): a function is decided once per input shapes, as XLA compiles once per shape."""
    import tensorflow as tf

    return tuple(_shape_of(leaf) for leaf in tf.nest.flatten(structure))


def _shape_of(leaf) -> Hashable:
    shape = getattr(leaf, "shape", None)
    if shape is not None:
        return tuple(shape)
    spec = getattr(leaf, "element_spec", None)  # an iterator: the specs of the batches it gives
    if spec is not None:
        try:
            hash(spec)  # TensorSpecs and tuples of them hash (a cheap key, once per call of a decided function)
            return spec
        except TypeError:  # a dict of specs
            import tensorflow as tf

            return tuple(str(getattr(item, "shape", item)) for item in tf.nest.flatten(spec))
    return leaf if isinstance(leaf, (int, float, str, bool, type(None))) else type(leaf).__name__
