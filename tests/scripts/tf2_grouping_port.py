"""A ported TF2 custom loop with the adapter's weight-update grouping (its own test's pattern): gradients averaged
with all_reduce, then `grouping_gradients_apply(optimizer.apply_gradients, ...)`, after `grouping_broadcast` of
the initial weights. The same loop trains a copy of the weights by plain data parallel (every rank applies every
gradient), from the same start. Prints one JSON line per rank.

Usage: tf2_grouping_port.py STEPS
"""

import json
import sys

import dist_model
import npu_device
import numpy as np
import tensorflow as tf

steps = int(sys.argv[1])
npu = npu_device.open().as_default()
rank, size = npu.worker_id, npu.workers_num

examples = tf.data.Dataset.from_tensor_slices((dist_model.FEATURES, dist_model.LABELS))
dataset, batch = npu_device.distribute.shard_and_rebatch_dataset(examples, dist_model.BATCH * size)
iterator = iter(dataset.batch(batch, drop_remainder=True).repeat())

shapes = {"kernel1": [4, 8], "bias1": [8], "kernel2": [8, 1], "bias2": [1]}
generator = np.random.RandomState(rank)  # each rank its own start: the broadcasts must make them one
grouped = [tf.Variable(generator.randn(*shape).astype(np.float32) * 0.3, name=name) for name, shape in shapes.items()]
npu_device.distribute.grouping_broadcast(grouped)
plain = [tf.Variable(v) for v in grouped]  # the same start
grouped_optimizer = tf.keras.optimizers.Adam(0.05)
plain_optimizer = tf.keras.optimizers.Adam(0.05)


def loss_of(weights, features, labels):
    kernel1, bias1, kernel2, bias2 = weights
    hidden = tf.nn.relu(features @ kernel1 + bias1)
    return tf.reduce_mean(tf.square(hidden @ kernel2 + bias2 - labels))


@tf.function
def train_step(features, labels):
    for weights, grouping in ((grouped, True), (plain, False)):
        with tf.GradientTape() as tape:
            loss = loss_of(weights, features, labels)
        grads = npu_device.distribute.all_reduce(tape.gradient(loss, weights), "mean")
        if grouping:
            npu_device.distribute.grouping_gradients_apply(grouped_optimizer.apply_gradients, zip(grads, weights))
        else:
            plain_optimizer.apply_gradients(zip(grads, weights))


for _ in range(steps):
    train_step(*next(iterator))


def optimizer_values(optimizer) -> int:
    state = optimizer.variables
    return int(sum(np.size(v.numpy()) for v in (state() if callable(state) else state)))


print(
    json.dumps(
        {
            "rank": rank,
            "grouped": [v.numpy().tolist() for v in grouped],
            "plain": [v.numpy().tolist() for v in plain],
            "optimizer_values": {
                "grouped": optimizer_values(grouped_optimizer),
                "plain": optimizer_values(plain_optimizer),
            },
        }
    ),
    flush=True,
)
