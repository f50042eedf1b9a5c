"""A session script with an invalid literal value: a precision mode the adapter does not know."""
import tensorflow as tf
from npu_bridge.npu_init import *

config = tf.compat.v1.ConfigProto()
custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
custom_op.name = "NpuOptimizer"
custom_op.parameter_map["precision_mode"].s = tf.compat.as_bytes("allow_mix_precison")
custom_op.parameter_map["iterations_per_loop"].i = 10

with tf.compat.v1.Session(config=config) as sess:
    print(sess.run(tf.constant(1)))
