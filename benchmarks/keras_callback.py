"""Keras, side by side in one run on one tiny model: NPUCallback(iterations_per_loop=100) vs
compile(steps_per_execution=100) vs one step per train-function call (target: NPUCallback >= 0.95x the
steps_per_execution figure). Timing covers a second fit, after the functions were traced.

    python benchmarks/keras_callback.py [--steps=10000]
"""

import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from npu_bridge_compat.keras import NPUCallback  # noqa: E402

FEATURES = np.random.RandomState(0).randn(2048, 16).astype(np.float32)


def steps_per_second(steps: int, steps_per_execution: int = 1, callbacks=()) -> float:
    dataset = tf.data.Dataset.from_tensor_slices((FEATURES, FEATURES[:, :1])).repeat().batch(32)
    model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu"), tf.keras.layers.Dense(1)])
    model.compile(tf.keras.optimizers.SGD(0.01), "mse", steps_per_execution=steps_per_execution)
    model.fit(dataset, steps_per_epoch=200, epochs=1, verbose=0, callbacks=list(callbacks))
    start = time.perf_counter()
    model.fit(dataset, steps_per_epoch=steps, epochs=1, verbose=0, callbacks=list(callbacks))
    return steps / (time.perf_counter() - start)


def main(argv: list[str]) -> None:
    steps = int(next((a.split("=")[1] for a in argv if a.startswith("--steps=")), 10000))
    rates = {"callback": [], "spe": [], "one": []}
    for _ in range(5):  # interleaved rounds, medians reported
        rates["callback"].append(steps_per_second(steps, callbacks=[NPUCallback(iterations_per_loop=100)]))
        rates["spe"].append(steps_per_second(steps, steps_per_execution=100))
        rates["one"].append(steps_per_second(steps))
    callback, spe, one = (statistics.median(rates[k]) for k in ("callback", "spe", "one"))
    print(f"NPUCallback(iterations_per_loop=100)  {callback:8.0f} steps/s")
    print(f"compile(steps_per_execution=100)      {spe:8.0f} steps/s")
    print(f"one step per call                     {one:8.0f} steps/s")
    print(f"ratio NPUCallback / steps_per_execution {callback / spe:6.2f}  (target >= 0.95)")


if __name__ == "__main__":
    main(sys.argv[1:])
