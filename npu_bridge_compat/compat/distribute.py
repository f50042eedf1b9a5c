"""tf.distribute internals: a one-device strategy whose replica count and dataset sharding come from outside
(the ranks of a job). Strategy extensions have no public base class. Checked on TensorFlow 2.15 and 2.21.
"""

from __future__ import annotations

from collections.abc import Callable

import tensorflow as tf
from tensorflow.python.distribute import one_device_strategy


class _ShardingOneDeviceExtended(one_device_strategy.OneDeviceExtended):
    def __init__(self, strategy, device: str, replicas: Callable[[], int], shard: Callable) -> None:
        super().__init__(strategy, device)
        self._replicas, self._shard = replicas, shard

    @property
    def _num_replicas_in_sync(self) -> int:
        return self._replicas()

    def _experimental_distribute_dataset(self, dataset, options):
        return super()._experimental_distribute_dataset(self._shard(dataset), options)


def init_sharding_one_device_strategy(
    strategy: tf.distribute.OneDeviceStrategy, device: str, replicas: Callable[[], int], shard: Callable
) -> None:
    """Initialise `strategy` (a OneDeviceStrategy subclass, in its `__init__`) on `device`, reporting `replicas()`
    replicas in sync and distributing `shard(dataset)` of each dataset. Checked on TensorFlow 2.15 and 2.21."""
    # OneDeviceStrategy's own __init__ would build a plain OneDeviceExtended.
    tf.distribute.Strategy.__init__(strategy, _ShardingOneDeviceExtended(strategy, device, replicas, shard))
