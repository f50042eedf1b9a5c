"""The ops a session run computes: what dumps and numeric checks may look at without adding work."""

from __future__ import annotations

import tensorflow as tf


def fetched_operations(fetches) -> list:
    """The ops behind a run's fetches (tensors give their producing op)."""
    return [f if isinstance(f, tf.Operation) else f.op for f in tf.nest.flatten(fetches)
            if isinstance(f, (tf.Operation, tf.Tensor))]


def step_operations(graph, fetched_ops) -> list:
    """The ops a run of `fetched_ops` executes, outside any while loop (whose tensors cannot be fetched). Ops of
    other graphs (a loop body's, which an optimizer may list in the TRAIN_OP collection) are left out."""
    names = sorted({op.name for op in fetched_ops if op.graph is graph})
    if not names:
        return []
    nodes = tf.compat.v1.graph_util.extract_sub_graph(graph.as_graph_def(), names).node
    operations = [graph.get_operation_by_name(node.name) for node in nodes]
    return [op for op in operations if op._control_flow_context is None]


def kept_dtype_operations(graph, fetched_ops) -> list:
    """The ops of the step marked by npu_scope.keep_dtype_scope (attribute `_keep_dtype`)."""
    return [op for op in step_operations(graph, fetched_ops) if _keeps_dtype(op)]


def _keeps_dtype(op) -> bool:
    try:
        return bool(op.get_attr("_keep_dtype"))
    except ValueError:
        return False
