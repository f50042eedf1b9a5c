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

import tensorflow as tf
from tensorflow.python.framework.func_graph import FuncGraph
from tensorflow.python.ops.control_flow_v2_func_graphs import WhileBodyFuncGraph

from npu_bridge_compat.host.features import HostRegions, NumericChecks, ProfilerTrace, TensorDump
from npu_bridge_compat.runtime.dump import TensorDumper
from npu_bridge_compat.runtime.graph import (
    fetched_operations,
    kept_dtype_operations,
    keeping_dtype,
    open_graph,
    step_operations,
    warn_kept_in_loop,
)
from npu_bridge_compat.runtime.host_regions import host_region_ops, keep_on_host
from npu_bridge_compat.runtime.loop import LoopServer, looped_train_ops
from npu_bridge_compat.runtime.numeric import numeric_check
from npu_bridge_compat.runtime.probes import StepProbes
from npu_bridge_compat.runtime.profiling import profiler_trace

SessionRunArgs = tf.compat.v1.train.SessionRunArgs


def _run_of(run_context) -> tuple[Any, tuple, list, Any]:
    """(graph, fetch key, fetched ops, looped train op or None) of the run a hook is asked about."""
    graph = run_context.session.graph
    fetched = fetched_operations(run_context.original_args.fetches)
    loops = {looped.loop_op: looped for looped in looped_train_ops(graph)}
    looped = next((loops[op] for op in fetched if op in loops), None)
    return graph, tuple(op.name for op in fetched), fetched, looped


class KeepDtypeUnit(tf.compat.v1.train.SessionRunHook):
    """Ops under keep_dtype_scope stay float32 under grappler's mixed precision: they become targets of the runs
    that compute them, and grappler never converts a node a run must preserve. Targets return nothing, so this
    costs no copy; only ops the run computes anyway are named, so nothing extra runs."""

    def __init__(self) -> None:
        self._kept: dict[tuple, list] = {}
        self._warned_loops: set[str] = set()

    def before_run(self, run_context):
        graph, key, fetched, looped = _run_of(run_context)
        if looped is not None:
            self._warn_in_loop(graph, looped)
            return None
        if key not in self._kept:
            self._kept[key] = kept_dtype_operations(graph, fetched) if fetched else []
        return SessionRunArgs(self._kept[key]) if self._kept[key] else None

    def _warn_in_loop(self, graph, looped) -> None:
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
    while isinstance(outer, FuncGraph):
        if isinstance(outer, WhileBodyFuncGraph):  # steps_per_execution > 1
            warn_kept_in_loop(kept, "Keras' steps_per_execution loop")
            return
        outer = outer.outer_graph
    if isinstance(getattr(graph, "outer_graph", None), FuncGraph):
        warn_kept_in_loop(kept, "Keras 3's step function, which its train function calls",
                          "Keras 2 (tf_keras, TF_USE_LEGACY_KERAS=1) or the session door keeps them in float32")
        return
    graph.control_outputs.extend(op for op in kept if op not in graph.control_outputs)


class NumericCheckUnit(tf.compat.v1.train.SessionRunHook):
    """Finiteness flags over the tensors each fetch structure computes; a non-finite output stops the run with
    NonFiniteValueError naming the op and the step (counted per fetch structure, as the dumps count), after its
    inputs were saved under `dump_path` (if any)."""

    def __init__(self, feature: NumericChecks) -> None:
        self._dump_path = feature.dump_path
        self._checks: dict[tuple, list] = {}  # fetch names -> [check or None, steps run so far]
        self._current: list | None = None

    def before_run(self, run_context):
        graph, key, fetched, looped = _run_of(run_context)
        self._current = None
        if looped is not None or not fetched:
            return None
        if key not in self._checks:
            with open_graph(graph):
                self._checks[key] = [numeric_check(graph, fetched, self._dump_path), 0]
        entry = self._checks[key]
        check, step = entry
        entry[1] += 1
        if check is None:
            return None
        self._current = [check, step]
        return SessionRunArgs(check.flags)

    def after_run(self, run_context, run_values) -> None:
        if self._current is not None:
            check, step = self._current
            check.raise_if_non_finite(run_values.results, step)


class TensorDumpUnit(tf.compat.v1.train.SessionRunHook):
    """Dumps the selected steps of each fetch structure, named `graph_name` (or after the structure's first
    fetch): its tensors are fetched with the step."""

    def __init__(self, feature: TensorDump, graph_name: str | None = None) -> None:
        self._feature = feature
        self._graph_name = graph_name
        self._dumpers: dict[tuple, list] = {}  # fetch names -> [dumper, steps run so far]
        self._current: list | None = None

    def before_run(self, run_context):
        graph, key, fetched, looped = _run_of(run_context)
        self._current = None
        if looped is not None or not fetched:
            return None
        if key not in self._dumpers:
            self._dumpers[key] = [TensorDumper(self._feature, self._graph_name or key[0]), 0]
        entry = self._dumpers[key]
        dumper, step = entry
        entry[1] += 1
        wanted = dumper.fetches(graph, fetched) if dumper.selects(step) else {}
        if not wanted:
            return None
        self._current = [dumper, step]
        return SessionRunArgs(wanted)

    def after_run(self, run_context, run_values) -> None:
        if self._current is not None:
            dumper, step = self._current
            dumper.write(step, run_values.results)


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


class LoopServingUnit(tf.compat.v1.train.SessionRunHook):
    """Makes the session that a framework created (MonitoredTrainingSession's) serve runs of looped train ops,
    with the plan's dumps and checks built into the loop (`LoopServer`)."""

    def __init__(self, plan, graph_name: str) -> None:
        self._plan, self._graph_name = plan, graph_name

    def after_create_session(self, session, coord) -> None:
        server = LoopServer(session.graph, lambda looped: StepProbes.for_plan(self._plan, self._graph_name))
        server.install(session, caller_thread=bool(session._config and session._config.session_inter_op_thread_pool))


def units_for(plan, graph_name: str | None = None) -> list:
    """The units that carry out the plan's run-time features around session runs, in the order their results
    are handled: host regions, profiling, keep-dtype, numeric checks (which stop a failing step before its dump
    is written), dumps. `graph_name` names the dumps (default: after each fetch structure's first fetch)."""
    units: list = []
    regions = plan.feature(HostRegions)
    if regions is not None:
        units.append(HostRegionsUnit(regions, plan.host))
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
