"""A ported script with a dump configuration (NPURunConfig + DumpConfig)."""

import sys

import numpy as np
import tensorflow as tf
from npu_bridge.npu_init import *

dump_path, model_dir = sys.argv[1], sys.argv[2]
features = np.random.RandomState(0).randn(64, 4).astype(np.float32)


def model_fn(features, labels, mode):
    loss = tf.compat.v1.losses.mean_squared_error(labels, tf.compat.v1.layers.dense(features, 1))
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step()
    )
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


dump_config = DumpConfig(enable_dump=True, dump_path=dump_path, dump_step="0|5", dump_mode="all")
config = NPURunConfig(model_dir=model_dir, dump_config=dump_config)
estimator = NPUEstimator(model_fn=model_fn, config=config)
estimator.train(lambda: tf.data.Dataset.from_tensor_slices((features, features[:, :1])).repeat().batch(8), max_steps=10)
print("global_step", estimator.get_variable_value("global_step"))
