"""The keys by which the ranks find each other's part of a collective: (group key, instance key).

A group's key is derived from its name and members. An instance key is derived from what the collective is (its
group, kind, reduction, dtype and static shape) and how many such collectives its graph (the outermost one, for a
traced function or a loop body) already holds: what every rank that builds the same graph agrees on, however many
collectives each built before elsewhere (a rank-0-only op, another evaluate, a hook). TensorFlow keeps an
instance's dtype and shape from its first run for the process's lifetime, so two collectives share a key only when
they are alike; in eager code, alike collectives share one key and pair in the order they run. Alike collectives
of a partly unknown static shape share a key across graphs too, so they must run with one shape (as one op must
across its runs; TensorFlow names the instance when they do not). A copy of a built step (the iterations_per_loop
loop of the session door) keeps its original's keys; the copy and the original never run in the same step.

What each graph's collectives are is kept for messages (`collectives_of`: the run deadline's error in
collective_runtime.py).
"""

from __future__ import annotations

import collections
import dataclasses
import threading
import weakref
import zlib

import tensorflow as tf

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner

WORLD_KEY = 1


@dataclasses.dataclass
class _BuiltCollectives:
    """The collectives built in one graph: how many of each signature, and what each is, for messages."""

    counts: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    described: list[str] = dataclasses.field(default_factory=list)


_lock = threading.Lock()
# outermost graph -> _BuiltCollectives
BUILT = changes.ProcessState("the collectives built in each graph", Owner.RANKS, weakref.WeakKeyDictionary)


def stable_key(*parts) -> int:
    """A key every rank derives alike from `parts` (a group key away from the world group's)."""
    return WORLD_KEY + 1 + zlib.crc32(repr(parts).encode()) % (2**30)


def _outermost_graph():
    """The graph being built, or the one it is nested in (a traced function's, a loop body's): collectives of
    one step run side by side there, so their keys must differ."""
    graph = tf.compat.v1.get_default_graph()
    while getattr(graph, "outer_graph", None) is not None:
        graph = graph.outer_graph
    return graph


def instance_key(group_key: int, group_name: str, kind: str, value, *details) -> int:
    """The key of the next collective `kind` of `value` (dtype, static shape) in the group, as every rank derives
    it (see the module's note)."""
    shape = tuple(value.shape.as_list()) if value.shape.rank is not None else None
    signature = (group_key, kind, value.dtype.name, shape, *details)
    if tf.executing_eagerly():
        return stable_key(signature, 0)
    with _lock:
        built = changes.state(BUILT).setdefault(_outermost_graph(), _BuiltCollectives())
        key = stable_key(signature, built.counts[signature])
        built.counts[signature] += 1
        shown = "?" if shape is None else ", ".join("?" if size is None else str(size) for size in shape)
        built.described.append(
            f"{kind}{''.join(f' {d}' for d in details)} of {value.dtype.name}[{shown}] in group '{group_name}' "
            f"(instance key {key})"
        )
    return key


def collectives_of(graph) -> list[str]:
    """What the collectives built in `graph` (and the functions and loops nested in it) are, for messages."""
    while getattr(graph, "outer_graph", None) is not None:
        graph = graph.outer_graph
    with _lock:
        built = changes.state(BUILT).get(graph)
        return list(built.described) if built is not None else []
