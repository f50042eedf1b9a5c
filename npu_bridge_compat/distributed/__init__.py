"""Several ranks: HCCL, the distributed optimizers and the broadcast hooks on TensorFlow's collective runtime.

    variables.py     the job's environment variables read as integers; RankConfigError
    schedulers.py    rank, size, local rank and addresses as Slurm, MPI, torchrun-style variables or TF_CONFIG give them
    ranks.py         rank, size, device id from RANK_ID / RANK_SIZE / ASCEND_DEVICE_ID / DEVICE_ID / CM_*, else a
                     scheduler's
    meeting.py       where ranks whose scheduler names no other rank's host exchange their addresses
    cluster.py       every rank's address: RANK_TABLE_FILE, CM_*, a scheduler, or this host; deterministic ports
    collective_runtime.py  this rank's gRPC server and coordination service; a lost rank ends the others
    keys.py          the group and instance keys of collectives, alike on every rank
    collectives.py   hccl.manage.api groups and hccl_ops collectives as TensorFlow collective ops
    optimizers.py    NPUDistributedOptimizer, npu_distributed_optimizer_wrapper, KerasDistributeOptimizer, ...
    hooks.py         NPUBroadcastGlobalVariablesHook / Callback: every rank starts from rank 0's weights
    strategy.py      NPUStrategy
    rank_doors.py    what the session and Estimator doors call to run with several ranks
    launch.py        `python -m npu_bridge_compat launch`: N ranks of a script, like torchrun

With one rank (RANK_SIZE unset or 1) collectives return their one-rank result and the optimizers leave the
gradients as they are.
"""

from __future__ import annotations

import importlib

# Public names -> the module that defines them. They load on first use, so that importing a part that needs no
# TensorFlow (ranks.py, schedulers.py and cluster.py, which the host plan reads) does not import it.
_EXPORTS = {
    "hooks": (
        "NPUBroadcastGlobalVariablesCallback",
        "NPUBroadcastGlobalVariablesHook",
        "broadcast_global_variables",
        "npu_callbacks_append",
        "npu_hooks_append",
    ),
    "collectives": (
        "CollectiveError",
        "all_ranks_true",
        "all_to_all_v",
        "all_to_all_v_c",
        "allgather",
        "allreduce",
        "broadcast",
        "create_group",
        "destroy_group",
        "get_group_rank_from_world_rank",
        "get_local_rank_id",
        "get_local_rank_size",
        "get_rank_id",
        "get_rank_size",
        "get_world_rank_from_group_rank",
        "receive",
        "reduce",
        "reduce_scatter",
        "send",
    ),
    "optimizers": (
        "KerasDistributeOptimizer",
        "NPUDistributedOptimizer",
        "npu_allreduce",
        "npu_distributed_optimizer_wrapper",
        "npu_keras_optimizer",
        "npu_tf_optimizer",
        "set_split_strategy_by_idx",
        "set_split_strategy_by_size",
    ),
    "ranks": ("WORLD_GROUP", "RankConfigError"),
    "collective_runtime": ("start",),
    "strategy": ("NPUStrategy",),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_MODULE_OF)


def __getattr__(name: str):
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_MODULE_OF[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
