"""A TF2 ported script that turns TF1 behaviour on (ModelZoo's Roberta run_pretraining.py): enable_v1(), then the
TF1 adapter's API through npu_device.compat.v1: an NpuOptimizer session config, a session, 5 steps per run.
Prints one JSON line."""

import json

import npu_device

npu_device.compat.enable_v1()
import tensorflow as tf  # noqa: E402
from npu_device.compat.v1.npu_init import *  # noqa: E402,F403

dataset = tf.data.Dataset.from_tensor_slices(tf.ones([40, 2])).batch(2).repeat()
features = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
weight = tf.compat.v1.get_variable("w", [2, 1], initializer=tf.compat.v1.zeros_initializer())
loss = tf.reduce_mean(tf.square(tf.matmul(features, weight) - 1.0))
global_step = tf.compat.v1.train.get_or_create_global_step()
train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=global_step)

config = tf.compat.v1.ConfigProto()
custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
custom_op.name = "NpuOptimizer"
custom_op.parameter_map["iterations_per_loop"].i = 5
with tf.compat.v1.Session(config=npu_config_proto(config_proto=config)) as session:  # noqa: F405
    session.run(tf.compat.v1.global_variables_initializer())
    looped = util.set_iteration_per_loop(session, train_op, 5)  # noqa: F405
    session.run(looped)
    steps = int(session.run(global_step))
print(
    json.dumps(
        {
            "executing_eagerly": tf.executing_eagerly(),
            "global_step": steps,
            "has_loss_scale_optimizer": "NPULossScaleOptimizer" in globals(),
            "has_distributed_optimizer": "NPUDistributedOptimizer" in globals(),
        }
    ),
    flush=True,
)
