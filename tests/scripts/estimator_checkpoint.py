"""A tiny NPUEstimator model whose checkpoints the Estimator tests restore on the other TensorFlow line.

    python tests/scripts/estimator_checkpoint.py tests/data/estimator_checkpoints/tf2.15   # on TensorFlow 2.15
    python tests/scripts/estimator_checkpoint.py tests/data/estimator_checkpoints/tf2.21   # on TensorFlow 2.21

writes the checkpoint of step 10 (the variables and the `checkpoint` state file only: a few hundred bytes).
"""

import os
import shutil
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from npu_bridge_compat.compat import select_keras_2, tf1_keras_api

select_keras_2()

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

FEATURES = np.random.RandomState(3).randn(40, 3).astype("float32")
LABELS = FEATURES @ np.array([[1.0, -1.0], [0.5, 0.0], [0.0, 2.0]], "float32")
STEPS = 10


def input_fn():
    return tf.data.Dataset.from_tensor_slices((FEATURES, LABELS)).repeat().batch(4)


def model_fn(features, labels, mode):
    outputs = tf1_keras_api("layers").dense(features, 2, name="linear")
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={"outputs": outputs})
    loss = tf.reduce_mean(tf.square(outputs - labels))
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.05).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step()
    )
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def main(target: str) -> None:
    from npu_bridge_compat.estimator import NPUEstimator, NPURunConfig

    work = tempfile.mkdtemp()
    config = NPURunConfig(model_dir=work, iterations_per_loop=5, save_checkpoints_steps=STEPS)
    NPUEstimator(model_fn, config=config).train(input_fn, max_steps=STEPS)
    os.makedirs(target, exist_ok=True)
    prefix = f"model.ckpt-{STEPS}"
    for name in os.listdir(work):
        if name.startswith(prefix) and not name.endswith(".meta"):  # the graph is model_fn's, built anew
            shutil.copy(os.path.join(work, name), target)
    with open(os.path.join(target, "checkpoint"), "w") as state:
        state.write(f'model_checkpoint_path: "{prefix}"\nall_model_checkpoint_paths: "{prefix}"\n')
    shutil.rmtree(work)


if __name__ == "__main__":
    main(sys.argv[1])
