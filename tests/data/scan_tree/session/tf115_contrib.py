"""A TF 1.15 script: top-level TF1 names and tensorflow.contrib, run with `run --tf1`."""
import tensorflow as tf
from npu_bridge.npu_init import *

x = tf.placeholder(tf.float32, [None, 4])
weights = tf.get_variable("w", [4, 1], initializer=tf.contrib.layers.xavier_initializer())
loss = tf.reduce_mean(tf.matmul(x, weights))
with tf.Session(config=npu_config_proto()) as sess:
    sess.run(tf.global_variables_initializer())
estimator_class = tf.contrib.tpu.TPUEstimator  # works on a host, with use_tpu off
