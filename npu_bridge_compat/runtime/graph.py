"""The ops a training step computes (what dumps, numeric checks and keep-dtype may look at without adding work),
and the structure of a run's fetches."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import tensorflow as tf

from npu_bridge_compat.compat.graph import is_stateful, outside_v1_control_flow
from npu_bridge_compat.errors import NpuCompatWarning, warn


def map_fetches(fetches, function: Callable[[Any], Any]):
    """`fetches` with `function` applied to every leaf, keeping the structure: lists, tuples, named tuples and
    mappings of any keys (MonitoredSession keys its fetches by hook objects, which tf.nest cannot sort)."""
    if isinstance(fetches, (list, tuple)):
        mapped = [map_fetches(item, function) for item in fetches]
        if isinstance(fetches, list):
            return mapped
        return type(fetches)(*mapped) if hasattr(fetches, "_fields") else type(fetches)(mapped)
    if isinstance(fetches, dict):
        return type(fetches)((key, map_fetches(value, function)) for key, value in fetches.items())
    return function(fetches)


def fetch_leaves(fetches) -> list:
    """The leaves of a fetch structure, in order."""
    leaves: list = []
    map_fetches(fetches, leaves.append)
    return leaves


def fetched_operations(fetches) -> list:
    """The ops behind a run's fetches (tensors give their producing op)."""
    return [
        f if isinstance(f, tf.Operation) else f.op
        for f in fetch_leaves(fetches)
        if isinstance(f, (tf.Operation, tf.Tensor))
    ]


def step_operations(graph, fetched_ops) -> list:
    """The fetchable ops a run of `fetched_ops` executes: outside the step's v1 conds and loops, with values in
    every run (`live_operations`), and not marked unfetchable (a v2 cond's If op: its values come out through the
    Identity ops after it). Ops of other graphs (a loop body's, which an optimizer may list in the TRAIN_OP
    collection) are left out."""
    names = sorted({op.name for op in fetched_ops if op.graph is graph})
    if not names:
        return []
    nodes = tf.compat.v1.graph_util.extract_sub_graph(graph.as_graph_def(), names).node
    operations = [graph.get_operation_by_name(node.name) for node in nodes]
    return [op for op in live_operations(operations) if outside_v1_control_flow(op) and graph.is_fetchable(op)]


# v1 control flow: a Merge takes the outputs of both branches of a cond, one of which has no value ("dead").
MERGE_OPS = frozenset({"Merge", "RefMerge"})


def live_operations(operations: list) -> list:
    """Those of `operations` (in creation order) that have values in every run. In v1 control flow the untaken
    output of a Switch, and every op it feeds up to the next Merge, has none ("dead"); fetching or probing such an
    op fails the run. (A Merge's own inputs are such values too: see MERGE_OPS.)"""
    dead = set()
    for op in operations:
        if (
            op.type in ("Switch", "RefSwitch")
            or op.type not in MERGE_OPS
            and (any(i.op in dead for i in op.inputs) or any(c in dead for c in op.control_inputs))
        ):
            dead.add(op)
    return [op for op in operations if op not in dead]


def ancestors_among(targets: Iterable, candidates: Iterable, stop: Callable[[Any], bool] | None = None) -> list:
    """The `candidates` that `targets` (ops) depend on, themselves included, in the candidates' order: the ops of
    a step body that really run, where `candidates` are the ops the body built. The walk does not go past ops
    for which `stop(op)` holds (they are included)."""
    candidates = list(candidates)
    among = set(candidates)
    seen, pending = set(), [op for op in targets if op in among]
    while pending:
        op = pending.pop()
        if op in seen:
            continue
        seen.add(op)
        if stop is not None and stop(op):
            continue
        pending.extend(i.op for i in op.inputs if i.op in among)
        pending.extend(c for c in op.control_inputs if c in among)
    return [op for op in candidates if op in seen]


def original_name(op, imported_as: str = "") -> str:
    """The op's name without the scope `imported_as` that a copy of the step was imported under."""
    return op.name[len(imported_as) :] if imported_as and op.name.startswith(imported_as) else op.name


def kept_dtype_operations(graph, fetched_ops) -> list:
    """The ops of the step marked by npu_scope.keep_dtype_scope (attribute `_keep_dtype`)."""
    return keeping_dtype(step_operations(graph, fetched_ops))


def keeping_dtype(operations: Iterable) -> list:
    """Those of `operations` marked by npu_scope.keep_dtype_scope (attribute `_keep_dtype`) that mixed precision
    could convert: stateless, with a floating-point output (variable reads and captured inputs are left out)."""
    return [
        op
        for op in operations
        if _keeps_dtype(op) and not is_stateful(op) and any(t.dtype.is_floating for t in op.outputs)
    ]


def warn_kept_in_loop(kept: list, loop: str, remedy: str = "use iterations_per_loop=1 to keep them in float32") -> None:
    """Say that the keep_dtype_scope ops `kept` follow mixed precision inside `loop` (a loop of steps, or a
    function another one calls), and what keeps them in float32."""
    if kept:
        warn(
            f"keep_dtype_scope cannot keep {[op.name for op in kept]} in float32 inside {loop}: grappler's "
            "mixed-precision pass spares only ops a session run fetches or the outermost function returns, and "
            f"these are neither. They follow mixed precision; {remedy}.",
            NpuCompatWarning,
        )


def _keeps_dtype(op) -> bool:
    try:
        return bool(op.get_attr("_keep_dtype"))
    except ValueError:
        return False
