"""The N-step loop: the host form of the NPU's iterations_per_loop, shared by the Estimator and session doors.

The training step is built once, in the ordinary graph, as on the NPU (where model_fn's graph is what the device
loops over). `loop_train_op` makes an op that runs a copy of that step N times per session run: the part of the
graph the train op depends on is imported into a while-loop body with `import_graph_def`, and the graph's state
stays shared: variables, iterators, tables, queues and placeholders are not copied but mapped to the originals, so
each iteration reads and updates the same variables and pulls the next batch from the same iterator (global_step
grows by N per run). Iterations run strictly one after another.

A run that fetches the looped train op is served by a `LoopServer`: every other tensor it fetches (by a hook's
SessionRunArgs, by name, by the user) comes from the loop. A tensor computed from the step's values (the loss, a
learning rate, an accuracy, a summary) holds its last iteration's value, as on the NPU; a tensor that only reads
state (global_step, a variable) is read after the loop. The doors attach the server to their session: NPUSession
calls it on every run; NPUEstimator installs it on the session MonitoredTrainingSession creates.
"""

from __future__ import annotations

import dataclasses
import functools
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf
from tensorflow.core.framework import graph_pb2
from tensorflow.core.protobuf import config_pb2

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.compat.graph import (
    add_control_input,
    building_in_finalized,
    outside_v1_control_flow,
    v1_control_flow,
    variable_graph_tensor,
)
from npu_bridge_compat.distributed.collective_runtime import collective_run_deadline_ms
from npu_bridge_compat.runtime.graph import (
    ancestors_among,
    fetch_leaves,
    live_operations,
    map_fetches,
    original_name,
)
from npu_bridge_compat.runtime.probes import StepProbes

LOOP_SCOPE = "npu_iterations_per_loop"

# Ops whose outputs are graph state (or feeds): mapped to the originals instead of being copied.
STATE_OPS = frozenset(
    {
        "VarHandleOp",
        "VariableV2",
        "Variable",
        "VarIsInitializedOp",
        "IteratorV2",
        "Iterator",
        "AnonymousIteratorV2",
        "AnonymousIteratorV3",
        "OneShotIterator",
        "MultiDeviceIterator",
        "HashTable",
        "HashTableV2",
        "MutableHashTable",
        "MutableHashTableV2",
        "MutableHashTableOfTensorsV2",
        "MutableDenseHashTableV2",
        "FIFOQueueV2",
        "PaddingFIFOQueueV2",
        "RandomShuffleQueueV2",
        "PriorityQueueV2",
        "Placeholder",
        "PlaceholderWithDefault",
        "MutexV2",
    }
)
ITERATOR_OPS = frozenset(
    {"IteratorV2", "Iterator", "AnonymousIteratorV2", "AnonymousIteratorV3", "OneShotIterator", "MultiDeviceIterator"}
)
# Ops that only read state or hold a constant: a fetched tensor that shares no other op with the step does not
# depend on the step's per-iteration values, so it is read after the loop.
_READS = frozenset({"Const", "ReadVariableOp", "Identity", "VarIsInitializedOp"}) | STATE_OPS
# Steps up to this many ops run in the caller's thread ("only for simple graphs", TensorFlow's RunOptions says:
# it gives up inter-op parallelism within a step, and saves a thread hand-off per op).
SIMPLE_STEP_OPS = 300


@dataclasses.dataclass(frozen=True)
class LoopVariant:
    """One loop of a looped train op: the op that runs it, the values of what it was built to yield, and, with
    numeric checks, the first failure its steps recorded (read after the loop)."""

    op: Any
    values: list
    failure: Any = None


@dataclasses.dataclass
class LoopedTrainOp:
    """A train op that runs `iterations` times per session run, and the loops built for it so far."""

    train_op: Any
    iterations: Any  # a tensor or variable holding N, read once per run
    loop_op: Any  # the loop that fetches nothing else
    most_steps: int = 1  # the most iterations a run makes, as the door last set it (run deadlines scale with it)
    variants: dict = dataclasses.field(default_factory=dict)  # (fetched names, probes?) -> LoopVariant

    @functools.cached_property
    def _step_nodes(self) -> list:
        graph_def = self.train_op.graph.as_graph_def()
        return list(tf.compat.v1.graph_util.extract_sub_graph(graph_def, [self.train_op.name]).node)

    @property
    def feeds_its_data(self) -> bool:
        """Whether the step has no iterator: every iteration would then train on the same fed batch."""
        return not any(node.op in ITERATOR_OPS for node in self._step_nodes)

    @property
    def is_simple(self) -> bool:
        """Whether the step is small enough to run in the caller's thread."""
        return len(self._step_nodes) <= SIMPLE_STEP_OPS

    def loop_fetching(self, tensors: Sequence[Any], probes: StepProbes | None = None) -> LoopVariant:
        """The loop op that also yields `tensors` (last-iteration or after-loop values, see the module), with
        the dumps and checks of `probes` in every iteration; built once per set."""
        key = (tuple(tensor.name for tensor in tensors), probes is not None)
        if key not in self.variants:
            with building_in_finalized(self.train_op.graph):
                self.variants[key] = build_loop(self.train_op, self.iterations, list(tensors), probes)
        return self.variants[key]


# The looped train ops of each graph. Not a graph collection: TensorFlow writes collections into every
# checkpoint's meta graph and warns about Python objects it cannot serialize.
LOOPS = changes.ProcessState("the looped train ops of each graph", Owner.STEP_LOOP, weakref.WeakKeyDictionary)


def loop_train_op(train_op, iterations, most_steps: int) -> LoopedTrainOp:
    """Loop `train_op`'s step `iterations` times per run (a tensor or variable, read once per run, at most
    `most_steps`); the result is registered with the graph, where every LoopServer finds it."""
    looped = LoopedTrainOp(
        train_op=train_op, iterations=iterations, loop_op=build_loop(train_op, iterations, []).op, most_steps=most_steps
    )
    changes.state(LOOPS).setdefault(train_op.graph, []).append(looped)
    return looped


def looped_train_ops(graph) -> list[LoopedTrainOp]:
    return list(changes.state(LOOPS).get(graph, ()))


def build_loop(train_op, iterations, fetched: list, probes: StepProbes | None = None) -> LoopVariant:
    """A loop running a copy of `train_op`'s step `iterations` times, yielding the values of `fetched`.
    With `probes`, every iteration dumps and checks its copy of the step, named as the original ops, and a
    recorded non-finite output ends the loop."""
    graph = train_op.graph
    graph_def = graph.as_graph_def()
    operations = graph.get_operations()
    step_ops = set(ancestors_among([train_op], operations, stop=_is_state))
    in_loop = [t for t in fetched if _uses_the_step(t.op, step_ops, operations)]
    body_def, input_map = _importable(graph, graph_def, [train_op.name] + [t.op.name for t in in_loop])

    def body(index, *_):
        first_new_op = len(graph.get_operations())
        returned = tf.compat.v1.import_graph_def(
            body_def,
            input_map=input_map,
            return_elements=[train_op.name] + [t.name for t in in_loop],
            name="npu_iteration",
        )
        probe_ops = []
        if probes is not None:
            scope = returned[0].name[: -len(train_op.name)]
            imported = ancestors_among(
                [returned[0], *(t.op for t in returned[1:])], graph.get_operations()[first_new_op:]
            )
            # The copies of the ops at the step's own level (not in its v1 conds or loops), with values every run.
            ran = [
                op
                for op in live_operations(imported)
                if outside_v1_control_flow(graph.get_operation_by_name(original_name(op, scope)))
            ]
            probe_ops = probes.attach(ran, imported_as=scope)
        with tf.control_dependencies([returned[0], *probe_ops]):
            return (index + 1, *[tf.identity(value) for value in returned[1:]])

    def condition(index, *_):
        if probes is None or probes.failure is None:
            return index < count
        return (index < count) & (probes.failure[0] < 0)

    with graph.as_default(), tf.name_scope(LOOP_SCOPE), v1_control_flow(Owner.STEP_LOOP):
        initial = [tf.zeros([], t.dtype) if t.dtype != tf.string else tf.constant("") for t in in_loop]
        count = tf.convert_to_tensor(iterations)  # read once per run, not per iteration
        outputs = tf.compat.v1.while_loop(
            condition,
            body,
            [tf.constant(0, count.dtype), *initial],
            shape_invariants=[tf.TensorShape([])] + [tf.TensorShape(None)] * len(in_loop),
            parallel_iterations=1,
            back_prop=False,
        )
        outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
        loop_op = tf.group(outputs[0], name="IterationOp")
        values = dict(zip((t.ref() for t in in_loop), outputs[1:]))
        after = [t for t in fetched if t.ref() not in values]
        values.update(zip((t.ref() for t in after), _read_after(loop_op, graph, graph_def, after)))
        failure = None
        if probes is not None and probes.failure is not None:
            with tf.control_dependencies([loop_op]):
                failure = probes.failure.read_value()
    return LoopVariant(loop_op, [values[t.ref()] for t in fetched], failure)


def _is_state(op) -> bool:
    return op.type in STATE_OPS


def _uses_the_step(op, step_ops: set, operations: list) -> bool:
    """Whether `op` computes from a value of the step (not only from state it reads, or constants)."""
    return any(
        other in step_ops and other.type not in _READS for other in ancestors_among([op], operations, stop=_is_state)
    )


def _importable(graph, graph_def, wanted: list) -> tuple[Any, dict]:
    """The GraphDef of what `wanted` (node names) computes, without its state nodes, and the input map that
    points the copy at the original state."""
    step = tf.compat.v1.graph_util.extract_sub_graph(graph_def, wanted)
    state = {node.name for node in step.node if node.op in STATE_OPS}
    copied = graph_pb2.GraphDef(versions=graph_def.versions, library=graph_def.library)
    for node in step.node:
        if node.name not in state:
            copy = copied.node.add()
            copy.CopyFrom(node)
            copy.attr.pop("_class", None)  # colocation with state nodes that are not copied
    input_map = {output.name: output for name in state for output in graph.get_operation_by_name(name).outputs}
    return copied, input_map


def _read_after(loop_op, graph, graph_def, tensors: list) -> list:
    """`tensors` computed again once the loop has run (they read state the loop updates)."""
    if not tensors:
        return []
    computed = [t for t in tensors if not _is_state(t.op)]
    values = {}
    if computed:
        copied, input_map = _importable(graph, graph_def, [t.op.name for t in computed])
        first_new_op = len(graph.get_operations())
        returned = tf.compat.v1.import_graph_def(
            copied, input_map=input_map, return_elements=[t.name for t in computed], name="npu_after_loop"
        )
        imported = set(graph.get_operations()[first_new_op:])
        for op in imported:  # the copy's first ops wait for the loop
            if not any(i.op in imported for i in op.inputs):
                add_control_input(op, loop_op)
        values.update(zip((t.ref() for t in computed), returned))
    with tf.control_dependencies([loop_op]):
        values.update((t.ref(), tf.identity(t)) for t in tensors if _is_state(t.op))  # a TF1 variable, a feed
    return [values[t.ref()] for t in tensors]


class LoopServer:
    """Serves the runs of one graph whose fetches include a looped train op: the loop op is the variant that
    yields every other fetched tensor (and Variable, and name) from the loop, with the dumps and checks
    `probes_for(looped)` asks for built into every iteration. After a loop with numeric checks ends early, the
    run raises NonFiniteValueError naming the step and op."""

    def __init__(self, graph, probes_for: Callable[[LoopedTrainOp], StepProbes | None]) -> None:
        self._graph = graph
        self._probes_for = probes_for
        self._probes: dict[str, StepProbes | None] = {}  # train op name -> probes built into its loops
        self._initialised: set = set()  # refs of the probes' variables initialised so far
        self._version = -1  # the graph version the loops below were read at
        self._by_op: dict = {}  # loop op -> LoopedTrainOp

    @property
    def serves_any(self) -> bool:
        """Whether the graph has looped train ops (read again only when the graph changed)."""
        if self._graph.version != self._version:
            self._version = self._graph.version
            self._by_op = {looped.loop_op: looped for looped in looped_train_ops(self._graph)}
        return bool(self._by_op)

    def looped_op_in(self, fetches) -> LoopedTrainOp | None:
        """The looped train op a run of `fetches` executes, if any."""
        if not self.serves_any:
            return None
        by_op = self._by_op
        for fetch in fetch_leaves(fetches):
            element = self._graph.as_graph_element(fetch) if isinstance(fetch, str) else fetch
            if isinstance(element, tf.Operation) and element in by_op:
                return by_op[element]
        return None

    def run(self, plain_run, fetches, feed_dict=None, options=None, run_metadata=None, caller_thread: bool = False):
        """Run `fetches` through `plain_run` (a session's own run); `caller_thread`: the session has configured
        thread pools, so a looped run of a small step may run in the calling thread."""
        looped = self.looped_op_in(fetches)
        if looped is None:
            return plain_run(fetches, feed_dict, options, run_metadata)
        if caller_thread and looped.is_simple:
            options = _in_caller_thread(options)
        options = _with_deadline_for_steps(options, looped.most_steps)
        probes = self._probes_of(looped)
        elements = [self._graph.as_graph_element(f) if isinstance(f, str) else f for f in fetch_leaves(fetches)]
        tensors = list({id(t): t for t in (_as_tensor(e) for e in elements) if t is not None}.values())
        if not tensors and probes is None:
            return plain_run(fetches, feed_dict, options, run_metadata)
        variant = looped.loop_fetching(tensors, probes)
        replacement = {t.ref(): value for t, value in zip(tensors, variant.values)}

        def served(fetch):
            element = self._graph.as_graph_element(fetch) if isinstance(fetch, str) else fetch
            if element is looped.loop_op:
                return variant.op
            tensor = _as_tensor(element)
            return replacement[tensor.ref()] if tensor is not None else fetch

        rewritten = map_fetches(fetches, served)
        if probes is not None:
            self._initialise(plain_run, probes.variables)
        if variant.failure is None:
            return plain_run(rewritten, feed_dict, options, run_metadata)
        results, failure = plain_run((rewritten, variant.failure), feed_dict, options, run_metadata)
        probes.raise_if_failed(failure)
        return results

    def install(self, session, caller_thread: bool) -> changes.Change:
        """Serve every run of `session`, a plain session that a framework created (MonitoredTrainingSession
        offers no choice of session class; its hooks receive the session it made), until the returned change is
        undone."""
        plain_run = session.run

        def run(fetches, feed_dict=None, options=None, run_metadata=None):
            return self.run(plain_run, fetches, feed_dict, options, run_metadata, caller_thread)

        return changes.replace_attribute(
            session,
            "run",
            run,
            owner=Owner.STEP_LOOP,
            reason="fetches made with a looped train op are answered from the loop (last iteration's values)",
            label=f"<{type(session).__name__}>",
        )

    def _probes_of(self, looped: LoopedTrainOp) -> StepProbes | None:
        name = looped.train_op.name
        if name not in self._probes:
            with building_in_finalized(self._graph):
                self._probes[name] = self._probes_for(looped)
        return self._probes[name]

    def _initialise(self, plain_run, variables: list) -> None:
        """Initialise the variables the probes made after the script ran its initialisers."""
        new = [v for v in variables if v.ref() not in self._initialised]
        if new:
            plain_run([v.initializer for v in new])
            self._initialised.update(v.ref() for v in new)


def _as_tensor(element):
    """The tensor a fetched element stands for (a Variable's value), or None for ops and other fetches."""
    if isinstance(element, tf.Tensor):
        return element
    if isinstance(element, tf.Variable):
        return variable_graph_tensor(element)
    return None


def _with_deadline_for_steps(options, steps: int):
    """Run options whose deadline covers `steps` steps where the rank's sessions bound each run (several ranks:
    HCCL_EXEC_TIMEOUT per step), unless the caller chose a deadline of its own."""
    per_step_ms = collective_run_deadline_ms()
    if not per_step_ms or steps <= 1 or (options is not None and options.timeout_in_ms):
        return options
    chosen = config_pb2.RunOptions()
    if options is not None:
        chosen.CopyFrom(options)
    chosen.timeout_in_ms = per_step_ms * steps
    return chosen


def _in_caller_thread(options):
    """Run options that execute the run in the calling thread. A loop runs its iterations one after another
    anyway; without a thread hand-off per op a small step runs faster on a few cores
    (benchmarks/session_iterations_per_loop.py measures it)."""
    chosen = config_pb2.RunOptions()
    if options is not None:
        chosen.CopyFrom(options)
    chosen.inter_op_thread_pool = -1  # TensorFlow's value for "the caller's thread"
    return chosen
