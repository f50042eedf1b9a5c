"""Each precision setting against float32, through the session door (NPUSession, as ported TF1 scripts run), on
three training steps, side by side in one run:

- mlp: a 4-layer 1024-wide MLP on a batch of 256 (matmul-heavy; issue 38's model);
- conv: three 3x3 convolutions (32, 64, 64 channels, two max-pools) and a dense layer, batch of 64 32x32 images;
- gates: one 1024-wide dense layer, then eight sigmoid/tanh gated updates of its 256x1024 activations, then a dense
  layer (element-wise-heavy: where reduced precision's casts cost more than its kernels gain).
On a GPU the sizes are 4x wider and the batches 4x larger, so that the step is not launch-bound.

Each setting's session is built once per model; settings whose host plans are the same (same session config,
environment and features: the float32 ones on a CPU, say) run the same graph and are measured once, listed
together. Each session first runs until its mixed-precision decision is made (auto: its first runs try both forms,
runtime/precision.py), timed apart as "first runs"; then `--rounds` rounds of `--steps` steps of every session,
interleaved step by step in an order rotated each step, and each setting's median (over the rounds) step time
against the float32 session's (no precision option). The float32 modes (force_fp32, must_keep_origin_dtype,
origin) run the float32 graph too on a CPU (their TF32 switch does nothing there): their ratio shows how far two
sessions of one graph differ on this machine. The row "forced" is allow_mix_precision with
NPU_BRIDGE_COMPAT_REDUCED_PRECISION=on: the pass in every run, as before the decision was measured.

    python benchmarks/precision.py [--rounds=5] [--steps=5] [--models=mlp,conv,gates]

The table goes to stdout; the sessions' translation reports and the decisions go to stderr.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from npu_bridge_compat.options.precision_modes import PRECISION_MODES, PRECISION_MODES_V2  # noqa: E402
from npu_bridge_compat.plan import detect_host  # noqa: E402
from npu_bridge_compat.plan.platform import REDUCED_PRECISION_ENV  # noqa: E402
from npu_bridge_compat.runtime.precision import precision_decisions  # noqa: E402
from npu_bridge_compat.session import NPUSession, npu_config_proto  # noqa: E402

v1 = tf.compat.v1
FLOAT32 = "float32 (no precision option)"
FORCED = "forced"
MOST_FIRST_RUNS = 30  # a trial takes at most 22 runs


@dataclasses.dataclass(frozen=True)
class Setting:
    name: str  # as the table shows it
    values: dict  # NpuOptimizer entries
    forced: bool = False


def settings() -> list[Setting]:
    chosen = [Setting(FLOAT32, {})]
    chosen += [Setting(f"precision_mode={mode}", {"precision_mode": mode}) for mode in PRECISION_MODES]
    chosen += [Setting(f"precision_mode_v2={mode}", {"precision_mode_v2": mode}) for mode in PRECISION_MODES_V2]
    chosen.append(Setting(FORCED, {"precision_mode": "allow_mix_precision"}, forced=True))
    return chosen


def mlp(x, scale: int):
    hidden = x
    for layer in range(4):
        hidden = tf.nn.relu(dense(hidden, 1024 * scale, f"dense{layer}"))
    return dense(hidden, 10, "logits")


def conv(x, scale: int):
    side = 32
    hidden = tf.reshape(x, [-1, side, side, 1])
    for layer, channels in enumerate((32, 64, 64)):
        kernel = variable(f"kernel{layer}", [3, 3, hidden.shape[-1], channels * scale])
        hidden = tf.nn.relu(tf.nn.conv2d(hidden, kernel, strides=1, padding="SAME"))
        if layer < 2:
            hidden = tf.nn.max_pool2d(hidden, 2, 2, "VALID")
    return dense(tf.reshape(hidden, [tf.shape(hidden)[0], -1]), 10, "logits")


def gates(x, scale: int):
    hidden = dense(x, 1024 * scale, "input")
    for _ in range(8):
        gate = tf.sigmoid(hidden) * tf.tanh(hidden * 0.5 + 0.1)
        hidden = hidden + gate * 0.3 - tf.square(gate) * 0.1
    return dense(hidden, 10, "logits")


MODELS = {"mlp": (mlp, 1024, 256), "conv": (conv, 1024, 64), "gates": (gates, 1024, 256)}  # (build, inputs, batch)


def variable(name: str, shape) -> tf.Variable:
    return v1.get_variable(name, shape, initializer=v1.glorot_uniform_initializer(seed=len(name)))


def dense(x, units: int, name: str):
    return tf.matmul(x, variable(f"{name}/w", [x.shape[-1], units])) + variable(f"{name}/b", [units])


def training_step(model: str, scale: int):
    """A graph whose train op runs one SGD step of `model`, and its initializer."""
    build, inputs, batch = MODELS[model]
    graph = tf.Graph()
    with graph.as_default():
        random = np.random.RandomState(0)
        x = tf.constant(random.rand(batch * scale, inputs).astype(np.float32))
        labels = tf.constant(random.randint(0, 10, batch * scale))
        logits = build(x, scale)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        train = v1.train.GradientDescentOptimizer(0.01).minimize(loss)
        initialize = v1.global_variables_initializer()
    return graph, train, initialize


def session_config(values: dict):
    config = npu_config_proto(v1.ConfigProto())
    entries = config.graph_options.rewrite_options.custom_optimizers[0].parameter_map
    for key, value in values.items():
        entries[key].s = value.encode()
    return config


def open_session(setting: Setting, model: str, scale: int):
    """(session, its train op, its plan's key): the plan's host settings, which equal settings share."""
    graph, train, initialize = training_step(model, scale)
    if setting.forced:
        os.environ[REDUCED_PRECISION_ENV] = "on"
        detect_host.cache_clear()
    try:
        session = NPUSession(graph=graph, config=session_config(setting.values))
    finally:
        if setting.forced:
            del os.environ[REDUCED_PRECISION_ENV]
            detect_host.cache_clear()
    session.run(initialize)
    plan = session.npu_plan
    key = (plan.host_config().SerializeToString(), tuple(sorted(plan.environment.items())), plan.features)
    return session, train, key


def first_runs(session, train) -> tuple[float, str]:
    """Run until the session's mixed-precision decision is made (if it has one to make): (seconds, what it kept)."""
    decided = len(precision_decisions())
    measured = session.npu_plan.mixed_precision
    runs = MOST_FIRST_RUNS if measured is not None and measured.choice.value == "measured" else 2
    start = time.perf_counter()
    for _ in range(runs):
        session.run(train)
        if len(precision_decisions()) > decided:
            break
    seconds = time.perf_counter() - start
    made = precision_decisions()[decided:]
    if made:
        return seconds, f"{made[0].dtype if made[0].reduced else 'float32'} kept ({made[0].speedup:.2f}x measured)"
    return seconds, measured.dtype if measured is not None else "float32"


def benchmark(model: str, rounds: int, steps: int, scale: int) -> list[tuple[list[str], str, float, float]]:
    """Per group of settings with the same plan: (setting names, what ran, first runs s, speed-up over float32)."""
    groups: dict = {}
    for setting in settings():
        session, train, key = open_session(setting, model, scale)
        if key in groups:
            session.close()
            groups[key]["names"].append(setting.name)
        else:
            groups[key] = {"names": [setting.name], "session": session, "train": train, "times": []}
    for group in groups.values():
        group["first"], group["ran"] = first_runs(group["session"], group["train"])
    ordered = list(groups.values())
    for round_number in range(rounds):
        spent = [0.0] * len(ordered)
        for step in range(steps):  # step by step, the order rotated: each round's load falls on every group alike
            shift = (round_number * steps + step) % len(ordered)
            for index in list(range(len(ordered)))[shift:] + list(range(len(ordered)))[:shift]:
                start = time.perf_counter()
                ordered[index]["session"].run(ordered[index]["train"])
                spent[index] += time.perf_counter() - start
        for group, seconds in zip(ordered, spent):
            group["times"].append(seconds / steps)
    baseline = next(group for group in ordered if FLOAT32 in group["names"])
    rows = []
    for group in ordered:
        group["session"].close()
        speedup = statistics.median(baseline["times"]) / statistics.median(group["times"])
        rows.append((group["names"], group["ran"], group["first"], speedup, statistics.median(group["times"])))
    return rows


def host_line() -> str:
    host = detect_host()
    device = f"{host.gpu_count} GPU(s), {host.gpu_description}" if host.has_gpu else "no GPU"
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    return (
        f"{host.cpu_description}; flags {' '.join(host.cpu_flags) or 'none read'}; {os.cpu_count()} cores; {device}; "
        f"TensorFlow {tf.__version__}, Python {platform.python_version()}; load average {load} before the run"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--models", default=",".join(MODELS))
    arguments = parser.parse_args()
    os.environ.pop(REDUCED_PRECISION_ENV, None)  # the default mode, auto, except for the "forced" row
    detect_host.cache_clear()
    scale = 4 if detect_host().has_gpu else 1
    print(host_line(), flush=True)
    for model in arguments.models.split(","):
        print(f"\n{model} (median of {arguments.rounds} interleaved rounds of {arguments.steps} steps):", flush=True)
        for names, ran, first, speedup, seconds in benchmark(model, arguments.rounds, arguments.steps, scale):
            figures = f"{speedup:5.2f}x  {seconds * 1e3:7.1f} ms/step  first runs {first:5.2f} s"
            print(f"  {figures}  {ran:<32}  {', '.join(names)}", flush=True)


if __name__ == "__main__":
    main()
