"""NPUStrategy: the adapter's one-device strategy that knows the ranks."""

from __future__ import annotations

import tensorflow as tf
from tensorflow.python.distribute import one_device_strategy

from npu_bridge_compat.distributed import ranks


class _RankExtended(one_device_strategy.OneDeviceExtended):
    """One device per process; RANK_SIZE replicas in sync; each rank reads its shard of a dataset."""

    @property
    def _num_replicas_in_sync(self) -> int:
        return ranks.rank_size()

    def _experimental_distribute_dataset(self, dataset, options):
        return super()._experimental_distribute_dataset(dataset.shard(ranks.rank_size(), ranks.rank_id()), options)


class NPUStrategy(tf.distribute.OneDeviceStrategy):
    """The adapter's strategy: one device (the rank's GPU where there is one, else the CPU),
    `num_replicas_in_sync` = RANK_SIZE, and `experimental_distribute_dataset` = `dataset.shard(RANK_SIZE,
    RANK_ID)`. Gradients are averaged by the distributed optimizers, not by the strategy."""

    def __init__(self, device: str | None = None) -> None:
        gpus = tf.config.list_logical_devices("GPU")
        # OneDeviceStrategy's own __init__ would build a plain OneDeviceExtended.
        tf.distribute.Strategy.__init__(self, _RankExtended(self, device or (gpus[0].name if gpus else "/cpu:0")))
