"""A ported sess.run script: npu_config_proto, custom_op options, mixed compute, set_iteration_per_loop."""

import numpy as np
import tensorflow as tf
from npu_bridge.estimator.npu import npu_scope
from npu_bridge.npu_init import *

tf = tf.compat.v1
tf.disable_eager_execution()
features = np.random.RandomState(0).randn(256, 4).astype(np.float32)
iterator = tf.data.make_initializable_iterator(
    tf.data.Dataset.from_tensor_slices((features, features[:, :1])).repeat().batch(8)
)
x, y = iterator.get_next()
with npu_scope.without_npu_compile_scope():
    x = tf.identity(x, name="host_side")
loss = tf.losses.mean_squared_error(y, tf.layers.dense(x, 1))
global_step = tf.train.get_or_create_global_step()
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=global_step)

config = tf.ConfigProto()
custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
custom_op.name = "NpuOptimizer"
custom_op.parameter_map["use_off_line"].b = True
custom_op.parameter_map["precision_mode"].s = tf.compat.as_bytes("allow_mix_precision")
custom_op.parameter_map["iterations_per_loop"].i = 5
config.graph_options.rewrite_options.remapping = RewriterConfig.OFF
config = npu_config_proto(config_proto=config)

with tf.Session(config=config) as sess:
    sess.run([tf.global_variables_initializer(), iterator.initializer])
    train_op = util.set_iteration_per_loop(sess, train_op, 5)
    for _ in range(4):
        _, loss_value = sess.run([train_op, loss])
    print("global_step", sess.run(global_step), "loss", loss_value)
