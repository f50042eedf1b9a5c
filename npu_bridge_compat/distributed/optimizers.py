"""The adapter's distributed optimizers: gradients averaged over the ranks before they are applied.

A dense gradient becomes allreduce-sum / RANK_SIZE; an `IndexedSlices` gradient (embedding lookups) has its values
and indices allgathered instead, the values divided by RANK_SIZE, which is the same average without densifying.
With one rank every gradient is left as it is.

Fusion. As HCCL fuses the gradients' allreduces, the dense gradients of one dtype travel in one flat allreduce
per segment: by default one segment; `set_split_strategy_by_idx` / `_by_size` (hccl.split.api) cut them where
HCCL would. A sum of concatenated tensors is the concatenation of their sums, so fusion changes no value; it
saves a collective's fixed cost per gradient (measured in benchmarks/distributed_ranks.py).
"""

from __future__ import annotations

import itertools

import tensorflow as tf

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.distributed import collectives, ranks
from npu_bridge_compat.distributed.collectives import CollectiveError
from npu_bridge_compat.distributed.ranks import WORLD_GROUP


def allreduce(tensor, average: bool = True, group: str = WORLD_GROUP):
    """A gradient's sum over the group's ranks (its mean when `average`); `IndexedSlices` are allgathered."""
    size = collectives.find_group(group).size
    if isinstance(tensor, tf.IndexedSlices):
        values = collectives.allgather(tensor.values, size, group=group)
        indices = collectives.allgather(tensor.indices, size, group=group)
        values = values / tf.cast(size, values.dtype) if average else values
        return tf.IndexedSlices(values, indices, dense_shape=tensor.dense_shape)
    summed = collectives.allreduce(tensor, "sum", group=group)
    return summed / tf.cast(size, summed.dtype) if average else summed


def npu_allreduce(values, reduction: str = "mean", fusion: int = 1, fusion_id: int = -1, group: str = WORLD_GROUP):
    """The adapter's helper: each value (a list, or one value) reduced over the group; "mean" is the sum divided
    by the group's size, and `IndexedSlices` are allgathered."""
    if reduction != "mean" and reduction not in collectives.REDUCTIONS:
        raise CollectiveError(
            f"npu_allreduce reduction must be mean, {', '.join(collectives.REDUCTIONS)}; got {reduction!r}"
        )

    def one(value):
        if isinstance(value, tf.IndexedSlices) or reduction == "mean":
            return allreduce(value, average=reduction == "mean", group=group)
        return collectives.allreduce(value, reduction, fusion, fusion_id, group)

    return [one(value) for value in values] if isinstance(values, (list, tuple)) else one(values)


# group -> ("idx" | "size", values), from hccl.split.api
SPLIT_STRATEGIES = changes.ProcessState(
    "HCCL's gradient split strategies per group (hccl.split.api)", Owner.DISTRIBUTED_OPTIMIZER, dict
)


def set_split_strategy_by_idx(idx_list, group: str = WORLD_GROUP) -> None:
    """HCCL's fusion split points: the gradients up to index idx_list[0] (inclusive) travel in one allreduce,
    the next ones up to idx_list[1] in another, and so on."""
    if (
        not isinstance(idx_list, (list, tuple))
        or not idx_list
        or not all(isinstance(i, int) and i >= 0 for i in idx_list)
        or list(idx_list) != sorted(set(idx_list))
    ):
        raise CollectiveError(f"idx_list must be a non-empty list of ascending gradient indices, got {idx_list!r}")
    changes.state(SPLIT_STRATEGIES)[group] = ("idx", list(idx_list))


def set_split_strategy_by_size(data_size_list, group: str = WORLD_GROUP) -> None:
    """HCCL's fusion split sizes: percentages of the gradients' data, summing to 100, one allreduce each."""
    if (
        not isinstance(data_size_list, (list, tuple))
        or not data_size_list
        or not all(isinstance(size, (int, float)) and size > 0 for size in data_size_list)
        or sum(data_size_list) != 100
    ):
        raise CollectiveError(f"data_size_list must be positive percentages summing to 100, got {data_size_list!r}")
    changes.state(SPLIT_STRATEGIES)[group] = ("size", list(data_size_list))


def fusion_segments(gradients: list, group: str = WORLD_GROUP) -> list[list[int]]:
    """The gradients' indices, cut into the segments that travel together."""
    count = len(gradients)
    if not count:
        return []
    kind, values = changes.state(SPLIT_STRATEGIES).get(group, ("idx", []))
    if kind == "idx":
        ends = {index for index in values if index < count - 1}
    else:  # a segment ends at the first gradient whose cumulative share of the data reaches each boundary
        sizes = [g.shape.num_elements() or 1 for g in gradients]
        reached = [100 * running / sum(sizes) for running in itertools.accumulate(sizes)]
        ends = {
            next(i for i, share in enumerate(reached) if share >= boundary)
            for boundary in itertools.accumulate(values[:-1])
        } - {count - 1}
    starts = [0] + [end + 1 for end in sorted(ends)]
    return [list(range(start, end + 1)) for start, end in zip(starts, sorted(ends) + [count - 1])]


def _averaged(grads_and_vars) -> list:
    pairs = list(grads_and_vars)
    if ranks.rank_size() == 1:
        return pairs
    averaged = {i: allreduce(grad) for i, (grad, _) in enumerate(pairs) if isinstance(grad, tf.IndexedSlices)}
    dense = [i for i, (grad, _) in enumerate(pairs) if grad is not None and i not in averaged]
    for segment in fusion_segments([pairs[i][0] for i in dense]):
        chosen = [dense[position] for position in segment]
        for dtype in {pairs[i][0].dtype for i in chosen}:
            same = [i for i in chosen if pairs[i][0].dtype == dtype]
            averaged.update(zip(same, _fused_mean([pairs[i][0] for i in same])))
    return [(averaged.get(i), var) for i, (_, var) in enumerate(pairs)]


def _fused_mean(gradients: list) -> list:
    """The gradients' means over the ranks, through one allreduce of their concatenation."""
    if len(gradients) == 1:
        return [allreduce(gradients[0])]
    flat = allreduce(tf.concat([tf.reshape(g, [-1]) for g in gradients], 0))
    pieces = tf.split(flat, tf.stack([tf.size(g) for g in gradients]), num=len(gradients))
    return [tf.reshape(piece, tf.shape(g)) for piece, g in zip(pieces, gradients)]


class NPUDistributedOptimizer(tf.compat.v1.train.Optimizer):
    """Wraps a `tf.compat.v1.train.Optimizer`: `compute_gradients` returns the gradients averaged over the
    ranks. `is_weight_update_sharding` (each rank updating a share of the weights, then broadcasting them) is an
    NPU memory optimisation with the same result; every rank updates all weights here."""

    def __init__(self, optimizer, is_weight_update_sharding: bool = False, name: str | None = None) -> None:
        super().__init__(name=name or f"Distributed{type(optimizer).__name__}", use_locking=False)
        self._optimizer = optimizer
        self._is_weight_update_sharding = is_weight_update_sharding

    def compute_gradients(self, *args, **kwargs):
        gradients = self._optimizer.compute_gradients(*args, **kwargs)
        size = ranks.rank_size()
        if self._is_weight_update_sharding and size > len(gradients):
            raise CollectiveError(
                "The number of gradients is less than rank_size, so weight_update_sharding cannot be executed"
            )
        with tf.name_scope(f"{self.get_name()}_Allreduce"):
            return _averaged(gradients)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        return self._optimizer.apply_gradients(grads_and_vars, global_step, name)

    def get_slot(self, *args, **kwargs):
        return self._optimizer.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._optimizer.get_slot_names(*args, **kwargs)

    def variables(self, *args, **kwargs):
        return self._optimizer.variables(*args, **kwargs)


def npu_distributed_optimizer_wrapper(optimizer):
    """Patches `optimizer` (a TF1 or Keras optimizer, or a Keras optimizer's name) in place so that every way it
    computes gradients (`compute_gradients`, `get_gradients`, `_compute_gradients`; Keras 3's `apply`, which
    receives them) averages them over the ranks; returns it."""
    if isinstance(optimizer, str):
        optimizer = tf.keras.optimizers.get(optimizer)
    replaced = {}
    for method in ("compute_gradients", "_compute_gradients"):
        if hasattr(optimizer, method):
            replaced[method] = _averaging_pairs(getattr(optimizer, method))
    if hasattr(optimizer, "get_gradients"):
        original = optimizer.get_gradients

        def get_gradients(loss, params):
            gradients = original(loss, params)
            return [pair[0] for pair in _averaged(zip(gradients, params))]

        replaced["get_gradients"] = get_gradients
    if hasattr(optimizer, "apply") and not hasattr(optimizer, "compute_gradients"):
        # Keras 3: train steps hand the tape's gradients to `apply`.
        original_apply = optimizer.apply

        def apply(grads, trainable_variables=None):
            averaged = _averaged(zip(grads, itertools.repeat(None)))
            return original_apply([grad for grad, _ in averaged], trainable_variables)

        replaced["apply"] = apply
    for method, averaging in replaced.items():
        if not changes.is_replaced(optimizer, method):  # wrapping twice would average twice
            changes.replace_attribute(
                optimizer,
                method,
                averaging,
                owner=Owner.DISTRIBUTED_OPTIMIZER,
                reason="gradients averaged over the ranks before they are applied",
                label=f"<{type(optimizer).__name__} optimizer>",
            )
    return optimizer


def _averaging_pairs(method):
    def averaged(*args, **kwargs):
        with tf.name_scope("Npu_Distributed_optimizer_Allreduce"):
            return _averaged(method(*args, **kwargs))

    return averaged


def KerasDistributeOptimizer(optimizer, name: str = "NpuKerasOptimizer", **kwargs):  # noqa: N802 - adapter name
    """The Keras optimizer itself with its gradients averaged over the ranks (Keras accepts only its own
    optimizer classes, so it is patched rather than wrapped)."""
    return npu_distributed_optimizer_wrapper(optimizer)


def npu_keras_optimizer(optimizer):
    return KerasDistributeOptimizer(optimizer)


def npu_tf_optimizer(optimizer):
    return NPUDistributedOptimizer(optimizer)
