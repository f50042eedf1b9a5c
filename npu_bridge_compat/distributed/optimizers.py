"""The adapter's distributed optimizers: gradients averaged over the ranks before they are applied.

A dense gradient becomes allreduce-sum / RANK_SIZE; an `IndexedSlices` gradient (embedding lookups) has its values
and indices allgathered instead, the values divided by RANK_SIZE, which is the same average without densifying.
With one rank every gradient is left as it is.
"""

from __future__ import annotations

import tensorflow as tf

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
        raise CollectiveError(f"npu_allreduce reduction must be mean, {', '.join(collectives.REDUCTIONS)}; got "
                              f"{reduction!r}")

    def one(value):
        if isinstance(value, tf.IndexedSlices) or reduction == "mean":
            return allreduce(value, average=reduction == "mean", group=group)
        return collectives.allreduce(value, reduction, fusion, fusion_id, group)

    return [one(value) for value in values] if isinstance(values, (list, tuple)) else one(values)


def _averaged(grads_and_vars) -> list:
    if ranks.rank_size() == 1:
        return list(grads_and_vars)
    return [(allreduce(grad) if grad is not None else None, var) for grad, var in grads_and_vars]


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
            raise CollectiveError("The number of gradients is less than rank_size, so weight_update_sharding cannot "
                                  "be executed")
        with tf.name_scope(f"{self._name}_Allreduce"):
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
    computes gradients (`compute_gradients`, `get_gradients`, `_compute_gradients`) averages them over the
    ranks; returns it."""
    if isinstance(optimizer, str):
        optimizer = tf.keras.optimizers.get(optimizer)
    for method in ("compute_gradients", "_compute_gradients"):
        if hasattr(optimizer, method):
            setattr(optimizer, method, _averaging_pairs(getattr(optimizer, method)))
    if hasattr(optimizer, "get_gradients"):
        original = optimizer.get_gradients

        def get_gradients(loss, params):
            gradients = original(loss, params)
            return [pair[0] for pair in _averaged(zip(gradients, params))]

        optimizer.get_gradients = get_gradients
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
