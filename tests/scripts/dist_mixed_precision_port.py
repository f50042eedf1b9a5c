"""A ported NPUEstimator script with a Conv2D+BiasAdd+Relu model and precision_mode="allow_mix_precision", run as
one process on the global batch or as one rank of several on its shard (NPUDistributedOptimizer averages the
gradients). Prints one JSON line per rank: the final weights and the dtypes of the executed convolutions.

Usage: dist_mixed_precision_port.py MODEL_DIR ITERATIONS_PER_LOOP STEPS
"""

import json
import os
import sys

import numpy as np
import tensorflow as tf
from npu_bridge.npu_init import *

rank, size = get_rank_id(), get_rank_size()
model_dir = os.path.join(sys.argv[1], f"rank{rank}")
iterations, steps = int(sys.argv[2]), int(sys.argv[3])
GLOBAL_BATCH = 8
IMAGES = np.random.RandomState(0).rand(64, 8, 8, 3).astype(np.float32)
TARGETS = np.random.RandomState(1).rand(64, 1).astype(np.float32)


def input_fn():
    return (
        tf.data.Dataset.from_tensor_slices((IMAGES, TARGETS))
        .shard(size, rank)
        .batch(GLOBAL_BATCH // size, drop_remainder=True)
        .repeat()
    )


def model_fn(features, labels, mode):
    initial = tf.compat.v1.glorot_uniform_initializer(seed=7)
    kernel = tf.compat.v1.get_variable("conv/kernel", [3, 3, 3, 8], initializer=initial)
    bias = tf.compat.v1.get_variable("conv/bias", [8], initializer=tf.compat.v1.constant_initializer(0.1))
    hidden = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(features, kernel, 1, "VALID"), bias))
    output = tf.compat.v1.get_variable("output/kernel", [8, 1], initializer=initial)
    loss = tf.reduce_mean(tf.square(tf.matmul(tf.reduce_mean(hidden, [1, 2]), output) - labels))
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.1)
    if size > 1:
        optimizer = NPUDistributedOptimizer(optimizer)
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return NPUEstimatorSpec(mode, loss=loss, train_op=train_op)


class ExecutedConvolutions(tf.compat.v1.train.SessionRunHook):
    """The dtypes of the convolutions the sessions executed (their partition graphs), and the final weights."""

    def begin(self):
        self.dtypes = set()

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs({}, options=tf.compat.v1.RunOptions(output_partition_graphs=True))

    def after_run(self, run_context, run_values):
        for graph in run_values.run_metadata.partition_graphs:
            self.dtypes |= {
                tf.dtypes.as_dtype(node.attr["T"].type).name
                for node in graph.node
                if "Conv2D" in node.op and "T" in node.attr
            }

    def end(self, session):
        variables = tf.compat.v1.trainable_variables()
        final = {v.op.name: value.tolist() for v, value in zip(variables, session.run(variables))}
        print(json.dumps({"rank": rank, "conv_dtypes": sorted(self.dtypes), "final": final}), flush=True)


config = NPURunConfig(
    model_dir=model_dir,
    iterations_per_loop=iterations,
    precision_mode="allow_mix_precision",
    save_checkpoints_steps=steps,
)
NPUEstimator(model_fn=model_fn, config=config).train(input_fn, max_steps=steps, hooks=[ExecutedConvolutions()])
