"""Graph-kernel fusion's decisions and reports: which form each function keeps, and what fused.

Whether a cluster pays depends on the host's CPU, its threads and the sizes, so in mode auto fusion is decided by
measurement, as cuDNN's and XLA's autotuning are: the first runs of each function and input shapes (a session's run
signature, a Keras or TF2 function) run its fused and its unfused form in turn and keep the faster
(`FusionTrial`). A form's first run is a warm-up (tracing, XLA compilation, first allocations), never timed; then
timed runs in pairs of alternating order, so both forms see the machine in the same state. The decision is
logged once per function with the times measured.

A run's time also holds what the memory allocator did in it. In a process's first dozen or so runs, glibc's
malloc still moves large buffers between its heap and the system (its mmap and trim thresholds adjust as blocks
are freed), and a run that maps fresh memory pays a page fault per 4 KiB page: on a 2-core AMD EPYC a 1M-float
mul + add step took 0.7-1 ms, and 5-6 ms in the runs that faulted its 4 MiB output in, fused or not. A pair with
one such run and one without compares the allocator, not the forms, so it is not compared (`FusionTrial.FRESH_PAGES`).

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
import time
from collections.abc import Callable, Hashable
from typing import TypeVar

try:
    import resource
except ImportError:  # Windows has no resource module: runs are compared without their page faults
    resource = None

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
_decided: list[FusionDecision] = []
Result = TypeVar("Result")


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


# --- deciding by measurement ----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class FusionDecision:
    where: str  # the function (and input shapes) decided
    fused: bool  # the form kept
    fused_seconds: tuple[float, ...]  # each form's runs in the pairs compared (all pairs, if none was)
    unfused_seconds: tuple[float, ...]
    uncompared_pairs: int = 0  # timed pairs left out: one of their runs faulted fresh memory in, the other not

    @property
    def speedup(self) -> float:
        """The fused form's speed over the unfused one's: the median of the pairs' ratios (a pair's two runs saw
        the machine in the same state)."""
        return statistics.median(paired_ratios(self.fused_seconds, self.unfused_seconds))

    def __str__(self) -> str:
        fused, unfused = statistics.median(self.fused_seconds), statistics.median(self.unfused_seconds)
        left_out = (
            f", {self.uncompared_pairs} more left out as one of their runs faulted fresh memory in"
            if self.uncompared_pairs
            else ""
        )
        return (
            f"graph-kernel fusion for {self.where}: {'fused' if self.fused else 'unfused'} form kept, "
            f"{fused * 1e3:.3g} ms fused vs {unfused * 1e3:.3g} ms unfused per run (medians of "
            f"{len(self.fused_seconds)} timed pairs after a warm-up run of each form{left_out}; {self.speedup:.2f}x, "
            "the pairs' median ratio)"
        )


def paired_ratios(fused_seconds, unfused_seconds) -> list[float]:
    """Unfused over fused time, pair by pair."""
    return [unfused / fused for fused, unfused in zip(fused_seconds, unfused_seconds)]


class FusionTrial:
    """The first runs of one function and input shapes, until they decide its form: a warm-up run of each form
    (unfused first, see below), then timed pairs, fused first in odd pairs and unfused first in even ones, compared
    pair by pair (both runs of a pair see the machine in the same state). A run is fresh if it faulted
    `FRESH_PAGES` or more pages of memory in; a pair with one fresh run is not compared, a pair with two is
    compared for clear margins only (the faults add to both runs alike, diluting their ratio).
    - After one pair, a form `VERY_CLEAR_MARGIN` faster wins (each further run of the slow form would cost
      several runs' time); after two pairs, a form whose runs were all faster than all the other's by
      `CLEAR_MARGIN`.
    - From three pairs without fresh runs, the fused form wins if it was faster by `PAYS` in every one, the
      unfused form if the fused one never was: fusion is kept only where it pays more than a run's noise.
    - Otherwise, at `MOST_PAIRS` such pairs or `MOST_TIMED_PAIRS` timed ones, their median ratio decides (of the
      compared pairs if there is none, of all if none was compared): fused only if it pays `PAYS`.
    A close race takes more pairs, but costs little by being close: the trial's cost is the slower form's extra
    time, at most `MOST_TIMED_PAIRS` times the difference. Each run is a real run.

    The unfused form, the run as asked, runs first, so that the program's buffers are first allocated as they are
    without fusion: XLA's compilation allocates and frees large blocks, which moves glibc's thresholds, and a
    1M-float mul + add step whose buffers were first allocated after it ran 0.85-0.95 ms for good, against 0.5-0.7
    ms in a process that never fused (2-core AMD EPYC, TensorFlow 2.21)."""

    VERY_CLEAR_MARGIN = 3.0
    CLEAR_MARGIN = 1.5
    PAYS = 0.03
    FEWEST_PAIRS = 3
    MOST_PAIRS = 6
    MOST_TIMED_PAIRS = 10
    FRESH_PAGES = 256  # 1 MiB in 4 KiB pages: the allocator got memory from the system during the run

    def __init__(self, where: str) -> None:
        self.where = where
        self.decision: FusionDecision | None = None
        self._warmed: set[bool] = set()
        self._pending: dict[bool, tuple[float, bool]] = {}  # the current pair's runs: seconds, fresh
        self._settled: list[tuple[float, float]] = []  # (fused, unfused) seconds of pairs without fresh runs
        self._fresh: list[tuple[float, float]] = []  # of pairs whose two runs were fresh
        self._uncompared: list[tuple[float, float]] = []  # of pairs with one fresh run

    def next_form(self) -> bool:
        """Whether the next run is to be the fused form (once decided, the form kept)."""
        if self.decision is not None:
            return self.decision.fused
        for fused in (False, True):  # unfused first: see above
            if fused not in self._warmed:
                return fused
        fused_first = self._timed_pairs() % 2 == 0
        return fused_first if not self._pending else not fused_first

    def _timed_pairs(self) -> int:
        return len(self._settled) + len(self._fresh) + len(self._uncompared)

    def ran(self, fused: bool, seconds: float, fresh_pages: int = 0) -> FusionDecision | None:
        """Take a run's time and the pages of fresh memory it faulted in (a warm-up's are not kept); the
        decision, when this run made it."""
        if self.decision is not None:
            return None
        if fused not in self._warmed:
            self._warmed.add(fused)
            return None
        self._pending[fused] = (seconds, fresh_pages >= self.FRESH_PAGES)
        if len(self._pending) < 2:
            return None
        (fused_time, fused_fresh), (unfused_time, unfused_fresh) = self._pending[True], self._pending[False]
        self._pending = {}
        kind = self._uncompared if fused_fresh != unfused_fresh else self._fresh if fused_fresh else self._settled
        kind.append((fused_time, unfused_time))
        keep = self._verdict()
        if keep is None:
            return None
        pairs = self._settled + self._fresh or self._uncompared
        fused_times, unfused_times = zip(*pairs)
        self.decision = FusionDecision(self.where, keep, fused_times, unfused_times, self._timed_pairs() - len(pairs))
        return self.decision

    def _verdict(self) -> bool | None:
        """Whether the fused form wins after the pairs so far; None: time another pair."""
        compared = self._settled + self._fresh
        if compared:
            fused_times, unfused_times = zip(*compared)
            margin = self.VERY_CLEAR_MARGIN if len(compared) == 1 else self.CLEAR_MARGIN
            if max(fused_times) * margin <= min(unfused_times):
                return True
            if max(unfused_times) * margin <= min(fused_times):
                return False
        if len(self._settled) >= self.FEWEST_PAIRS:
            ratios = paired_ratios(*zip(*self._settled))
            if min(ratios) >= 1 + self.PAYS:
                return True
            if max(ratios) < 1 + self.PAYS:
                return False
        if len(self._settled) >= self.MOST_PAIRS or self._timed_pairs() >= self.MOST_TIMED_PAIRS:
            deciding = self._settled or compared or self._uncompared
            return statistics.median(paired_ratios(*zip(*deciding))) >= 1 + self.PAYS
        return None


class FusionChooser:
    """The trials of one door's functions, per function and input shapes; logs each decision once. A subclass
    names its own `TRIAL` class and what `finished` keeps (runtime/precision.py)."""

    TRIAL: type[FusionTrial] = FusionTrial

    def __init__(self) -> None:
        self._trials: dict[Hashable, FusionTrial] = {}
        self._lock = threading.Lock()

    def trial(self, key: Hashable, where: str) -> FusionTrial:
        with self._lock:
            trial = self._trials.get(key)
            if trial is None:
                trial = self._trials[key] = self.TRIAL(where)
            return trial

    def decided(self, key: Hashable) -> FusionTrial | None:
        """The trial of `key` once it has decided, else None."""
        trial = self._trials.get(key)
        return trial if trial is not None and trial.decision is not None else None

    def run(self, key: Hashable, where: str, run: Callable[[bool], Result]) -> Result:
        """`run(fused)` in the form the function's trial asks for (or keeps), timed while the trial lasts."""
        trial = self.trial(key, where)
        fused = trial.next_form()
        if trial.decision is not None:
            return run(fused)
        started = run_started()
        result = run(fused)
        self.finished(trial, fused, started)
        return result

    def finished(self, trial: FusionTrial, fused: bool, started: tuple[float, int]) -> None:
        run_finished(trial, fused, started)


def run_started() -> tuple[float, int]:
    """What `run_finished` measures a run from: the clock and the process's page faults so far."""
    return time.perf_counter(), _pages_faulted()


def _pages_faulted() -> int:
    """The pages the process has faulted in so far (minor faults: memory mapped fresh, no disk read), or 0."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt if resource is not None else 0


def run_finished(trial: FusionTrial, fused: bool, started: tuple[float, int]) -> None:
    """Give the trial the time and page faults of a run that began at `started`; a decision it makes is kept
    (`fusion_decisions`) and logged."""
    start, pages = started
    decision = trial.ran(fused, time.perf_counter() - start, _pages_faulted() - pages)
    if decision is not None:
        with _lock:
            _decided.append(decision)
        log_line(str(decision))


def fusion_decisions() -> tuple[FusionDecision, ...]:
    """The forms graph-kernel fusion kept in this process so far, oldest first."""
    with _lock:
        return tuple(_decided)


def shape_key(structure) -> tuple:
    """The shapes of a call's inputs, flattened (`structure` holds tensors, arrays, iterators of batches or
    Python values): a function is decided once per input shapes, as XLA compiles once per shape."""
    import tensorflow as tf

    return tuple(_shape_of(leaf) for leaf in tf.nest.flatten(structure))


def _shape_of(leaf) -> Hashable:
    shape = getattr(leaf, "shape", None)
    if shape is not None:
        return tuple(shape)
    spec = getattr(leaf, "element_spec", None)  # an iterator: the shapes of the batches it gives
    if spec is not None:
        import tensorflow as tf

        return tuple(str(getattr(item, "shape", item)) for item in tf.nest.flatten(spec))
    return leaf if isinstance(leaf, (int, float, str, bool, type(None))) else type(leaf).__name__
