"""A ported TF2 custom training loop, as ModelZoo's BERT (model_training_utils.py) writes it: a tf.function step,
NpuLossScaleOptimizer, gradients averaged with npu_device.distribute.all_reduce. At step OVERFLOW_STEP the last
rank alone gets an infinite gradient: every rank must skip that step and lower the loss scale. Prints one JSON
line per rank.

Usage: tf2_loss_scale_port.py STEPS OVERFLOW_STEP [DIE_AT_STEP]   (the last rank dies at that step)
"""

import json
import os
import sys

import dist_model
import npu_device
import numpy as np
import tensorflow as tf

steps, overflow_step = int(sys.argv[1]), int(sys.argv[2])
die_at = int(sys.argv[3]) if len(sys.argv) > 3 else None
npu = npu_device.open().as_default()
rank, size = npu.worker_id, npu.workers_num

examples = tf.data.Dataset.from_tensor_slices((dist_model.FEATURES, dist_model.LABELS))
dataset, batch = npu_device.distribute.shard_and_rebatch_dataset(examples, dist_model.BATCH * size)
iterator = iter(dataset.batch(batch, drop_remainder=True).repeat())

kernel = tf.Variable(np.full([4, 1], 0.1, np.float32), name="kernel")
optimizer = npu_device.train.optimizer.NpuLossScaleOptimizer(
    tf.keras.optimizers.SGD(dist_model.LEARNING_RATE), initial_scale=1024.0, dynamic_growth_steps=1000
)
keras_2 = hasattr(optimizer, "get_scaled_loss")


def loss_scale() -> float:
    return float(optimizer.loss_scale if keras_2 else optimizer.dynamic_scale)


@tf.function
def train_step(features, labels, poison):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(features @ kernel - labels))
        scaled = optimizer.get_scaled_loss(loss) if keras_2 else optimizer.scale_loss(loss)
    grads = tape.gradient(scaled, [kernel])
    if keras_2:
        grads = optimizer.get_unscaled_gradients(grads)
    grads = npu_device.distribute.all_reduce(grads, "mean")
    optimizer.apply_gradients(zip([grads[0] * poison], [kernel]))
    return loss


history = []
for step in range(1, steps + 1):
    if step == die_at and rank == size - 1:
        os._exit(3)  # lost without a word, as a killed rank
    print(f"rank {rank} trains step {step}", flush=True)
    features, labels = next(iterator)
    poison = np.float32(np.inf) if (step == overflow_step and rank == size - 1) else np.float32(1.0)
    before = kernel.numpy().tolist()
    train_step(features, labels, tf.constant(poison))
    history.append(
        {
            "finite": bool(optimizer.last_step_finite.numpy()),
            "scale": loss_scale(),
            "changed": kernel.numpy().tolist() != before,
        }
    )
print(
    json.dumps(
        {
            "rank": rank,
            "history": history,
            "iterations": int(optimizer.iterations.numpy()),
            "final": kernel.numpy().tolist(),
        }
    ),
    flush=True,
)
