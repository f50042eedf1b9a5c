"""`npu_bridge.estimator.npu.npu_optimizer`."""

from npu_bridge_compat.distributed import (  # noqa: F401
    KerasDistributeOptimizer,
    NPUDistributedOptimizer,
    npu_allreduce,
    npu_distributed_optimizer_wrapper,
    npu_tf_optimizer,
)
from npu_bridge_compat.distributed.optimizers import allreduce  # noqa: F401
from npu_bridge_compat.loss_scale import NPUOptimizer  # noqa: F401


def reduce(tensor, root_rank, average=True, fusion=0, fusion_id=-1):
    """The adapter's helper: a gradient summed (averaged when `average`) for `root_rank`; every rank receives
    it here (see hccl_ops.reduce)."""
    return allreduce(tensor, average)
