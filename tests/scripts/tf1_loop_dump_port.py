"""A TF 1.15 session script with a v1 tf.cond, N steps per run and data dumps; run with `run --tf1`."""

import json
import os
import sys

import numpy as np
import tensorflow as tf
from npu_bridge.estimator.npu import util
from npu_bridge.npu_init import *

dump_path = sys.argv[1]
data = np.random.RandomState(0).randn(32, 4).astype(np.float32)
batch, labels = tf.data.make_one_shot_iterator(
    tf.data.Dataset.from_tensor_slices((data, data[:, :1])).repeat().batch(4)
).get_next()
prediction = tf.layers.dense(batch, 1)
prediction = tf.cond(tf.reduce_sum(prediction) > 0, lambda: prediction * 2.0, lambda: prediction - 1.0)
loss = tf.reduce_mean(tf.square(prediction - labels), name="loss")
global_step = tf.train.get_or_create_global_step()
train_op = tf.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=global_step, name="train")

config = tf.ConfigProto()
custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
custom_op.name = "NpuOptimizer"
custom_op.parameter_map["iterations_per_loop"].i = 3
custom_op.parameter_map["enable_dump"].b = True
custom_op.parameter_map["enable_dump_debug"].b = True
custom_op.parameter_map["dump_path"].s = tf.compat.as_bytes(dump_path)
custom_op.parameter_map["dump_step"].s = b"1|4"
custom_op.parameter_map["dump_mode"].s = b"all"
with tf.Session(config=config) as sess:
    sess.run(tf.global_variables_initializer())
    loop = util.set_iteration_per_loop(sess, train_op, 3)
    for _ in range(2):
        sess.run(loop)
    print(type(sess).__name__, "global_step", sess.run(global_step))
for root, _, files in sorted(os.walk(dump_path)):
    if "index.json" in files:
        with open(os.path.join(root, "index.json")) as index:
            print(os.path.basename(root), "dense/MatMul" in {entry["op"] for entry in json.load(index)})
