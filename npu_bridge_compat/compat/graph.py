"""Graphs, ops and control flow: the private parts of TensorFlow's graph building that the run-time core needs.

Each function says what it does in the package's terms; all were checked on TensorFlow 2.15 and 2.21.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import tensorflow as tf
from tensorflow.python.framework.func_graph import FuncGraph
from tensorflow.python.ops.control_flow_v2_func_graphs import WhileBodyFuncGraph

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner


@contextlib.contextmanager
def building_in_finalized(graph) -> Iterator[None]:
    """Build in `graph` even when it is finalized, then finalize it again. MonitoredSession finalizes the training
    graph; the run-time units build their per-fetch ops and loop copies lazily, between runs of the same thread.
    TensorFlow offers no public way back (`Graph._unsafe_unfinalize`). Checked on TensorFlow 2.15 and 2.21."""
    finalized = graph.finalized
    if finalized:
        graph._unsafe_unfinalize()
    try:
        with graph.as_default():
            yield
    finally:
        if finalized:
            graph.finalize()


def outside_v1_control_flow(op) -> bool:
    """Whether `op` sits at its graph's own level, not inside a v1 cond or while loop. Checked on TensorFlow 2.15
    and 2.21."""
    return op._control_flow_context is None


def is_stateful(op) -> bool:
    """Whether `op`'s kernel has state (variable reads and updates, iterators, random ops). Checked on TensorFlow
    2.15 and 2.21."""
    return op._is_stateful


def op_type_is_stateful(op_type: str) -> bool:
    """Whether ops of the registered type `op_type` have state (False for a type this process does not know).
    Checked on TensorFlow 2.15 and 2.21."""
    from tensorflow.python.framework import op_def_registry

    op_def = op_def_registry.get(op_type)
    return bool(op_def and op_def.is_stateful)


def add_control_input(op, control) -> None:
    """Make the built `op` wait for `control` (tf.control_dependencies only covers ops built inside it). Checked
    on TensorFlow 2.15 and 2.21."""
    op._add_control_input(control)


def control_outputs(op) -> list:
    """The ops that wait for `op` through a control edge. Checked on TensorFlow 2.15 and 2.21."""
    return list(op._control_outputs)


def creation_order(op) -> int:
    """The position at which `op` was added to its graph. Checked on TensorFlow 2.15 and 2.21."""
    return op._id


def has_operation_named(graph, name: str) -> bool:
    """Whether `graph` holds an op called `name`, without building a lookup error. Checked on TensorFlow 2.15 and
    2.21."""
    return name in graph._nodes_by_name


def set_op_attribute(op, name: str, value) -> None:
    """Set the attribute `name` (an AttrValue) on the built `op`. Checked on TensorFlow 2.15 and 2.21."""
    op._set_attr(name, value)


def set_op_device(op, device: str) -> None:
    """Place the built `op` on `device`. Checked on TensorFlow 2.15 and 2.21."""
    op._set_device(device)


@contextlib.contextmanager
def attribute_scope(attributes: dict) -> Iterator[None]:
    """Every op built inside gets `attributes` (name -> AttrValue), as the adapter's scopes do. Checked on
    TensorFlow 2.15 and 2.21."""
    with tf.compat.v1.get_default_graph()._attr_scope(attributes):
        yield


def variable_graph_tensor(variable):
    """The tensor a fetch of `variable` in a TF1 session reads. Checked on TensorFlow 2.15 and 2.21."""
    return variable._as_graph_element()


def is_function_graph(graph) -> bool:
    """Whether `graph` is the graph of a traced function (tf.function, Keras' train function)."""
    return isinstance(graph, FuncGraph)


def is_while_body_graph(graph) -> bool:
    """Whether `graph` is the body of a v2 while loop (Keras' steps_per_execution loop). Checked on TensorFlow 2.15
    and 2.21."""
    return isinstance(graph, WhileBodyFuncGraph)


_control_flow_lock = threading.Lock()
CONTROL_FLOW_V2 = "TensorFlow control flow v2"


@contextlib.contextmanager
def v1_control_flow(owner: Owner) -> Iterator[None]:
    """Build with v1 control flow (tf.while_loop makes Enter/Exit frames), whatever the process uses. The switch
    is process-wide in TensorFlow (`tf.compat.v1.disable_control_flow_v2`): it is changed through the changes
    registry (listed while it lasts), under a lock, and put back at once. Where v1 control flow is already in use
    (a TF 1.15 program's), nothing changes. Checked on TensorFlow 2.15 and 2.21."""
    with _control_flow_lock:
        if not tf.compat.v1.control_flow_v2_enabled():
            yield
            return
        change = changes.change_setting(
            CONTROL_FLOW_V2,
            False,
            read=tf.compat.v1.control_flow_v2_enabled,
            write=_set_control_flow_v2,
            owner=owner,
            reason="the N-step loop is a v1 while loop (Enter/Exit frames) while it is built",
        )
        try:
            yield
        finally:
            changes.undo(changes=[change])


def _set_control_flow_v2(enabled: bool) -> None:
    if enabled:
        tf.compat.v1.enable_control_flow_v2()
    else:
        tf.compat.v1.disable_control_flow_v2()
