"""A TF 1.15 TPUEstimator program after Ascend's early migration (unmodified by the tests; run with
`run --tf1 SCRIPT MODEL_DIR MNIST_DIR`): MNIST from tensorflow.examples' input_data, tf.contrib.tpu's TPUEstimator,
TPUEstimatorSpec, RunConfig, TPUConfig and CrossShardOptimizer, and NPUDistributedOptimizer from the adapter's
old tensorflow.contrib.offline_train path. Prints one JSON line for the test.
"""

import json
import sys

import tensorflow as tf
from tensorflow.contrib.offline_train.python.npu.npu_optimizer import NPUDistributedOptimizer
from tensorflow.examples.tutorials.mnist import input_data

model_dir, data_dir = sys.argv[1], sys.argv[2]
mnist = input_data.read_data_sets(data_dir, one_hot=False, validation_size=8)


def input_fn(params):
    dataset = tf.data.Dataset.from_tensor_slices((mnist.train.images, mnist.train.labels.astype("int32")))
    return dataset.repeat().apply(
        tf.contrib.data.map_and_batch(lambda x, y: (x, y), params["batch_size"], drop_remainder=True)
    )


def metric_fn(labels, logits):
    return {"accuracy": tf.metrics.accuracy(labels, tf.argmax(logits, axis=1))}


def model_fn(features, labels, mode, params):
    logits = tf.layers.dense(features, 10, name="logits")
    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.contrib.tpu.TPUEstimatorSpec(mode, loss=loss, eval_metrics=(metric_fn, [labels, logits]))
    optimizer = NPUDistributedOptimizer(tf.train.GradientDescentOptimizer(0.5))
    optimizer = tf.contrib.tpu.CrossShardOptimizer(optimizer)
    train_op = optimizer.minimize(loss, global_step=tf.train.get_global_step())
    return tf.contrib.tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)


config = tf.contrib.tpu.RunConfig(
    model_dir=model_dir,
    save_checkpoints_steps=10,
    tpu_config=tf.contrib.tpu.TPUConfig(
        iterations_per_loop=5, num_shards=1, per_host_input_for_training=tf.contrib.tpu.InputPipelineConfig.PER_HOST_V2
    ),
)
estimator = tf.contrib.tpu.TPUEstimator(
    model_fn=model_fn, config=config, use_tpu=True, train_batch_size=16, eval_batch_size=16
)
estimator.train(input_fn, max_steps=1)
before = estimator.evaluate(input_fn, steps=2)
estimator.train(input_fn, max_steps=30)
after = estimator.evaluate(input_fn, steps=2)
print(
    json.dumps(
        {
            "global_step": int(after["global_step"]),
            "loss_before": float(before["loss"]),
            "loss_after": float(after["loss"]),
            "accuracy_after": float(after["accuracy"]),
            "train_examples": mnist.train.num_examples,
            "validation_examples": mnist.validation.num_examples,
        }
    )
)
