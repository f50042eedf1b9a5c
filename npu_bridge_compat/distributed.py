"""HCCL and the adapter's distributed names, for one host process.

Ranks come from RANK_ID / RANK_SIZE as on Ascend. With one rank, collectives return their single-rank result
(allreduce of one rank is the tensor itself, and so on) and the distributed optimizers are the optimizer as is.
With RANK_SIZE > 1 there is no backend yet to talk to the other processes, so every collective entry point stops
with `DistributedUnavailableError` instead of letting each process train alone.
"""

from __future__ import annotations

import os

import tensorflow as tf

from npu_bridge_compat.errors import NpuConfigError


class DistributedUnavailableError(NpuConfigError, RuntimeError):
    """Several ranks were asked for, but this package trains in one process only."""


def _environment_int(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    try:
        return int(value) if value else default
    except ValueError:
        raise NpuConfigError(f"environment variable {name}={value!r} must be an integer") from None


def get_rank_size(group: str = "hccl_world_group") -> int:
    if os.environ.get("CM_WORKER_SIZE") is not None and os.environ.get("RANK_SIZE") is not None:
        raise NpuConfigError("RANK_SIZE and CM_WORK_SIZE cannot be configured at the same time")
    return _environment_int("RANK_SIZE", _environment_int("CM_WORKER_SIZE", 1))


def get_rank_id(group: str = "hccl_world_group") -> int:
    return _environment_int("RANK_ID", 0)


def get_local_rank_size(group: str = "hccl_world_group") -> int:
    return get_rank_size(group)


def get_local_rank_id(group: str = "hccl_world_group") -> int:
    return _environment_int("RANK_ID", 0)


def require_single_process(feature: str) -> None:
    """Refuse a multi-rank run: it would silently train each rank alone."""
    size = get_rank_size()
    if size > 1:
        raise DistributedUnavailableError(
            f"{feature}: RANK_SIZE={size} asks for {size} processes, but npu_bridge_compat has no distributed "
            "backend yet, so each process would train alone. Unset RANK_SIZE (or set it to 1) to train in one "
            "process.")


def create_group(group: str, rank_num: int, rank_ids) -> None:
    require_single_process("hccl create_group")


def destroy_group(group: str) -> None:
    require_single_process("hccl destroy_group")


def get_world_rank_from_group_rank(group: str, group_rank_id: int) -> int:
    return group_rank_id


def get_group_rank_from_world_rank(world_rank_id: int, group: str) -> int:
    return world_rank_id


def set_split_strategy_by_idx(idx_list, group: str = "hccl_world_group") -> None:
    """Gradient split points for allreduce fusion; nothing to split with one rank."""
    require_single_process("hccl set_split_strategy_by_idx")


def set_split_strategy_by_size(data_size_list, group: str = "hccl_world_group") -> None:
    """Gradient split sizes for allreduce fusion; nothing to split with one rank."""
    require_single_process("hccl set_split_strategy_by_size")


# --- hccl_ops: collectives with their single-rank results ---------------------------------------------------

def allreduce(tensor, reduction: str = "sum", fusion: int = 1, fusion_id: int = -1, group: str = "hccl_world_group"):
    require_single_process("hccl_ops.allreduce")
    if reduction not in ("sum", "prod", "max", "min"):
        raise NpuConfigError(f"allreduce reduction must be sum, prod, max or min, got {reduction!r}")
    return tf.identity(tensor)


def broadcast(tensor, root_rank: int, fusion: int = 2, fusion_id: int = 0, group: str = "hccl_world_group"):
    require_single_process("hccl_ops.broadcast")
    return [tf.identity(t) for t in tensor]


def allgather(tensor, rank_size: int, group: str = "hccl_world_group", fusion: int = 0, fusion_id: int = -1):
    require_single_process("hccl_ops.allgather")
    return tf.identity(tensor)


def reduce_scatter(tensor, reduction: str, rank_size: int, group: str = "hccl_world_group", fusion: int = 0,
                   fusion_id: int = -1):
    require_single_process("hccl_ops.reduce_scatter")
    return tf.identity(tensor)


# --- optimizers and strategy --------------------------------------------------------------------------------

def NPUDistributedOptimizer(optimizer, is_weight_update_sharding: bool = False):  # noqa: N802 - adapter name
    """Gradient allreduce across ranks on Ascend; with one rank, the optimizer itself."""
    require_single_process("NPUDistributedOptimizer")
    return optimizer


def npu_distributed_optimizer_wrapper(optimizer):
    require_single_process("npu_distributed_optimizer_wrapper")
    return optimizer


def npu_tf_optimizer(optimizer):
    require_single_process("npu_tf_optimizer")
    return optimizer


def npu_allreduce(values, reduction: str = "mean", fusion: int = 1, fusion_id: int = -1,
                  group: str = "hccl_world_group"):
    """Allreduce a list of tensors (or IndexedSlices); with one rank the mean and the sum are the values."""
    require_single_process("npu_allreduce")
    return values


class NPUStrategy(tf.distribute.OneDeviceStrategy):
    """The adapter's strategy: one device (a GPU where there is one, else the CPU), one rank."""

    def __init__(self, device: str | None = None) -> None:
        require_single_process("NPUStrategy")
        gpu = tf.config.list_logical_devices("GPU")
        super().__init__(device or (gpu[0].name if gpu else "/cpu:0"))


class NPUBroadcastGlobalVariablesHook(tf.compat.v1.train.SessionRunHook):
    """Broadcasts variables from `root_rank` when the session starts on Ascend; one rank holds them already."""

    def __init__(self, root_rank: int | None = None, index: int | None = None) -> None:
        require_single_process("NPUBroadcastGlobalVariablesHook")
        self.root_rank = root_rank
        self.index = index
