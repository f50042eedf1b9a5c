"""npu_device, side by side in one run: Keras fit of one small model under `npu_device.open().as_default()`
(the TF2 adapter's door, options as ported scripts set them) against the same fit without it (target: >= 0.95x).
open() is process-wide, so each measurement runs in a fresh process (`run`, as a ported script runs); rounds
alternate and medians are reported. Timing covers a second fit, after the functions were traced.

    python benchmarks/tf2_keras_fit.py [--steps=3000] [--rounds=5]
"""

import os
import statistics
import subprocess
import sys
import time


def measure(steps: int, door: bool) -> float:
    """Steps/s of one fit in this process (the child's side)."""
    if door:
        import npu_device

        npu_device.global_options().precision_mode = "must_keep_origin_dtype"
        npu_device.global_options().hcom_parallel = True
        npu_device.open().as_default()
    import numpy as np
    import tensorflow as tf

    features = np.random.RandomState(0).randn(2048, 64).astype(np.float32)
    dataset = tf.data.Dataset.from_tensor_slices((features, features[:, :1])).repeat().batch(32)
    model = tf.keras.Sequential(
        [
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(1),
        ]
    )
    model.compile(tf.keras.optimizers.SGD(0.01), "mse")
    model.fit(dataset, steps_per_epoch=200, epochs=1, verbose=0)
    start = time.perf_counter()
    model.fit(dataset, steps_per_epoch=steps, epochs=1, verbose=0)
    return steps / (time.perf_counter() - start)


def child(steps: int, door: bool) -> float:
    command = [sys.executable, "-m", "npu_bridge_compat", "run", __file__, "--child", str(steps), str(int(door))]
    environment = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    output = subprocess.run(command, capture_output=True, text=True, check=True, env=environment).stdout
    return float(output.strip().splitlines()[-1])


def main(argv: list[str]) -> None:
    if argv[:1] == ["--child"]:
        print(measure(int(argv[1]), argv[2] == "1"))
        return
    steps = int(next((a.split("=")[1] for a in argv if a.startswith("--steps=")), 3000))
    rounds = int(next((a.split("=")[1] for a in argv if a.startswith("--rounds=")), 5))
    rates: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(rounds):
        for door in (True, False):
            rates[door].append(child(steps, door))
    with_door, without = statistics.median(rates[True]), statistics.median(rates[False])
    print(f"Keras fit under npu_device.open().as_default()  {with_door:8.0f} steps/s  (rounds: {rates[True]})")
    print(f"Keras fit, plain TensorFlow                    {without:8.0f} steps/s  (rounds: {rates[False]})")
    print(f"ratio npu_device / plain {with_door / without:6.2f}  (target >= 0.95)")


if __name__ == "__main__":
    main(sys.argv[1:])
