"""`npu_device.distribute`: the TF2 adapter's collectives, on the ranks' TensorFlow collective runtime.

Semantics of tf_adapter_2.x/python/npu_device/distribute/hccl.py: with one worker (or before `open()`)
`all_reduce` returns its values and `broadcast` does nothing; "mean" is the sum times 1/N; `broadcast` assigns
the root's values into the variables; `shard_and_rebatch_dataset` gives each rank its shard and the per-rank
batch size; the Keras wrapper all-reduces the gradients the optimizer applies. They work eagerly and inside
`tf.function` (Keras' traced steps included), with Keras 2 and Keras 3.
"""

from __future__ import annotations

import tensorflow as tf

from npu_bridge_compat.compat.keras import tf_keras_is_keras_3
from npu_bridge_compat.distributed import collectives
from npu_bridge_compat.distributed.optimizers import npu_allreduce
from npu_bridge_compat.distributed.ranks import WORLD_GROUP
from npu_bridge_compat.errors import NpuOptionValueError
from npu_bridge_compat.tf2.device import global_npu_ctx

REDUCTIONS = ("mean", *collectives.REDUCTIONS)


def _cluster_worker() -> bool:
    context = global_npu_ctx()
    return context is not None and context.is_cluster_worker()


def shard_and_rebatch_dataset(dataset: tf.data.Dataset, global_bs: int) -> tuple[tf.data.Dataset, int]:
    """This rank's shard of `dataset` and its batch size, global_bs / workers (which must divide it)."""
    context = global_npu_ctx()
    if context is None or context.workers_num <= 1:
        return dataset, global_bs
    if global_bs % context.workers_num != 0:
        raise NpuOptionValueError(
            f"Batch size must be divisible by num npus: {context.workers_num} (global batch size {global_bs})"
        )
    return dataset.shard(context.workers_num, context.worker_id), global_bs // context.workers_num


def all_reduce(values, reduction: str = "mean", fusion: int = 1, fusion_id: int = -1, group: str = WORLD_GROUP):
    """Each value (a list, or one value) reduced over the ranks: sum, mean, max, min, prod; None stays None."""
    if reduction not in REDUCTIONS:
        raise NpuOptionValueError(f"all_reduce: reduction must be one of {', '.join(REDUCTIONS)}, got {reduction!r}")
    if not _cluster_worker():
        return values
    listed = list(values) if isinstance(values, (list, tuple)) else [values]
    reduced = npu_allreduce([v for v in listed if v is not None], reduction, fusion, fusion_id, group)
    results = [None if v is None else reduced.pop(0) for v in listed]
    return results if isinstance(values, (list, tuple)) else results[0]


def broadcast(values, root_rank: int = 0, fusion: int = 2, fusion_id: int = 0, group: str = WORLD_GROUP) -> None:
    """Assign the root rank's values into the variables `values` (a list, or one variable)."""
    if not _cluster_worker():
        return
    variables = list(values) if isinstance(values, (list, tuple)) else [values]
    received = collectives.broadcast([tf.convert_to_tensor(v) for v in variables], root_rank, fusion, fusion_id, group)
    for variable, value in zip(variables, received):
        variable.assign(value)


def npu_distributed_keras_optimizer_wrapper(
    optimizer, reduce_reduction: str = "mean", fusion: int = 1, fusion_id: int = -1, group: str = WORLD_GROUP
):
    """The Keras optimizer (or its name) patched so that the gradients it applies are first reduced over the ranks
    (Keras accepts only its own optimizer classes, so it is patched rather than wrapped, as in the adapter)."""
    optimizer = tf.keras.optimizers.get(optimizer)
    if tf_keras_is_keras_3():  # Keras 3's apply_gradients, and its train steps, go through apply
        original_apply = optimizer.apply

        def apply(grads, trainable_variables=None):
            return original_apply(
                all_reduce(list(grads), reduce_reduction, fusion, fusion_id, group), trainable_variables
            )

        optimizer.apply = apply
    else:
        original_apply_gradients = optimizer.apply_gradients

        def apply_gradients(grads_and_vars, *args, **kwargs):
            grads, variables = zip(*grads_and_vars)
            reduced = all_reduce(list(grads), reduce_reduction, fusion, fusion_id, group)
            return original_apply_gradients(zip(reduced, variables), *args, **kwargs)

        optimizer.apply_gradients = apply_gradients
    return optimizer


def broadcast_keras_model(model, root_rank: int = 0):
    """The root rank's trainable weights into a built Keras model (an unbuilt one has none yet); returns it."""
    if isinstance(model, tf.keras.Model) and model.built:
        broadcast(model.trainable_variables, root_rank)
    return model
