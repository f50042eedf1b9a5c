"""A ported sess.run script that runs 10 training steps per sess.run with util.set_iteration_per_loop.

python examples/session/iterations_per_loop.py
"""

import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from npu_bridge_compat.compat import select_keras_2  # noqa: E402

select_keras_2()  # tf.layers are Keras 2: tf_keras from TensorFlow 2.16, chosen before TensorFlow loads

import numpy as np  # noqa: E402
import tensorflow.compat.v1 as tf  # noqa: E402

from npu_bridge_compat import util  # noqa: E402
from npu_bridge_compat.session import NPUSession, npu_config_proto  # noqa: E402

tf.disable_v2_behavior()
tf.logging.set_verbosity(tf.logging.ERROR)
ITERATIONS = 10

features = np.random.RandomState(0).randn(1024, 16).astype(np.float32)
targets = features @ np.linspace(-1, 1, 16, dtype=np.float32)[:, None]
iterator = tf.data.make_initializable_iterator(
    tf.data.Dataset.from_tensor_slices((features, targets)).repeat().batch(32, drop_remainder=True)
)
x, y = iterator.get_next()
loss = tf.losses.mean_squared_error(y, tf.layers.dense(tf.layers.dense(x, 32, activation=tf.nn.relu), 1))
global_step = tf.train.get_or_create_global_step()
train_op = tf.train.AdamOptimizer(0.01).minimize(loss, global_step=global_step)

config = npu_config_proto(tf.ConfigProto())
custom_op = config.graph_options.rewrite_options.custom_optimizers[0]
custom_op.parameter_map["iterations_per_loop"].i = ITERATIONS
custom_op.parameter_map["enable_data_pre_proc"].b = True

with NPUSession(config=config) as sess:
    sess.run([tf.global_variables_initializer(), iterator.initializer])
    train_op = util.set_iteration_per_loop(sess, train_op, ITERATIONS)
    start = time.perf_counter()
    for _ in range(50):  # the Python loop count is divided by N, as Ascend's guide says
        _, loss_value = sess.run([train_op, loss])  # loss: the last of the 10 iterations
    steps = sess.run(global_step)
    print(f"step {steps}, loss {loss_value:.4f}, {steps / (time.perf_counter() - start):.0f} steps/s")
