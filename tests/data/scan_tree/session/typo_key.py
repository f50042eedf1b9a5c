"""A session script with a misspelt NpuOptimizer key: the adapter ignores it, so the loop would run one step."""
import tensorflow as tf
from npu_bridge.npu_init import *

config = tf.compat.v1.ConfigProto()
custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
custom_op.name = "NpuOptimizer"
custom_op.parameter_map["use_off_line"].b = True
custom_op.parameter_map["iteration_per_loop"].i = 10

with tf.compat.v1.Session(config=config) as sess:
    print(sess.run(tf.constant(1)))
