"""A ported sess.run script: the NpuOptimizer options written into the ConfigProto, as ported scripts do."""
import sys

import tensorflow as tf
from npu_bridge.npu_init import *

sys.path.append("../common")
from data_helpers import make_dataset

tf = tf.compat.v1
tf.disable_eager_execution()

features, labels = make_dataset(batch_size=32)
loss = tf.losses.mean_squared_error(labels, tf.layers.dense(features, 1))
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=tf.train.get_or_create_global_step())

config = tf.ConfigProto()
custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
custom_op.name = "NpuOptimizer"
custom_op.parameter_map["use_off_line"].b = True
custom_op.parameter_map["precision_mode"].s = tf.compat.as_bytes("allow_mix_precision")
custom_op.parameter_map["iterations_per_loop"].i = 10
custom_op.parameter_map["mix_compile_mode"].b = False
config.graph_options.rewrite_options.remapping = RewriterConfig.OFF

with tf.Session(config=npu_config_proto(config_proto=config)) as sess:
    sess.run(tf.global_variables_initializer())
    train_op = util.set_iteration_per_loop(sess, train_op, 10)
    for _ in range(10):
        sess.run(train_op)
