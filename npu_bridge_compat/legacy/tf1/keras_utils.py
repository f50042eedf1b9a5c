"""`tensorflow.python.keras.utils.multi_gpu_model` as TF 1.15 had it: the model replicated on GPUs, each replica
on a slice of the batch, the outputs concatenated on the CPU."""

from __future__ import annotations

import tensorflow as tf

__all__ = ["multi_gpu_model"]


def _normalized(device_name: str) -> str:
    """'/device:GPU:0' (or '/job:localhost/replica:0/task:0/device:GPU:0') -> '/gpu:0'."""
    return "/" + ":".join(device_name.lower().replace("/", "").split(":")[-2:])


def _batch_slice(data, index: int, parts: int):
    """Replica `index`'s part of the batch: equal steps, the last replica taking the remainder."""
    shape = tf.shape(data)
    batch_size, input_shape = shape[:1], shape[1:]
    step = batch_size // parts
    size = batch_size - step * index if index == parts - 1 else step
    size = tf.concat([size, input_shape], axis=0)
    stride = tf.concat([step, input_shape * 0], axis=0)
    return tf.slice(data, stride * index, size)


def multi_gpu_model(model, gpus, cpu_merge: bool = True, cpu_relocation: bool = False):
    """A Keras model that runs `model` on `gpus` GPUs (a count, or a list of GPU ids): each replica
    (`/gpu:<id>`, name scope `replica_<id>`) on its slice of the batch, the outputs concatenated on the CPU
    (`cpu_merge`) under the model's output names; `cpu_relocation` keeps the weights on the CPU."""
    keras = tf.keras
    if isinstance(gpus, (list, tuple)):
        if len(gpus) <= 1:
            raise ValueError(
                "For multi-gpu usage to be effective, call `multi_gpu_model` with `len(gpus) >= 2`. "
                f"Received: `gpus={gpus}`"
            )
        target_gpu_ids = list(gpus)
    else:
        if gpus <= 1:
            raise ValueError(
                f"For multi-gpu usage to be effective, call `multi_gpu_model` with `gpus >= 2`. Received: `gpus={gpus}`"
            )
        target_gpu_ids = list(range(gpus))
    target_devices = ["/cpu:0"] + [f"/gpu:{index}" for index in target_gpu_ids]
    available_devices = [_normalized(device.name) for device in tf.config.list_logical_devices()]
    for device in target_devices:
        if device not in available_devices:
            raise ValueError(
                f"To call `multi_gpu_model` with `gpus={gpus}`, we expect the following devices to be available: "
                f"{target_devices}. However this machine only has: {available_devices}. Try reducing `gpus`."
            )
    if cpu_relocation:
        with tf.device("/cpu:0"):
            model = keras.models.clone_model(model)
    parts = len(target_gpu_ids)
    all_outputs = [[] for _ in model.outputs]
    for index, gpu_id in enumerate(target_gpu_ids):
        with tf.device(f"/gpu:{gpu_id}"), tf.name_scope(f"replica_{gpu_id}"):
            inputs = [
                keras.layers.Lambda(
                    _batch_slice, output_shape=tuple(x.shape.as_list())[1:], arguments={"index": index, "parts": parts}
                )(x)
                for x in model.inputs
            ]
            outputs = model(inputs)
            outputs = outputs if isinstance(outputs, list) else [outputs]
            for position, output in enumerate(outputs):
                all_outputs[position].append(output)
    with tf.device("/cpu:0" if cpu_merge else None):
        merged = [
            keras.layers.concatenate(outputs, axis=0, name=name)
            for name, outputs in zip(model.output_names, all_outputs)
        ]
    return keras.Model(model.inputs, merged)
