"""Steps per second of one tiny model trained three ways, side by side in one run:

  NPUEstimator, iterations_per_loop=1      (one step per session run)
  NPUEstimator, iterations_per_loop=100    (100 steps per session run, input pulled inside the loop)
  Keras, compile(steps_per_execution=100)  (the host's own multi-step execution)

Timing starts after the first session run (the first train-function call for Keras), so graph building, and the
loop variants and grappler optimisations a first run makes, are excluded.
From TensorFlow 2.16, which has no tf.estimator, only the Keras figure is measured.
    python benchmarks/estimator_steps_per_run.py [--steps=3000]
"""

import os
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from npu_bridge_compat.compat import estimator_api, tf1_keras_api  # noqa: E402
from npu_bridge_compat.estimator import NPUEstimator, NPURunConfig  # noqa: E402

BATCH = 32
FEATURES = np.random.RandomState(0).randn(BATCH * 64, 16).astype(np.float32)
LABELS = FEATURES[:, :1] * 0.5


def dataset():
    return tf.data.Dataset.from_tensor_slices((FEATURES, LABELS)).repeat().batch(BATCH, drop_remainder=True)


def model_fn(features, labels, mode):
    layers = tf1_keras_api("layers")  # Keras 2's TF1 layers (tf_keras from TensorFlow 2.16)
    hidden = layers.dense(features, 16, activation=tf.nn.relu)
    loss = tf.compat.v1.losses.mean_squared_error(labels, layers.dense(hidden, 1))
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.01).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step()
    )
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


class Timer(tf.compat.v1.train.SessionRunHook):
    def begin(self):
        self._global_step = tf.compat.v1.train.get_global_step()
        self._start = None

    def after_run(self, run_context, run_values):
        if self._start is None:  # the first run built what it needed: time the rest
            self._start = (run_context.session.run(self._global_step), time.perf_counter())

    def end(self, session):
        self.steps_per_second = (session.run(self._global_step) - self._start[0]) / (
            time.perf_counter() - self._start[1]
        )


def estimator_steps_per_second(iterations_per_loop: int, steps: int) -> float:
    config = NPURunConfig(
        model_dir=tempfile.mkdtemp(),
        iterations_per_loop=iterations_per_loop,
        save_checkpoints_steps=None,
        save_checkpoints_secs=10**6,
        log_step_count_steps=10**6,
    )
    timer = Timer()
    NPUEstimator(model_fn, config=config).train(lambda: dataset(), max_steps=steps, hooks=[timer])
    return timer.steps_per_second


def keras_steps_per_second(steps_per_execution: int, steps: int) -> float:
    model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu"), tf.keras.layers.Dense(1)])
    model.compile(tf.keras.optimizers.SGD(0.01), "mse", steps_per_execution=steps_per_execution)
    model.fit(dataset(), steps_per_epoch=steps_per_execution, epochs=1, verbose=0)  # trace outside the timing
    start = time.perf_counter()
    model.fit(dataset(), steps_per_epoch=steps, epochs=1, verbose=0)
    return steps / (time.perf_counter() - start)


def main(argv: list[str]) -> None:
    steps = int(next((a.split("=")[1] for a in argv if a.startswith("--steps=")), 3000))
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
    keras = keras_steps_per_second(100, steps)
    if estimator_api() is None:
        print(
            f"NPUEstimator: not measured, TensorFlow {tf.__version__} has no tf.estimator here (the Estimator door "
            "needs tensorflow-estimator 2.15: pip install tensorflow-estimator==2.15.0)"
        )
        print(f"Keras steps_per_execution=100         {keras:8.0f} steps/s")
        return
    one = estimator_steps_per_second(1, steps)
    hundred = estimator_steps_per_second(100, steps)
    print(f"NPUEstimator iterations_per_loop=1    {one:8.0f} steps/s")
    print(f"NPUEstimator iterations_per_loop=100  {hundred:8.0f} steps/s")
    print(f"Keras steps_per_execution=100         {keras:8.0f} steps/s")
    print(f"ratio ipl=100 / ipl=1                 {hundred / one:8.2f}  (target >= 3)")
    print(f"ratio ipl=100 / Keras spe=100         {hundred / keras:8.2f}  (target >= 1.0)")


if __name__ == "__main__":
    main(sys.argv[1:])
