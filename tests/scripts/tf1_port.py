"""A TF 1.15 script (tf.Session, tf.placeholder, tf.layers), ported with npu_init; run with `run --tf1`."""

import numpy as np
import tensorflow as tf
from npu_bridge.npu_init import *

x = tf.placeholder(tf.float32, [None, 4])
y = tf.placeholder(tf.float32, [None, 1])
with tf.compat.forward_compatibility_horizon(2019, 5, 1):
    net = tf.layers.batch_normalization(tf.reshape(x, [-1, 1, 2, 2]), training=True, fused=True)
loss = tf.losses.mean_squared_error(y, tf.layers.dense(tf.layers.flatten(net), 1))
global_step = tf.train.get_or_create_global_step()
with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
    train_op = tf.train.MomentumOptimizer(0.01, 0.9).minimize(loss, global_step=global_step)

config = tf.ConfigProto(allow_soft_placement=True)
custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
custom_op.name = "NpuOptimizer"
custom_op.parameter_map["mix_compile_mode"].b = True
config.graph_options.rewrite_options.remapping = RewriterConfig.OFF
data = np.random.RandomState(0).randn(16, 4).astype(np.float32)
with tf.Session(config=config) as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(5):
        sess.run(train_op, {x: data, y: data[:, :1]})
    print(
        "global_step",
        sess.run(global_step),
        "ops",
        sorted({op.type for op in tf.get_default_graph().get_operations() if "BatchNorm" in op.type}),
    )
