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

    python benchmarks/fit_per_epoch.py [--rounds=5] [--models=small,mlp] [--fits=10] [--steps=50] [--data-autotune]
    python benchmarks/fit_per_epoch.py --paired [--rounds=5] [--fits=20] [--steps=50] [--data-autotune]

`--paired` measures NPUCallback's cost per fit where the spread between processes swamps the rounds (a fit of the
small model takes 18 to 23 ms depending on the process, plain Keras's too): in each of `--rounds` processes, one
model fits plain and with a new NPUCallback alternately, and the median of the pairs' differences is that
process's cost; the figure is the median over the processes, with its ratio to the plain fit's median (the TF2
door is process-wide, so it has no such pairing). Each process's function instances run a few per cent faster
or slower than another's, Keras' own and the callback's alike, so one process's cost is one draw of that.

Every setting's data is a repeated tf.data dataset with tf.data's autotuning off: with it on, the end of a fit
(the deletion of its iterator) often waits for the autotuning thread's next wake-up, whose period doubles as the
iterator lives, so a fit shorter than about 300 ms is often padded to it (here: fits of 75 ms to about 140 ms,
of 150 or 165 ms to about 305 ms), plain Keras's too, which hides what a door gains or costs.
`--data-autotune` keeps it on, as Keras' default.

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


def training_data(model_name: str, data_autotune: bool):
    """The model's repeated dataset of 8 batches, with tf.data's autotuning as asked (see the module's text)."""
    import numpy as np
    import tensorflow as tf

    _, _, inputs, batch, _, _ = MODELS[model_name]
    random = np.random.RandomState(0)
    features = random.rand(batch * 8, inputs).astype(np.float32)
    labels = random.randint(0, 10, batch * 8)
    data = tf.data.Dataset.from_tensor_slices((features, labels)).batch(batch).repeat()
    options = tf.data.Options()
    options.autotune.enabled = data_autotune
    return data.with_options(options)


def compiled_model(model_name: str):
    import tensorflow as tf

    layers, width, *_ = MODELS[model_name]
    model = tf.keras.Sequential(
        [tf.keras.layers.Dense(width, activation="relu") for _ in range(layers)] + [tf.keras.layers.Dense(10)]
    )
    model.compile(tf.keras.optimizers.SGD(0.01), tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def timed_fit(model, data, steps: int, callbacks: list) -> float:
    """Seconds from the fit's call to its return."""
    start = time.perf_counter()
    model.fit(data, steps_per_epoch=steps, epochs=1, callbacks=callbacks, verbose=0)
    return time.perf_counter() - start


def measure(model_name: str, setting: Setting, fits: int, steps: int, data_autotune: bool) -> list[float]:
    """Seconds of each of `fits` fits of `steps` steps in this process (the child's side)."""
    if setting.door == "tf2":
        import npu_device

        for name, value in setting.options.items():
            setattr(npu_device.global_options(), name, value)
        npu_device.open().as_default()
    from npu_bridge_compat.keras import NPUCallback

    data, model = training_data(model_name, data_autotune), compiled_model(model_name)
    return [
        timed_fit(model, data, steps, [NPUCallback(**setting.options)] if setting.door == "callback" else [])
        for _ in range(fits)
    ]


def paired(fits: int, steps: int, data_autotune: bool) -> dict[str, list[tuple[float, float]]]:
    """NPUCallback against plain Keras in one process (the child's side): per option set, one model of the small
    kind fits plain and with a new NPUCallback in alternating order (both read the same variables: what differs is
    the callback and the function it runs); the seconds of each pair of fits after the first (plain,
    NPUCallback), which saw the machine in about the same state."""
    from npu_bridge_compat.keras import NPUCallback

    data = training_data("small", data_autotune)
    pairs: dict[str, list[tuple[float, float]]] = {}
    for setting in (s for s in SETTINGS if s.door == "callback"):
        model = compiled_model("small")
        timed_fit(model, data, steps, []), timed_fit(model, data, steps, [NPUCallback(**setting.options)])
        for index in range(fits):
            order = (True, False) if index % 2 else (False, True)
            seconds = {
                door: timed_fit(model, data, steps, [NPUCallback(**setting.options)] if door else []) for door in order
            }
            pairs.setdefault(setting.name, []).append((seconds[False], seconds[True]))
    return pairs


def paired_benchmark(rounds: int, fits: int, steps: int, data_autotune: bool) -> None:
    """The paired fits in `rounds` processes: each process's median cost, and the median over processes (each
    process's function instances run a little faster or slower than another's, both Keras' own and the
    callback's: a process's cost is one draw of that)."""
    costs: dict[str, list[float]] = {}
    plains: dict[str, list[float]] = {}
    for _ in range(rounds):
        arguments = ["--paired-child", f"--fits={fits}", f"--steps={steps}"]
        pairs = child(arguments + (["--data-autotune"] * data_autotune), "the paired fits")
        for name, seconds in pairs.items():
            plains.setdefault(name, []).append(statistics.median(pair[0] for pair in seconds))
            costs.setdefault(name, []).append(statistics.median(pair[1] - pair[0] for pair in seconds))
    print(
        f"\nsmall, paired: in each of {rounds} processes, one model per option set fitting {fits} times plain and "
        f"with a new NPUCallback alternately ({steps} steps a fit); the median of each process's differences, and "
        "their median over the processes"
    )
    for name, process_costs in costs.items():
        plain, cost = statistics.median(plains[name]), statistics.median(process_costs)
        per_process = " ".join(f"{each * 1e3:+.2f}" for each in process_costs)
        print(
            f"  {name:<38} plain {plain * 1e3:5.1f} ms per fit, {cost * 1e3:+5.2f} ms per fit "
            f"({plain / (plain + cost):.3f}x plain; per process: {per_process} ms)"
        )


def child(arguments: list[str], failure: str):
    """What a child process (`run` of this file with `arguments`) printed last, read as JSON."""
    command = [sys.executable, "-m", "npu_bridge_compat", "run", __file__, *arguments]
    environment = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    finished = subprocess.run(command, capture_output=True, text=True, env=environment, check=False)
    if finished.returncode != 0:
        raise SystemExit(f"{failure} failed:\n{finished.stderr[-3000:]}")
    return json.loads(finished.stdout.strip().splitlines()[-1])


def host_line() -> str:
    from npu_bridge_compat.plan import detect_host

    host = detect_host()
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    return (
        f"{host.cpu_description}; flags {' '.join(host.cpu_flags) or 'none read'}; {os.cpu_count()} cores; "
        f"TensorFlow {host.tf_version}, Python {platform.python_version()}; load average {load} before the run"
    )


def benchmark(model_name: str, rounds: int, fits: int, steps: int, data_autotune: bool) -> None:
    settings = SETTINGS_OF[model_name]
    first: dict[str, list[float]] = {setting.name: [] for setting in settings}
    later: dict[str, list[float]] = {setting.name: [] for setting in settings}
    for round_number in range(rounds):
        order = settings[round_number % len(settings) :] + settings[: round_number % len(settings)]
        for setting in order:
            arguments = ["--child", model_name, setting.name, f"--fits={fits}", f"--steps={steps}"]
            arguments += ["--data-autotune"] if data_autotune else []
            seconds = child(arguments, f"{setting.name} on {model_name}")
            first[setting.name].append(seconds[0])
            later[setting.name].append(statistics.median(seconds[1:]))
    plain_first, plain_later = statistics.median(first[PLAIN]), statistics.median(later[PLAIN])
    plain_best = min(later[PLAIN])
    print(
        f"\n{model_name}: {fits} fits of {steps} steps, medians of {rounds} interleaved rounds; the first fit "
        "(tracing, trials) apart from the median of the others; 'best': the least disturbed round's; tf.data "
        f"autotuning {'on' if data_autotune else 'off'}"
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
    parser.add_argument("--paired", action="store_true", help="NPUCallback's cost per fit, fit by fit in each process")
    parser.add_argument("--paired-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--data-autotune", action="store_true", help="tf.data's autotuning on, as Keras' default")
    arguments = parser.parse_args()
    if arguments.paired_child:
        print(json.dumps(paired(arguments.fits, arguments.steps, arguments.data_autotune)))
        return
    if arguments.child:
        model_name, name = arguments.child
        setting = next(setting for setting in SETTINGS if setting.name == name)
        print(json.dumps(measure(model_name, setting, arguments.fits, arguments.steps, arguments.data_autotune)))
        return
    print(host_line(), flush=True)
    if arguments.paired:
        paired_benchmark(arguments.rounds, arguments.fits or 20, arguments.steps or 50, arguments.data_autotune)
        return
    for model_name in arguments.models.split(","):
        *_, fits, steps = MODELS[model_name]
        if model_name == "small":
            fits, steps = arguments.fits or fits, arguments.steps or steps
        benchmark(model_name, arguments.rounds, fits, steps, arguments.data_autotune)


if __name__ == "__main__":
    main()
