"""A TF 1.15 slim program as ported scripts write them (unmodified by the tests; run with `run --tf1 SCRIPT DIR`).

Trains a small convolutional net built under slim.arg_scope with tf.contrib.layers' initializer, regularizer and
batch norm on a tf.contrib.data.map_and_batch pipeline and checkpoints it; then runs a tf.contrib.slim.nets
ResNet-50 forward pass. Prints one JSON line for the test.
"""

import json
import os
import sys

import numpy as np
import tensorflow as tf
import tensorflow.contrib.slim as slim
from tensorflow.contrib.slim.nets import resnet_v1

model_dir = sys.argv[1]
rng = np.random.RandomState(0)
images = rng.rand(64, 8, 8, 1).astype(np.float32)
labels = (images[:, :4].mean(axis=(1, 2, 3)) > images[:, 4:].mean(axis=(1, 2, 3))).astype(np.int64)

dataset = tf.data.Dataset.from_tensor_slices((images, labels)).repeat()
dataset = dataset.apply(
    tf.contrib.data.map_and_batch(lambda x, y: (x * 2.0 - 1.0, y), batch_size=16, drop_remainder=True)
)
x, y = dataset.make_one_shot_iterator().get_next()

with slim.arg_scope(
    [slim.conv2d, slim.fully_connected],
    weights_initializer=tf.contrib.layers.xavier_initializer(),
    weights_regularizer=tf.contrib.layers.l2_regularizer(1e-4),
    normalizer_fn=tf.contrib.layers.batch_norm,
    normalizer_params={"is_training": True, "decay": 0.9},
):
    net = slim.conv2d(x, 8, [3, 3], scope="conv1")
    net = slim.max_pool2d(net, [2, 2], scope="pool1")
    logits = slim.fully_connected(slim.flatten(net), 2, activation_fn=None, normalizer_fn=None, scope="logits")
loss = tf.losses.sparse_softmax_cross_entropy(y, logits) + tf.add_n(tf.losses.get_regularization_losses())
global_step = tf.train.get_or_create_global_step()
train_op = slim.learning.create_train_op(loss, tf.train.AdamOptimizer(0.02), global_step=global_step)
saver = tf.train.Saver()
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    losses = [float(sess.run(train_op)) for _ in range(40)]
    checkpoint = saver.save(sess, os.path.join(model_dir, "model.ckpt"), global_step=global_step)
    step = int(sess.run(global_step))

with tf.Graph().as_default():
    inputs = tf.placeholder(tf.float32, [2, 64, 64, 3])
    with slim.arg_scope(resnet_v1.resnet_arg_scope()):
        net, end_points = resnet_v1.resnet_v1_50(inputs, num_classes=10, is_training=False)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        output, block4 = sess.run([net, end_points["resnet_v1_50/block4"]], {inputs: rng.rand(2, 64, 64, 3)})

print(
    json.dumps(
        {
            "global_step": step,
            "losses": losses,
            "checkpoint": checkpoint,
            "resnet_logits": list(output.shape),
            "resnet_block4": list(block4.shape),
            "resnet_finite": bool(np.isfinite(output).all()),
        }
    )
)
