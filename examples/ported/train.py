"""A TensorFlow 1.15 training script as it was ported to Ascend, unchanged: `from npu_bridge.npu_init import *`,
an NpuOptimizer session config, `tf.Session`, `util.set_iteration_per_loop`. Plain TensorFlow cannot even import
it; run it with

    python -m npu_bridge_compat run --tf1 examples/ported/train.py [--steps=300] [--precision_mode=...]

The run prints the translation report once, its progress every 100 steps, then its loss and steps per second.
It works on every TensorFlow line npu_bridge_compat supports (this script is all TF1 session code).
"""

import time

import numpy as np
import tensorflow as tf
from npu_bridge.npu_init import *

flags = tf.app.flags
flags.DEFINE_integer("steps", 300, "Training steps.")
flags.DEFINE_integer("iterations_per_loop", 10, "Training steps per sess.run on the NPU.")
flags.DEFINE_string("precision_mode", "allow_mix_precision", "The NPU's precision mode.")
FLAGS = flags.FLAGS


def dataset():
    rng = np.random.RandomState(0)
    images = rng.randn(1024, 8, 8, 3).astype(np.float32)
    labels = (images[:, :4, :, 0].mean(axis=(1, 2)) > images[:, 4:, :, 0].mean(axis=(1, 2))).astype(np.int32)
    data = tf.data.Dataset.from_tensor_slices((images, labels)).shuffle(1024, seed=0).repeat()
    return data.batch(32, drop_remainder=True)  # static shapes, as the NPU needs


def main(_):
    iterator = dataset().make_initializable_iterator()
    images, labels = iterator.get_next()
    net = tf.layers.conv2d(images, 8, 3, padding="same", activation=tf.nn.relu)
    net = tf.layers.batch_normalization(net, training=True, fused=True)
    logits = tf.layers.dense(tf.layers.flatten(net), 2)
    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
    global_step = tf.train.get_or_create_global_step()
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        train_op = tf.train.AdamOptimizer(0.01).minimize(loss, global_step=global_step)

    config = tf.ConfigProto()
    custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
    custom_op.name = "NpuOptimizer"
    custom_op.parameter_map["use_off_line"].b = True
    custom_op.parameter_map["precision_mode"].s = tf.compat.as_bytes(FLAGS.precision_mode)
    custom_op.parameter_map["iterations_per_loop"].i = FLAGS.iterations_per_loop
    config.graph_options.rewrite_options.remapping = RewriterConfig.OFF

    with tf.Session(config=config) as sess:
        sess.run([tf.global_variables_initializer(), iterator.initializer])
        train_op = util.set_iteration_per_loop(sess, train_op, FLAGS.iterations_per_loop)
        start = shown = (sess.run(global_step), time.perf_counter())
        step = start[0]
        while step < FLAGS.steps:
            _, loss_value, step = sess.run([train_op, loss, global_step])  # loss: the loop's last step
            if step // 100 > shown[0] // 100:
                now = time.perf_counter()
                print(f"step {step}: {(step - shown[0]) / (now - shown[1]):.0f} steps/s", flush=True)
                shown = (step, now)
        seconds = time.perf_counter() - start[1]
    print(f"trained to step {step}, loss {loss_value:.4f}, {(step - start[0]) / seconds:.0f} steps/s")


if __name__ == "__main__":
    tf.app.run()
