"""A ported sess.run script in mixed compute, written as Ascend's guide shows: npu_config_proto, the
forward-compatibility horizon around the model (FusedBatchNorm instead of V3), and a without_npu_compile_scope
region for a host-only step.

    python examples/session/mixed_compute.py
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from npu_bridge_compat.compat import select_keras_2  # noqa: E402

select_keras_2()  # tf.layers are Keras 2: tf_keras from TensorFlow 2.16, chosen before TensorFlow loads

import numpy as np  # noqa: E402
import tensorflow.compat.v1 as tf  # noqa: E402
from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig  # noqa: E402

from npu_bridge_compat import scope as npu_scope  # noqa: E402
from npu_bridge_compat.session import NPUSession, npu_config_proto  # noqa: E402

tf.disable_v2_behavior()
tf.logging.set_verbosity(tf.logging.ERROR)

images = np.random.RandomState(0).randn(256, 8, 8, 3).astype(np.float32)
labels = (images[..., 0].mean(axis=(1, 2)) > 0).astype(np.int64)

dataset = tf.data.Dataset.from_tensor_slices((images, labels)).repeat().batch(16, drop_remainder=True)
iterator = tf.data.make_initializable_iterator(dataset)
x, y = iterator.get_next()
with npu_scope.without_npu_compile_scope():
    x = tf.image.random_flip_left_right(x, seed=1)  # a host-side augmentation step
with tf.compat.forward_compatibility_horizon(2019, 5, 1):
    net = tf.layers.conv2d(x, 8, 3, padding="same", activation=tf.nn.relu)
    net = tf.layers.batch_normalization(net, training=True, fused=True)
    logits = tf.layers.dense(tf.layers.flatten(net), 2)
    loss = tf.losses.sparse_softmax_cross_entropy(y, logits)
    global_step = tf.train.get_or_create_global_step()
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        train_op = tf.train.AdamOptimizer(0.01).minimize(loss, global_step=global_step)

config = npu_config_proto(tf.ConfigProto())
custom_op = config.graph_options.rewrite_options.custom_optimizers[0]
custom_op.parameter_map["use_off_line"].b = True
custom_op.parameter_map["mix_compile_mode"].b = True
config.graph_options.rewrite_options.remapping = RewriterConfig.OFF

batch_norm_ops = sorted({op.type for op in tf.get_default_graph().get_operations() if "BatchNorm" in op.type})
print("batch-norm ops in the graph:", ", ".join(batch_norm_ops))
with NPUSession(config=config) as sess:
    sess.run([tf.global_variables_initializer(), iterator.initializer])
    for _ in range(100):
        _, loss_value = sess.run([train_op, loss])
    print(f"step {sess.run(global_step)}, loss {loss_value:.4f}")
