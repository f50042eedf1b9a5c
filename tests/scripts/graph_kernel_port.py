"""A ported session script whose step is mostly element-wise: `run --graph-kernel` (or `launch --graph-kernel`)
fuses it without a change to the script. Prints one JSON line: the XLA clusters the fusion report saw."""

import json
import os

import numpy as np
import tensorflow as tf
from npu_bridge.npu_init import *

from npu_bridge_compat.runtime.fusion import observed_fusion

tf = tf.compat.v1
tf.disable_eager_execution()
x = tf.placeholder(tf.float32, [16, 32])
hidden = tf.layers.dense(x, 32)
gelu = 0.5 * hidden * (1.0 + tf.math.erf(hidden / np.sqrt(2.0)))
loss = tf.reduce_mean(gelu * 1.5 + tf.tanh(hidden))
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)

with tf.Session(config=npu_config_proto()) as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(3):
        sess.run(train_op, {x: np.ones([16, 32], np.float32)})
clusters = sum(summary.clusters for summary in observed_fusion())
print(json.dumps({"rank": int(os.environ.get("RANK_ID", "0")), "clusters": clusters}))
