"""`npu_device.distribute`: the TF2 adapter's collectives, on the ranks' TensorFlow collective runtime.

Semantics of tf_adapter_2.x/python/npu_device/distribute/hccl.py: with one worker (or before `open()`)
`all_reduce` returns its values and `broadcast` does nothing; "mean" is the sum times 1/N; `broadcast` assigns
the root's values into the variables; `shard_and_rebatch_dataset` gives each rank its shard and the per-rank
batch size; the Keras wrapper all-reduces the gradients the optimizer applies. They work eagerly and inside
`tf.function` (Keras' traced steps included), with Keras 2 and Keras 3.

Weight-update grouping (distribute/weight_update_grouping.py): the variables are divided among the ranks by their
size in bytes, each rank applies the (already reduced) gradients of its own share only, and then every variable
is broadcast from the rank that updated it; each rank keeps optimizer state for its share alone, and the weights
are those of plain data-parallel training. The division here is contiguous in the variables' order, at least one
variable per rank (the adapter's also balances bytes; its exact split only decides which rank does the work).
"""

from __future__ import annotations

import tensorflow as tf

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
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
    (Keras accepts only its own optimizer classes, so it is patched rather than wrapped, as in the adapter). An
    optimizer already patched is returned as it is: its gradients are reduced once."""
    optimizer = tf.keras.optimizers.get(optimizer)
    # Keras 3's apply_gradients, and its train steps, go through apply; Keras 2's through apply_gradients.
    method = "apply" if tf_keras_is_keras_3() else "apply_gradients"
    if changes.is_replaced(optimizer, method):
        return optimizer
    original = getattr(optimizer, method)
    if method == "apply":

        def reduced(grads, trainable_variables=None):
            return original(all_reduce(list(grads), reduce_reduction, fusion, fusion_id, group), trainable_variables)

    else:

        def reduced(grads_and_vars, *args, **kwargs):
            grads, variables = zip(*grads_and_vars)
            summed = all_reduce(list(grads), reduce_reduction, fusion, fusion_id, group)
            return original(zip(summed, variables), *args, **kwargs)

    changes.replace_attribute(
        optimizer,
        method,
        reduced,
        owner=Owner.TF2_DISTRIBUTE,
        reason="npu_distributed_keras_optimizer_wrapper: gradients reduced over the ranks before they are applied",
        label=f"<user's {type(optimizer).__name__}>",
    )
    return optimizer


def _size_in_bytes(variable) -> int:
    return max(1, variable.shape.num_elements() or 1) * variable.dtype.size


def grouping_owners(variables: list, workers: int) -> list[int]:
    """The rank that updates each variable: contiguous runs of the variables, of about total_bytes / workers each,
    at least one per rank."""
    if not 0 < workers <= len(variables):
        raise NpuOptionValueError(
            f"weight-update grouping divides the variables among the ranks: {len(variables)} variable(s) for "
            f"{workers} rank(s); it needs at least one variable per rank"
        )
    sizes = [_size_in_bytes(v) for v in variables]
    total, owners, rank, in_rank, before = sum(sizes), [], 0, 0, 0
    for index, size in enumerate(sizes):
        left_for_later_ranks = len(sizes) - index == workers - rank - 1
        past_share = in_rank > 0 and before + size / 2 > (rank + 1) * total / workers
        if rank < workers - 1 and (left_for_later_ranks or past_share):
            rank, in_rank = rank + 1, 0
        owners.append(rank)
        in_rank, before = in_rank + 1, before + size
    return owners


def grouping_gradients_apply(apply_func, grads_and_vars, *args, **kwargs):
    """Weight-update grouping: `apply_func` (an optimizer's apply_gradients) applied to this rank's share of the
    (reduced) gradients, then every variable broadcast from the rank that owns it."""
    context = global_npu_ctx()
    if not _cluster_worker():
        return apply_func(grads_and_vars, *args, **kwargs)
    pairs = list(grads_and_vars)
    owners = grouping_owners([v for _, v in pairs], context.workers_num)
    applied = apply_func([p for p, owner in zip(pairs, owners) if owner == context.worker_id], *args, **kwargs)
    for (_, variable), owner in zip(pairs, owners):  # in tf.functions, ordered after the updates they read
        broadcast([variable], owner)
    return applied


def grouping_broadcast(variables: list):
    """Each variable broadcast from the rank that owns it under weight-update grouping (the adapter's initial sync
    for grouping_gradients_apply); the variables themselves with one worker."""
    if not _cluster_worker():
        return variables
    variables = list(variables)
    for variable, owner in zip(variables, grouping_owners(variables, global_npu_ctx().workers_num)):
        broadcast([variable], owner)
    return None


def broadcast_keras_model(model, root_rank: int = 0):
    """The root rank's trainable weights into a built Keras model (an unbuilt one has none yet); returns it."""
    if isinstance(model, tf.keras.Model) and model.built:
        broadcast(model.trainable_variables, root_rank)
    return model
