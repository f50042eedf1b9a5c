"""The run-time units: what happens around training runs, written once for every door.

Each unit carries out one feature of the plan and is a `SessionRunHook`: NPUEstimator hands the units to its
training like any hook; NPUSession drives the same units on its own runs with TensorFlow's hook driver (the one
MonitoredSession uses). The Keras door, whose steps run as traced functions, uses their traced-function forms
(`probes.py` for dumps and checks, `keep_dtype_in_function` here, the profiler's start/stop).

Units that add fetches work per fetch structure (each is its own graph on Ascend, with its own step count, and
one cache entry here). A run of a looped train op is left to the dumps and checks built into the loop's
iterations (`loop.py`, `probes.py`).
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import tensorflow as tf

from npu_bridge_compat import changes
from npu_bridge_compat.compat.graph import building_in_finalized, is_function_graph, is_stateful, is_while_body_graph
from npu_bridge_compat.compat.session_jit import build_signatures_fused, restore_signature_building
from npu_bridge_compat.compat.sessions import session_config_of
from npu_bridge_compat.plan.features import (
    GraphKernelFusion,
    HostRegions,
    MixedPrecision,
    NumericChecks,
    PrecisionChoice,
    ProfilerTrace,
    TensorDump,
)
from npu_bridge_compat.runtime.dump import TensorDumper
from npu_bridge_compat.runtime.fusion import fusion_trials, record, summarize
from npu_bridge_compat.runtime.graph import (
    ancestors_among,
    fetched_operations,
    keeping_dtype,
    kept_dtype_operations,
    step_operations,
    warn_kept_in_loop,
)
from npu_bridge_compat.runtime.host_regions import host_region_ops, keep_on_host
from npu_bridge_compat.runtime.loop import LoopServer, looped_train_ops
from npu_bridge_compat.runtime.numeric import numeric_check
from npu_bridge_compat.runtime.precision import converting_nothing, precision_trials
from npu_bridge_compat.runtime.probes import StepProbes
from npu_bridge_compat.runtime.profiling import profiler_trace
from npu_bridge_compat.runtime.timed_trial import DUMP, note_carried, run_started

SessionRunArgs = tf.compat.v1.train.SessionRunArgs


def _run_of(run_context) -> tuple[Any, tuple, list, Any]:
    """(graph, fetch key, fetched ops, looped train op or None) of the run a hook is asked about."""
    graph = run_context.session.graph
    fetched = fetched_operations(run_context.original_args.fetches)
    loops = {looped.loop_op: looped for looped in looped_train_ops(graph)}
    looped = next((loops[op] for op in fetched if op in loops), None)
    return graph, tuple(op.name for op in fetched), fetched, looped


class _PerFetchStructureUnit(tf.compat.v1.train.SessionRunHook):
    """A unit that adds fetches to the runs of each fetch structure and counts that structure's steps. Runs of a
    looped train op are left to what the loop builds into its iterations."""

    def __init__(self) -> None:
        self._steps: dict[tuple, int] = {}  # fetch names -> steps run so far
        self._current: tuple | None = None  # (fetch names, step) of the run under way, when it fetches

    def before_run(self, run_context):
        graph, key, fetched, looped = _run_of(run_context)
        self._current = None
        if looped is not None:
            self.looped_run(graph, looped)
            return None
        if not fetched:
            return None
        step = self._steps.get(key, 0)
        self._steps[key] = step + 1
        fetches = self.fetches(graph, key, fetched, step)
        if fetches is None:
            return None
        self._current = (key, step)
        return SessionRunArgs(fetches)

    def after_run(self, run_context, run_values) -> None:
        if self._current is not None:
            self.fetched(*self._current, run_values.results)

    def fetches(self, graph, key: tuple, fetched: list, step: int):
        """What to add to this run of the structure `key` (its step `step`), or None for nothing."""
        raise NotImplementedError

    def fetched(self, key: tuple, step: int, values) -> None:
        """The values of what `fetches` added."""

    def looped_run(self, graph, looped) -> None:
        """A run of a looped train op is under way."""


class KeepDtypeUnit(_PerFetchStructureUnit):
    """Ops under keep_dtype_scope stay float32 under grappler's mixed precision: they become targets of the runs
    that compute them, and grappler never converts a node a run must preserve. Targets return nothing, so this
    costs no copy; only ops the run computes anyway are named, so nothing extra runs."""

    def __init__(self) -> None:
        super().__init__()
        self._kept: dict[tuple, list] = {}
        self._warned_loops: set[str] = set()

    def fetches(self, graph, key, fetched, step):
        if key not in self._kept:
            self._kept[key] = kept_dtype_operations(graph, fetched)
        return self._kept[key] or None

    def settled(self, fetches, feed_dict) -> tuple | None:
        """The kept ops this run's fetch structure computes, as extra targets, once its first run (through the
        hooks) found them; None before."""
        kept = self._kept.get(tuple(op.name for op in fetched_operations(fetches)))
        return None if kept is None else tuple(kept)

    def looped_run(self, graph, looped) -> None:
        """A loop runs a copy of the step, which no run fetches: its marked ops follow mixed precision."""
        if looped.train_op.name not in self._warned_loops:
            self._warned_loops.add(looped.train_op.name)
            warn_kept_in_loop(keeping_dtype(step_operations(graph, [looped.train_op])), "the iterations_per_loop loop")


def keep_dtype_in_function(graph, operations: list) -> None:
    """The traced form: the step's marked ops become control outputs of the traced function, which grappler
    spares too. Where the step is traced inside a loop of steps, or as a function that another function calls
    (Keras 3 traces its step so), grappler optimizes the outer function with the step inlined, and sees only the
    outer function's outputs: say so."""
    kept = keeping_dtype(operations)
    if not kept:
        return
    outer = graph
    while is_function_graph(outer):
        if is_while_body_graph(outer):  # steps_per_execution > 1
            warn_kept_in_loop(kept, "Keras' steps_per_execution loop")
            return
        outer = outer.outer_graph
    if is_function_graph(getattr(graph, "outer_graph", None)):
        warn_kept_in_loop(
            kept,
            "Keras 3's step function, which its train function calls",
            "Keras 2 (tf_keras, TF_USE_LEGACY_KERAS=1) or the session door keeps them in float32",
        )
        return
    graph.control_outputs.extend(op for op in kept if op not in graph.control_outputs)


def traced_with_units(build, probes: StepProbes | None, mixed_precision: bool, step_number=None):
    """The traced form of the run-time units, for a step being traced as (part of) a function: `build()` makes
    the step's ops; under mixed precision its keep_dtype_scope ops are kept (keep_dtype_in_function), and the
    probes' dumps and checks (numbered `step_number`, or counted by the probes) run with the step. Returns the
    step's outputs."""
    if probes is None and not mixed_precision:
        return build()
    graph = tf.compat.v1.get_default_graph()
    first_new_op = len(graph.get_operations())
    outputs = build()
    built = graph.get_operations()[first_new_op:]
    ran = ancestors_among(fetched_operations(outputs) + [op for op in built if is_stateful(op)], built)
    if mixed_precision:
        keep_dtype_in_function(graph, ran)
    attached = probes.attach(ran, step_number) if probes is not None else []
    if not attached:
        return outputs
    with tf.control_dependencies(attached):
        return tf.nest.map_structure(lambda t: tf.identity(t) if isinstance(t, tf.Tensor) else t, outputs)


class NumericCheckUnit(_PerFetchStructureUnit):
    """Finiteness flags over the tensors each fetch structure computes; a non-finite output stops the run with
    NonFiniteValueError naming the op and the step (counted per fetch structure, as the dumps count), after its
    inputs were saved under `dump_path` (if any)."""

    def __init__(self, feature: NumericChecks) -> None:
        super().__init__()
        self._dump_path = feature.dump_path
        self._checks: dict[tuple, Any] = {}

    def fetches(self, graph, key, fetched, step):
        if key not in self._checks:
            with building_in_finalized(graph):
                self._checks[key] = numeric_check(graph, fetched, self._dump_path)
        return self._checks[key].flags if self._checks[key] is not None else None

    def fetched(self, key, step, flags) -> None:
        self._checks[key].raise_if_non_finite(flags, step)


class TensorDumpUnit(_PerFetchStructureUnit):
    """Dumps the selected steps of each fetch structure, named `graph_name` (or after the structure's first
    fetch): its tensors are fetched with the step."""

    def __init__(self, feature: TensorDump, graph_name: str | None = None) -> None:
        super().__init__()
        self._feature = feature
        self._graph_name = graph_name
        self._dumpers: dict[tuple, TensorDumper] = {}

    def fetches(self, graph, key, fetched, step):
        if key not in self._dumpers:
            self._dumpers[key] = TensorDumper(self._feature, self._graph_name or key[0])
        dumper = self._dumpers[key]
        if not dumper.selects(step):
            return None
        note_carried(DUMP)  # this run fetches the step's tensors: not a timed run
        return dumper.fetches(graph, fetched) or None

    def fetched(self, key, step, values) -> None:
        self._dumpers[key].write(step, values)


class HostRegionsUnit(tf.compat.v1.train.SessionRunHook):
    """Keeps the in_out_pair regions on the host once the training graph is built, before it runs."""

    def __init__(self, regions: HostRegions, host) -> None:
        self._regions, self._host = regions, host

    def begin(self) -> None:
        graph = tf.compat.v1.get_default_graph()
        keep_on_host(host_region_ops(graph, self._regions), self._host)


class ProfilerUnit(tf.compat.v1.train.SessionRunHook):
    """Traces training with TensorFlow's profiler from the session's start to its end (Keras: from `start` to
    `stop`)."""

    def __init__(self, trace: ProfilerTrace) -> None:
        self._output = trace.output
        self._trace = None

    def start(self) -> None:
        if self._trace is None:
            self._trace = contextlib.ExitStack()
            self._trace.enter_context(profiler_trace(self._output))

    def stop(self) -> None:
        if self._trace is not None:
            self._trace.close()  # the trace is written now
            self._trace = None

    def after_create_session(self, session, coord) -> None:
        self.start()

    def end(self, session) -> None:
        self.stop()


class _PerSignatureUnit(tf.compat.v1.train.SessionRunHook):
    """A unit that decides per run signature (the fetches and the feeds' names, the first MOST_SIGNATURES of them)
    and lets a decided run go straight through the session with the kept form's extra targets (`settled`)."""

    MOST_SIGNATURES = 8

    def __init__(self) -> None:
        self._signatures: set[tuple] = set()
        self._last_settled: tuple = (None, None)  # an op or tensor run without feeds, and its decided targets

    def _admitted(self, run_context) -> tuple | None:
        """(graph, fetch names, feeds, signature) of a run this unit decides for; None for a run without fetches
        and for signatures beyond the first MOST_SIGNATURES."""
        graph, names, _, _ = _run_of(run_context)
        if not names:
            return None
        feeds = run_context.original_args.feed_dict or {}
        signature = (names, _feed_names(feeds))
        if signature not in self._signatures:
            if len(self._signatures) >= self.MOST_SIGNATURES:
                return None
            self._signatures.add(signature)
        return graph, names, feeds, signature

    def settled(self, fetches, feed_dict) -> tuple | None:
        """The extra targets of the form kept for this run's signature: the session runs `fetches` with them
        straight through, outside the hook driver, on the executors the trial built. None while undecided."""
        if fetches is self._last_settled[0] and not feed_dict:  # a loop's `run(train_op)`, asked every step
            return self._last_settled[1]
        signature = (tuple(op.name for op in fetched_operations(fetches)), _feed_names(feed_dict or {}))
        targets = self._kept_targets(signature, feed_dict or {})
        if targets is not None and isinstance(fetches, (tf.Operation, tf.Tensor)) and not feed_dict:
            self._last_settled = (fetches, targets)  # what it runs cannot change
        return targets

    def _kept_targets(self, signature: tuple, feeds) -> tuple | None:
        """The extra targets of the form kept for `signature` with `feeds`, or None while undecided."""
        raise NotImplementedError


class FusionUnit(_PerSignatureUnit):
    """Graph-kernel fusion around session runs, per run signature (the fetches, the feeds and their shapes; the
    first MOST_SIGNATURES). In mode auto (runtime/fusion.py) a signature's first runs try its fused and unfused
    forms and keep the faster. The fused form runs with an extra target (a NoOp made in `begin`), so the session
    builds the two forms as two signatures (the unfused one is the run as asked), and XLA's auto-clustering flag
    says the form while a run lasts, so that the session builds it fused or not (compat/session_jit.py). After the
    first fused run of a signature, the clusters its executed graphs hold and the op types they absorbed are
    reported."""

    def __init__(self, fusion: GraphKernelFusion, precision: PrecisionUnit | None = None) -> None:
        super().__init__()
        self._measured = fusion.measured
        self._precision = precision  # a signature's trial waits until its mixed precision is decided
        self._chooser = fusion_trials()
        self._reported: set[tuple] = set()
        self._fused_marker: Any = None
        self._current: tuple | None = None

    def begin(self) -> None:
        if self._measured:
            self._fused_marker = tf.no_op(name="npu_graph_kernel_fused")

    def settled(self, fetches, feed_dict) -> tuple | None:
        """As `_PerSignatureUnit.settled`, in mode auto (runtime/fusion.py): the fused form's marker, or none; its
        hook driver's work per run costs as much as a small fused step gains."""
        return super().settled(fetches, feed_dict) if self._measured else None

    def _kept_targets(self, signature: tuple, feeds) -> tuple | None:
        fused = self._chooser.kept(_trial_key(signature, feeds))
        if fused is None:
            return None
        return (self._fused_marker,) if fused else ()

    def before_run(self, run_context):
        self._current = None
        admitted = self._admitted(run_context)
        if admitted is None:
            return None  # beyond the first signatures: undecided, so unfused in mode auto
        graph, names, feeds, signature = admitted
        fused, trial, fetch = True, None, None
        if self._measured:
            key = _trial_key(signature, feeds)
            if self._precision is not None and not self._precision.decided(key):
                return None  # unfused, as auto runs an undecided signature, and not timed
            trial = self._chooser.trial(key, f"session run of {_described(names)}")
            fused = trial.next_form()
            fetch = self._fused_marker if fused else None
            build_signatures_fused(fused)
        report = fused and signature not in self._reported
        if report:
            self._reported.add(signature)
        options = tf.compat.v1.RunOptions(output_partition_graphs=True) if report else None
        self._current = (graph, names, fused, trial, report, run_started())
        return SessionRunArgs(fetch, options=options)

    def after_run(self, run_context, run_values) -> None:
        if self._current is None:
            return
        graph, names, fused, trial, report, started = self._current
        if trial is not None and trial.verdict is None:
            self._chooser.finished(trial, fused, started)
        if self._measured:
            restore_signature_building()
        if report and run_values.run_metadata is not None:
            ran = tf.compat.v1.graph_util.extract_sub_graph(
                graph.as_graph_def(), [name.split(":")[0] for name in names]
            )
            nodes = [(node.name, node.op) for node in ran.node]
            summary = summarize(names[0], run_values.run_metadata.partition_graphs, nodes)
            if summary.clusters:
                record(summary)


class PrecisionUnit(_PerSignatureUnit):
    """Mixed precision decided per run signature (MEASURED, runtime/precision.py): a signature's first runs
    (the first MOST_SIGNATURES signatures) run its reduced-precision form, the run as asked (the session's config
    turns the pass on), and its float32 form in turn, and keep the faster. The float32 form runs with an extra
    target (a NoOp made in `begin`), so that the session builds it as a signature of its own, and while it runs
    grappler's allow list leaves out every op type of the graph (`converting_nothing`), so that the pass converts
    nothing in it."""

    def __init__(self, mixed: MixedPrecision) -> None:
        super().__init__()
        self._chooser = precision_trials(mixed.dtype)
        self._float32_marker: Any = None
        self._current: tuple | None = None  # (trial, form, start) of a timed run
        self._float32_form: contextlib.ExitStack | None = None
        self._op_types: tuple[int, set[str]] = (-1, set())  # (graph version, its op types)

    def begin(self) -> None:
        self._float32_marker = tf.no_op(name="npu_precision_float32_form")

    def decided(self, key: tuple) -> bool:
        """Whether the signature of `key` (`_trial_key`) has its form; signatures beyond the first
        MOST_SIGNATURES keep reduced precision undecided."""
        return self._chooser.kept(key) is not None or key[0] not in self._signatures

    def _kept_targets(self, signature: tuple, feeds) -> tuple | None:
        if signature not in self._signatures:  # beyond the first signatures: as asked
            return () if len(self._signatures) >= self.MOST_SIGNATURES else None
        reduced = self._chooser.kept(_trial_key(signature, feeds))
        if reduced is None:
            return None
        return () if reduced else (self._float32_marker,)

    def before_run(self, run_context):
        self._current = None
        admitted = self._admitted(run_context)
        if admitted is None:
            return None
        graph, names, feeds, signature = admitted
        key = _trial_key(signature, feeds)
        trial = self._chooser.trial(key, f"session run of {_described(names)}")
        reduced = trial.next_form()
        if trial.verdict is None:
            self._current = (trial, reduced, run_started())
        if reduced:
            return None
        # The float32 form: a graph it builds meanwhile (its own signature, the fused one's) converts nothing.
        self._float32_form = contextlib.ExitStack()
        if self._op_types[0] != graph.version:
            self._op_types = (graph.version, _op_types(graph))
        self._float32_form.enter_context(converting_nothing(self._op_types[1]))
        return SessionRunArgs(self._float32_marker)

    def after_run(self, run_context, run_values) -> None:
        if self._float32_form is not None:
            self._float32_form.close()
            self._float32_form = None
        if self._current is not None:
            self._chooser.finished(*self._current)
            self._current = None


def _op_types(graph) -> set[str]:
    """The op types of a graph and of the functions in its library."""
    library = graph.as_graph_def().library.function
    return {op.type for op in graph.get_operations()} | {node.op for f in library for node in f.node_def}


def _feed_names(feeds) -> tuple:
    return tuple(sorted(getattr(key, "name", str(key)) for key in feeds))


def _trial_key(signature: tuple, feeds) -> tuple:
    """What a trial decides for: the run signature and the shapes fed (XLA compiles per shape)."""
    return signature, _feed_shapes(feeds)


def _feed_shapes(feeds) -> tuple:
    return tuple(_shape_or_type(value) for _, value in sorted(feeds.items(), key=lambda item: str(item[0])))


def _shape_or_type(value) -> Any:
    try:
        return tuple(np.shape(value))
    except ValueError:  # a ragged nested list
        return type(value).__name__


def _described(names: tuple) -> str:
    return names[0] + (f" and {len(names) - 1} more fetches" if len(names) > 1 else "")


class LoopServingUnit(tf.compat.v1.train.SessionRunHook):
    """Makes the session that a framework created (MonitoredTrainingSession's) serve runs of looped train ops,
    with the plan's dumps and checks built into the loop (`LoopServer`)."""

    def __init__(self, plan, graph_name: str) -> None:
        self._plan, self._graph_name = plan, graph_name
        self._served = None  # the change to the session's `run`, undone when the session ends

    def after_create_session(self, session, coord) -> None:
        server = LoopServer(session.graph, lambda looped: StepProbes.for_plan(self._plan, self._graph_name))
        config = session_config_of(session)
        self._served = server.install(session, caller_thread=bool(config and config.session_inter_op_thread_pool))

    def end(self, session) -> None:
        if self._served is not None:
            changes.undo(changes=[self._served])
            self._served = None


# The units that decide per run signature, or per fetch structure, what a run adds: where a session's units are all
# of these, a run whose additions are settled skips the hook driver (their `settled`).
SETTLING_UNITS: tuple[type, ...] = (FusionUnit, PrecisionUnit, KeepDtypeUnit)


def units_for(plan, graph_name: str | None = None) -> list:
    """The units that carry out the plan's run-time features around session runs, in the order their results
    are handled: host regions, the precision decision, the fusion decision and report, profiling, keep-dtype,
    numeric checks (which stop a failing step before its dump is written), dumps. `graph_name` names the dumps
    (default: after each fetch structure's first fetch)."""
    units: list = []
    regions = plan.feature(HostRegions)
    if regions is not None:
        units.append(HostRegionsUnit(regions, plan.host))
    mixed = plan.mixed_precision
    precision = PrecisionUnit(mixed) if mixed is not None and mixed.choice is PrecisionChoice.MEASURED else None
    if precision is not None:
        units.append(precision)
    fusion = plan.feature(GraphKernelFusion)
    if fusion is not None:
        units.append(FusionUnit(fusion, precision))
    trace = plan.feature(ProfilerTrace)
    if trace is not None:
        units.append(ProfilerUnit(trace))
    if plan.mixed_precision is not None:
        units.append(KeepDtypeUnit())
    checks = plan.feature(NumericChecks)
    if checks is not None:
        units.append(NumericCheckUnit(checks))
    dump = plan.feature(TensorDump)
    if dump is not None:
        units.append(TensorDumpUnit(dump, graph_name))
    return units
