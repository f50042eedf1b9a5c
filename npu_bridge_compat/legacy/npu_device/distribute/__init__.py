"""`npu_device.distribute`."""

from npu_bridge_compat.tf2.distribute import (  # noqa: F401
    all_reduce,
    broadcast,
    grouping_broadcast,
    grouping_gradients_apply,
    npu_distributed_keras_optimizer_wrapper,
    shard_and_rebatch_dataset,
)
