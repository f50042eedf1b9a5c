"""Several ranks: HCCL, the distributed optimizers and the broadcast hooks on TensorFlow's collective runtime.

    ranks.py         rank, size, device id from RANK_ID / RANK_SIZE / ASCEND_DEVICE_ID / DEVICE_ID / CM_*
    cluster.py       every rank's address: RANK_TABLE_FILE, CM_*, or this host; deterministic ports
    runtime.py       this rank's gRPC server and coordination service; a lost rank ends the others
    collectives.py   hccl.manage.api groups and hccl_ops collectives as TensorFlow collective ops
    optimizers.py    NPUDistributedOptimizer, npu_distributed_optimizer_wrapper, KerasDistributeOptimizer, ...
    broadcast.py     NPUBroadcastGlobalVariablesHook / Callback: every rank starts from rank 0's weights
    strategy.py      NPUStrategy
    doors.py         what the session, Estimator and Keras doors call
    launch.py        `python -m npu_bridge_compat launch`: N ranks of a script, like torchrun

With one rank (RANK_SIZE unset or 1) collectives return their one-rank result and the optimizers leave the
gradients as they are.
"""

from __future__ import annotations

import tensorflow as tf

from npu_bridge_compat.distributed.broadcast import (  # noqa: F401
    NPUBroadcastGlobalVariablesCallback,
    NPUBroadcastGlobalVariablesHook,
    broadcast_global_variables,
    npu_callbacks_append,
    npu_hooks_append,
)
from npu_bridge_compat.distributed.collectives import (  # noqa: F401
    CollectiveError,
    all_to_all_v,
    all_to_all_v_c,
    allgather,
    allreduce,
    broadcast,
    create_group,
    destroy_group,
    get_group_rank_from_world_rank,
    get_local_rank_id,
    get_local_rank_size,
    get_rank_id,
    get_rank_size,
    get_world_rank_from_group_rank,
    receive,
    reduce,
    reduce_scatter,
    send,
)
from npu_bridge_compat.distributed.optimizers import (  # noqa: F401
    KerasDistributeOptimizer,
    NPUDistributedOptimizer,
    npu_allreduce,
    npu_distributed_optimizer_wrapper,
    npu_keras_optimizer,
    npu_tf_optimizer,
    set_split_strategy_by_idx,
    set_split_strategy_by_size,
)
from npu_bridge_compat.distributed.ranks import WORLD_GROUP, RankConfigError  # noqa: F401
from npu_bridge_compat.distributed.runtime import start  # noqa: F401
from npu_bridge_compat.distributed.strategy import NPUStrategy  # noqa: F401


def all_ranks_true(flag):
    """A boolean tensor: `flag` holds on every rank (one rank's False makes it False everywhere)."""
    return tf.cast(allreduce(tf.cast(flag, tf.int32), "min"), tf.bool)
