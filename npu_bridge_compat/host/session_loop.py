"""N iterations of an already built train op in one session run (util.set_iteration_per_loop).

Session scripts build `train_op` first and ask for the loop afterwards, so the step cannot be built inside a loop
body as the Estimator door does. Instead the part of the graph that `train_op` (and any tensor fetched with it)
depends on is copied into a while-loop body with `import_graph_def`. The graph's state stays shared: variables,
iterators, tables, queues and placeholders are not copied but mapped to the originals, so each iteration reads
and updates the same variables and pulls the next batch from the same iterator. Fetched tensors are carried out
of the loop and hold the last iteration's values, as on the NPU. Fed placeholders keep their fed value for all N
iterations of a run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import threading
from typing import Any, Iterator, Sequence

import tensorflow as tf
from tensorflow.core.framework import graph_pb2
from tensorflow.python.ops import control_flow_util

from npu_bridge_compat.host.step_probes import StepProbes
from npu_bridge_compat.host.subgraph import ancestors_among, live_operations, original_name

# Ops whose outputs are graph state (or feeds): mapped to the originals instead of being copied.
STATE_OPS = frozenset({
    "VarHandleOp", "VariableV2", "Variable", "VarIsInitializedOp", "IteratorV2", "Iterator", "AnonymousIteratorV2",
    "AnonymousIteratorV3", "OneShotIterator", "MultiDeviceIterator", "HashTable", "HashTableV2", "MutableHashTable", "MutableHashTableV2",
    "MutableHashTableOfTensorsV2", "MutableDenseHashTableV2", "FIFOQueueV2", "PaddingFIFOQueueV2",
    "RandomShuffleQueueV2", "PriorityQueueV2", "Placeholder", "PlaceholderWithDefault", "MutexV2",
})
ITERATOR_OPS = frozenset({"IteratorV2", "Iterator", "AnonymousIteratorV2", "AnonymousIteratorV3", "OneShotIterator",
                          "MultiDeviceIterator"})
# Steps up to this many ops run in the caller's thread ("only for simple graphs", TensorFlow's RunOptions says:
# it gives up inter-op parallelism within a step, and saves a thread hand-off per op).
SIMPLE_STEP_OPS = 300


@dataclasses.dataclass
class LoopedTrainOp:
    """A train op that runs `iterations` times per session run, and the loops built for it so far."""

    train_op: Any
    iterations: Any  # an int64 variable holding N
    loop_op: Any  # the loop that fetches nothing else
    variants: dict = dataclasses.field(default_factory=dict)  # fetched tensor names -> (loop op, carried)

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

    def loop_fetching(self, tensors: Sequence[Any], probes: StepProbes | None = None) -> tuple[Any, list]:
        """The loop op that also carries `tensors` out (their last-iteration values), with the dumps and checks
        of `probes` in every iteration; built once per set."""
        key = (tuple(tensor.name for tensor in tensors), probes is not None)
        if key not in self.variants:
            self.variants[key] = build_loop(self.train_op, self.iterations, list(tensors), probes)
        return self.variants[key]


def build_loop(train_op, iterations, carried: list, probes: StepProbes | None = None) -> tuple[Any, list]:
    """A loop running a copy of `train_op`'s step `iterations` times; returns (loop op, carried tensors). With
    `probes`, every iteration dumps and checks its copy of the step, named as the original ops, and a recorded
    non-finite output ends the loop."""
    graph = train_op.graph
    graph_def = graph.as_graph_def()
    wanted = [train_op.name] + [tensor.op.name for tensor in carried]
    step = tf.compat.v1.graph_util.extract_sub_graph(graph_def, wanted)
    state = {node.name for node in step.node if node.op in STATE_OPS}
    body_def = graph_pb2.GraphDef(versions=graph_def.versions, library=graph_def.library)
    for node in step.node:
        if node.name not in state:
            copy = body_def.node.add()
            copy.CopyFrom(node)
            copy.attr.pop("_class", None)  # colocation with state nodes that are not copied
    input_map = {output.name: output for name in state for output in graph.get_operation_by_name(name).outputs}

    def body(index, *_):
        first_new_op = len(graph.get_operations())
        returned = tf.compat.v1.import_graph_def(
            body_def, input_map=input_map, return_elements=[train_op.name] + [t.name for t in carried],
            name="npu_iteration")
        probe_ops = []
        if probes is not None:
            scope = returned[0].name[:-len(train_op.name)]
            imported = ancestors_among([returned[0], *(t.op for t in returned[1:])],
                                       graph.get_operations()[first_new_op:])
            # The copies of the ops at the step's own level (not in its v1 conds or loops), with values every run.
            ran = [op for op in live_operations(imported)
                   if graph.get_operation_by_name(original_name(op, scope))._control_flow_context is None]
            probe_ops = probes.attach(ran, imported_as=scope)
        with tf.control_dependencies([returned[0], *probe_ops]):
            return (index + 1, *[tf.identity(value) for value in returned[1:]])

    def condition(index, *_):
        if probes is None or probes.failure is None:
            return index < count
        return (index < count) & (probes.failure[0] < 0)

    with graph.as_default(), tf.name_scope("npu_iterations_per_loop"), _control_flow_v1():
        initial = [tf.zeros([], t.dtype) if t.dtype != tf.string else tf.constant("") for t in carried]
        count = tf.convert_to_tensor(iterations)  # read once per run, not per iteration
        outputs = tf.compat.v1.while_loop(
            condition,
            body,
            [tf.constant(0, tf.int64), *initial],
            shape_invariants=[tf.TensorShape([])] + [tf.TensorShape(None)] * len(carried),
            parallel_iterations=1,
            back_prop=False,
        )
        outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
        loop_op = tf.group(outputs[0], name="IterationOp")
    return loop_op, list(outputs[1:])


_toggle_lock = threading.Lock()


@contextlib.contextmanager
def _control_flow_v1() -> Iterator[None]:
    """Build this loop with v1 control flow, whatever the process uses: the imported step then runs in the
    loop's frame directly (measured about 15% faster per iteration than a lowered v2 loop), and ref variables of
    TF1 scripts can enter it."""
    with _toggle_lock:
        saved = control_flow_util.ENABLE_CONTROL_FLOW_V2
        control_flow_util.ENABLE_CONTROL_FLOW_V2 = False
        try:
            yield
        finally:
            control_flow_util.ENABLE_CONTROL_FLOW_V2 = saved
