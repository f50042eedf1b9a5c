"""A TF 1.15 program with batch norm switched by a tensor, through tf.contrib.layers and slim (run with
`run --tf1 SCRIPT`): tf_slim reads TensorFlow's private names that later lines moved. Prints one JSON line."""

import json

import numpy as np
import tensorflow as tf
import tensorflow.contrib.slim as slim

x = tf.placeholder(tf.float32, [4, 3])
is_training = tf.placeholder(tf.bool, [])
contrib = tf.contrib.layers.batch_norm(x, is_training=is_training, scope="contrib")
slim_out = slim.batch_norm(x, is_training=is_training, decay=0.5, scope="slim")
updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
data = np.arange(12, dtype=np.float32).reshape(4, 3)
with tf.Session() as session:
    session.run(tf.global_variables_initializer())
    training, _ = session.run([contrib, updates], {x: data, is_training: True})
    inference = session.run(slim_out, {x: data, is_training: False})
print(
    json.dumps(
        {
            "training_mean": np.abs(training.mean(axis=0)).max().item(),
            "training_std": training.std(axis=0).tolist(),
            "inference_first_row": inference[0].tolist(),
        }
    )
)
