"""A ported Estimator script, as Ascend's migration leaves them (unmodified by the tests)."""

import sys

import numpy as np
import tensorflow as tf
from hccl.manage.api import get_rank_size
from npu_bridge.estimator import npu_ops
from npu_bridge.estimator.npu.npu_config import NPURunConfig
from npu_bridge.estimator.npu.npu_estimator import NPUEstimator
from npu_bridge.npu_init import *

model_dir = sys.argv[1]
features = np.random.RandomState(0).randn(256, 4).astype(np.float32)


def input_fn():
    return tf.data.Dataset.from_tensor_slices((features, features[:, :1])).repeat().batch(8, drop_remainder=True)


def model_fn(features, labels, mode, params):
    hidden = npu_ops.dropout(tf.compat.v1.layers.dense(features, 8, activation=tf.nn.relu), keep_prob=1.0)
    loss = tf.compat.v1.losses.mean_squared_error(labels, tf.compat.v1.layers.dense(hidden, 1))
    manager = ExponentialUpdateLossScaleManager(init_loss_scale=2**10, incr_every_n_steps=100)
    optimizer = NPULossScaleOptimizer(NPUDistributedOptimizer(tf.compat.v1.train.AdamOptimizer(0.01)), manager)
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return NPUEstimatorSpec(mode, loss=loss, train_op=train_op)


config = NPURunConfig(
    model_dir=model_dir,
    iterations_per_loop=10,
    precision_mode="allow_mix_precision",
    save_checkpoints_steps=20,
    hcom_parallel=True,
    enable_data_pre_proc=True,
)
estimator = NPUEstimator(model_fn=model_fn, config=config, params={"rank_size": get_rank_size()})
estimator.train(input_fn, max_steps=40, hooks=npu_hooks_append())
print("global_step", estimator.get_variable_value("global_step"))
