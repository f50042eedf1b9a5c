"""What graph-kernel fusion did: how many clusters XLA formed in the executed graphs and which op types they
absorbed, logged once per graph after its first run (the host's counterpart of MindSpore's graph-kernel dump).

In the executed partition graphs (`RunOptions(output_partition_graphs=True)`, or the eager context's run metadata
for Keras' functions) each cluster is one `_XlaCompile` / `_XlaRun` pair (lazy compilation) or one `XlaLaunch`
node, calling the cluster's function; the ops of the graph that ran and no longer appear as nodes are the ones
the clusters absorbed (grappler may also have folded a few of them away). Functions run inlined into their
callers, so a node is matched by the tail of its executed name.
"""

from __future__ import annotations

import dataclasses
import threading

from npu_bridge_compat.compat.graph import op_type_is_stateful
from npu_bridge_compat.logs import log_line

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
_observed: list[FusionSummary] = []


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
        _observed.append(summary)
    log_line(str(summary))


def observed_fusion() -> tuple[FusionSummary, ...]:
    """What graph-kernel fusion reported in this process so far, oldest first."""
    with _lock:
        return tuple(_observed)
