"""`npu_device.distribute.hccl`."""

from npu_bridge_compat.distributed import NPUBroadcastGlobalVariablesCallback, npu_callbacks_append  # noqa: F401
from npu_bridge_compat.tf2.distribute import (  # noqa: F401
    all_reduce,
    broadcast,
    npu_distributed_keras_optimizer_wrapper,
    shard_and_rebatch_dataset,
)
