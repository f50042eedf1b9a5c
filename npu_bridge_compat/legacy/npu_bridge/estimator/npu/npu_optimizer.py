"""`npu_bridge.estimator.npu.npu_optimizer`."""

from npu_bridge_compat.distributed import (  # noqa: F401
    NPUDistributedOptimizer,
    npu_allreduce,
    npu_distributed_optimizer_wrapper,
    npu_tf_optimizer,
    require_single_process,
)
from npu_bridge_compat.keras import KerasDistributeOptimizer  # noqa: F401
from npu_bridge_compat.loss_scale import NPUOptimizer  # noqa: F401


def allreduce(tensor, var, average=True):
    """A gradient's allreduce across ranks (averaged when `average`); with one rank, the gradient itself."""
    require_single_process("npu_optimizer.allreduce")
    return tensor
