"""`tf.contrib.distribute`'s strategy and all-reduce names under their TF 1.15 arguments, on tf.distribute."""

from __future__ import annotations

import tensorflow as tf

_ALGORITHMS = {"nccl": tf.distribute.NcclAllReduce, "hierarchical_copy": tf.distribute.HierarchicalCopyAllReduce}


def AllReduceCrossDeviceOps(
    all_reduce_alg: str = "nccl",
    num_packs: int = 1,  # noqa: N802
    agg_small_grads_max_bytes: int = 0,
    agg_small_grads_max_group: int = 10,
):
    """The all-reduce cross-device ops: "nccl" or "hierarchical_copy", in `num_packs` packs."""
    if all_reduce_alg not in _ALGORITHMS:
        raise ValueError(f"all_reduce_alg must be one of {sorted(_ALGORITHMS)}, got {all_reduce_alg!r}")
    return _ALGORITHMS[all_reduce_alg](num_packs=num_packs)


def MirroredStrategy(
    devices=None,
    num_gpus=None,
    num_gpus_per_worker=None,
    cross_device_ops=None,  # noqa: N802
    auto_shard_dataset=False,
    cross_tower_ops=None,
):
    """tf.distribute.MirroredStrategy over `devices`, or over this host's first `num_gpus` GPUs."""
    gpus = num_gpus if num_gpus is not None else num_gpus_per_worker
    if devices is None and gpus is not None:
        available = len(tf.config.list_physical_devices("GPU"))
        if gpus > available:
            raise ValueError(f"MirroredStrategy(num_gpus={gpus}) needs {gpus} GPUs; this host has {available}")
        devices = [f"/gpu:{index}" for index in range(gpus)] or ["/cpu:0"]
    return tf.distribute.MirroredStrategy(devices=devices, cross_device_ops=cross_device_ops or cross_tower_ops)
