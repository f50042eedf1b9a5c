"""NPUStrategy: the adapter's one-device strategy that knows the ranks."""

from __future__ import annotations

import tensorflow as tf

from npu_bridge_compat.compat.distribute import init_sharding_one_device_strategy
from npu_bridge_compat.distributed import ranks


class NPUStrategy(tf.distribute.OneDeviceStrategy):
    """The adapter's strategy: one device (the rank's GPU where there is one, else the CPU),
    `num_replicas_in_sync` = RANK_SIZE, and `experimental_distribute_dataset` = `dataset.shard(RANK_SIZE,
    RANK_ID)`. Gradients are averaged by the distributed optimizers, not by the strategy."""

    def __init__(self, device: str | None = None) -> None:
        gpus = tf.config.list_logical_devices("GPU")
        init_sharding_one_device_strategy(
            self,
            device or (gpus[0].name if gpus else "/cpu:0"),
            ranks.rank_size,
            lambda dataset: dataset.shard(ranks.rank_size(), ranks.rank_id()),
        )
