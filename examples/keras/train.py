"""A ported-style Keras training script: the NPU options travel in an NPUCallback.

python examples/keras/train.py [--iterations_per_loop=10] [--mix_compile_mode]
"""

import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from absl import app, flags  # noqa: E402

from npu_bridge_compat.keras import NPUCallback  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_integer("iterations_per_loop", 10, "Training steps per train-function call.")
flags.DEFINE_bool("mix_compile_mode", False, "Mixed compute (needs iterations_per_loop=1).")
flags.DEFINE_string("precision_mode", None, "NPU precision mode, e.g. allow_mix_precision.")
flags.DEFINE_integer("epochs", 3, "Epochs of 100 steps.")


def main(_):
    images = np.random.RandomState(0).randn(2048, 8, 8, 3).astype(np.float32)
    labels = (images[..., 0].mean(axis=(1, 2)) > 0).astype(np.int32)
    dataset = tf.data.Dataset.from_tensor_slices((images, labels)).shuffle(2048, seed=0).repeat().batch(32)
    model = tf.keras.Sequential(
        [
            tf.keras.layers.Conv2D(8, 3, padding="same", activation="relu", input_shape=(8, 8, 3)),
            tf.keras.layers.BatchNormalization(),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(2),
        ]
    )
    model.compile(
        tf.keras.optimizers.Adam(0.01),
        tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    npu = NPUCallback(
        iterations_per_loop=FLAGS.iterations_per_loop,
        mix_compile_mode=FLAGS.mix_compile_mode,
        precision_mode=FLAGS.precision_mode,
    )
    start = time.perf_counter()
    history = model.fit(dataset, epochs=FLAGS.epochs, steps_per_epoch=100, callbacks=[npu], verbose=0)
    steps = FLAGS.epochs * 100
    print(
        f"trained {steps} steps, loss {history.history['loss'][-1]:.4f}, "
        f"accuracy {history.history['accuracy'][-1]:.3f}, {steps / (time.perf_counter() - start):.0f} steps/s"
    )


if __name__ == "__main__":
    app.run(main)
