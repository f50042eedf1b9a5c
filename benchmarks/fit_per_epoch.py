"""A Keras program that calls fit once per epoch (a custom outer loop, per-epoch evaluation), side by side in one
run: K fits of S steps of one model, plain Keras against NPUCallback (a new one given to each fit, as such loops
write it) and the TF2 door (`npu_device.open().as_default()`), each without options and with
precision_mode=allow_mix_precision. What a door decides by measurement (mixed precision where it is measured) is
decided in the first fit and kept for the others; what this costs or gains per fit call is the figure.

- small: a 2-layer 64-wide MLP on batches of 32 (per-call costs dominate: the target is at most 2 ms per fit
  beyond plain Keras, and allow_mix_precision at least 0.97x plain float32 wherever float32 is kept);
- mlp: benchmarks/precision.py's MLP (4 layers 1024 wide, batches of 256), plain float32 against
  allow_mix_precision through each door (where bfloat16 is native, the target is at least 1.6x).

Each setting runs in a fresh process (`python -m npu_bridge_compat run`, as a ported script runs: the TF2 door is
process-wide); rounds interleave the settings, and each setting's median over the rounds is reported, with its
ratio to plain Keras (above 1: faster) and its cost per fit call (the difference of the medians). A fit's time is
everything from its call to its return; the first fit (tracing, and the trials of what is measured) is shown apart
from the median of the later ones (a process's median, robust to the other loads of a shared machine), and the
best round (the least disturbed) beside the median.

    python benchmarks/fit_per_epoch.py [--rounds=5] [--models=small,mlp] [--fits=10] [--steps=50]
    python benchmarks/fit_per_epoch.py --paired [--fits=20] [--steps=50]

`--paired` measures NPUCallback's cost per fit where a shared machine's load swamps the rounds: in one process,
fits of a plain model and of one given a new NPUCallback alternate, and the median of the pairs' differences is
the cost (the TF2 door is process-wide, so it has no such pairing).

The table goes to stdout, with the CPU, its precision flags and the load average before the run.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import statistics
import subprocess
import sys
import time

PLAIN = "plain Keras"
MIX = {"precision_mode": "allow_mix_precision"}


@dataclasses.dataclass(frozen=True)
class Setting:
    name: str
    door: str  # "plain", "callback" or "tf2"
    options: dict


SETTINGS = (
    Setting(PLAIN, "plain", {}),
    Setting("NPUCallback()", "callback", {}),
    Setting("NPUCallback(allow_mix_precision)", "callback", MIX),
    Setting("npu_device.open()", "tf2", {}),
    Setting("npu_device.open() allow_mix_precision", "tf2", MIX),
)
# (hidden layers, width, inputs, batch, fits, steps per fit); --fits / --steps override the small model's
MODELS = {"small": (2, 64, 64, 32, 10, 50), "mlp": (4, 1024, 1024, 256, 4, 16)}
# the mlp is about precision: plain float32 against allow_mix_precision through each door
SETTINGS_OF = {"small": SETTINGS, "mlp": tuple(s for s in SETTINGS if s.door == "plain" or s.options == MIX)}


def measure(model_name: str, setting: Setting, fits: int, steps: int) -> list[float]:
    """Seconds of each of `fits` fits of `steps` steps in this process (the child's side)."""
    if setting.door == "tf2":
        import npu_device

        for name, value in setting.options.items():
            setattr(npu_device.global_options(), name, value)
        npu_device.open().as_default()
    import numpy as np
    import tensorflow as tf

    from npu_bridge_compat.keras import NPUCallback

    layers, width, inputs, batch, _, _ = MODELS[model_name]
    random = np.random.RandomState(0)
    features = random.rand(batch * 8, inputs).astype(np.float32)
    labels = random.randint(0, 10, batch * 8)
    data = tf.data.Dataset.from_tensor_slices((features, labels)).batch(batch).repeat()
    model = tf.keras.Sequential(
        [tf.keras.layers.Dense(width, activation="relu") for _ in range(layers)] + [tf.keras.layers.Dense(10)]
    )
    model.compile(tf.keras.optimizers.SGD(0.01), tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    seconds = []
    for _ in range(fits):
        callbacks = [NPUCallback(**setting.options)] if setting.door == "callback" else []
        start = time.perf_counter()
        model.fit(data, steps_per_epoch=steps, epochs=1, callbacks=callbacks, verbose=0)
        seconds.append(time.perf_counter() - start)
    return seconds


def paired(fits: int, steps: int) -> dict[str, list[float]]:
    """NPUCallback against plain Keras in one process (the child's side): two models of the small kind, one
    fitting plain and one with a new NPUCallback per fit, fit by fit in alternating order; per option set, the
    differences of each pair of fits after the first (a pair saw the machine in about the same state)."""
    import numpy as np
    import tensorflow as tf

    from npu_bridge_compat.keras import NPUCallback

    layers, width, inputs, batch, _, _ = MODELS["small"]
    random = np.random.RandomState(0)
    features, labels = random.rand(batch * 8, inputs).astype(np.float32), random.randint(0, 10, batch * 8)
    data = tf.data.Dataset.from_tensor_slices((features, labels)).batch(batch).repeat()

    def compiled():
        model = tf.keras.Sequential(
            [tf.keras.layers.Dense(width, activation="relu") for _ in range(layers)] + [tf.keras.layers.Dense(10)]
        )
        model.compile(tf.keras.optimizers.SGD(0.01), tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        return model

    def fit(model, callbacks) -> float:
        start = time.perf_counter()
        model.fit(data, steps_per_epoch=steps, epochs=1, callbacks=callbacks, verbose=0)
        return time.perf_counter() - start

    differences: dict[str, list[float]] = {}
    for setting in (s for s in SETTINGS if s.door == "callback"):
        plain, with_callback = compiled(), compiled()
        fit(plain, []), fit(with_callback, [NPUCallback(**setting.options)])  # tracing, trials
        for index in range(fits):
            order = (True, False) if index % 2 else (False, True)
            seconds = {
                door: fit(with_callback if door else plain, [NPUCallback(**setting.options)] if door else [])
                for door in order
            }
            differences.setdefault(setting.name, []).append(seconds[True] - seconds[False])
    return differences


def child(model_name: str, setting: Setting, fits: int, steps: int) -> list[float]:
    command = [sys.executable, "-m", "npu_bridge_compat", "run", __file__, "--child", model_name, setting.name]
    command += [f"--fits={fits}", f"--steps={steps}"]
    environment = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    finished = subprocess.run(command, capture_output=True, text=True, env=environment, check=False)
    if finished.returncode != 0:
        raise SystemExit(f"{setting.name} on {model_name} failed:\n{finished.stderr[-3000:]}")
    return json.loads(finished.stdout.strip().splitlines()[-1])


def host_line() -> str:
    from npu_bridge_compat.plan import detect_host

    host = detect_host()
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    return (
        f"{host.cpu_description}; flags {' '.join(host.cpu_flags) or 'none read'}; {os.cpu_count()} cores; "
        f"TensorFlow {host.tf_version}, Python {platform.python_version()}; load average {load} before the run"
    )


def benchmark(model_name: str, rounds: int, fits: int, steps: int) -> None:
    settings = SETTINGS_OF[model_name]
    first: dict[str, list[float]] = {setting.name: [] for setting in settings}
    later: dict[str, list[float]] = {setting.name: [] for setting in settings}
    for round_number in range(rounds):
        order = settings[round_number % len(settings) :] + settings[: round_number % len(settings)]
        for setting in order:
            seconds = child(model_name, setting, fits, steps)
            first[setting.name].append(seconds[0])
            later[setting.name].append(statistics.median(seconds[1:]))
    plain_first, plain_later = statistics.median(first[PLAIN]), statistics.median(later[PLAIN])
    plain_best = min(later[PLAIN])
    print(
        f"\n{model_name}: {fits} fits of {steps} steps, medians of {rounds} interleaved rounds; the first fit "
        "(tracing, trials) apart from the median of the others; 'best': the least disturbed round's"
    )
    for setting in settings:
        first_fit, later_fit = statistics.median(first[setting.name]), statistics.median(later[setting.name])
        best = min(later[setting.name])
        rounds_text = " ".join(f"{seconds * 1e3:.1f}" for seconds in later[setting.name])
        print(
            f"  {setting.name:<38} first {first_fit * 1e3:7.0f} ms ({plain_first / first_fit:4.2f}x)  later "
            f"{later_fit * 1e3:7.1f} ms per fit  {plain_later / later_fit:5.2f}x plain  "
            f"{(later_fit - plain_later) * 1e3:+6.1f} ms per fit  best {plain_best / best:5.2f}x "
            f"{(best - plain_best) * 1e3:+6.1f} ms  (later, per round: {rounds_text})",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--child", nargs=2, metavar=("MODEL", "SETTING"), help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--fits", type=int, default=None)
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--paired", action="store_true", help="NPUCallback's cost per fit, fit by fit in one process")
    parser.add_argument("--paired-child", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.paired_child:
        print(json.dumps(paired(arguments.fits, arguments.steps)))
        return
    if arguments.child:
        model_name, name = arguments.child
        setting = next(setting for setting in SETTINGS if setting.name == name)
        print(json.dumps(measure(model_name, setting, arguments.fits, arguments.steps)))
        return
    print(host_line(), flush=True)
    if arguments.paired:
        command = [sys.executable, "-m", "npu_bridge_compat", "run", __file__, "--paired-child"]
        command += [f"--fits={arguments.fits or 20}", f"--steps={arguments.steps or 50}"]
        environment = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
        finished = subprocess.run(command, capture_output=True, text=True, env=environment, check=True)
        differences = json.loads(finished.stdout.strip().splitlines()[-1])
        print(f"\nsmall, in one process: fits of {arguments.steps or 50} steps, plain and NPUCallback alternating")
        for name, values in differences.items():
            print(f"  {name:<38} {statistics.median(values) * 1e3:+6.1f} ms per fit (median of {len(values)} pairs)")
        return
    for model_name in arguments.models.split(","):
        *_, fits, steps = MODELS[model_name]
        if model_name == "small":
            fits, steps = arguments.fits or fits, arguments.steps or steps
        benchmark(model_name, arguments.rounds, fits, steps)


if __name__ == "__main__":
    main()
