"""The host probe of reduced precision (runtime/precision.py runs it in a child process):

    python -m npu_bridge_compat.runtime.precision_probe GRAPPLER_PASS

prints one JSON line, {"matmul": speed-up, "conv": speed-up}: float32's time over the time under the pass, for a
short training step (forward, gradients, SGD update) dominated by each kind of work:
- matmul: two 512-wide dense layers on a batch of 256;
- conv: two 3x3 convolutions of 32 channels over 16 images of 32x32.
Each step runs in two sessions, the pass off and on, warmed up, then in `ROUNDS` interleaved rounds of `RUNS` runs;
the ratio of the medians. A few seconds with TensorFlow's import.
"""

from __future__ import annotations

import json
import statistics
import sys
import time

ROUNDS = 5
RUNS = 4
WARM_UP_RUNS = 2


def matmul_step(v1, tf):
    x = tf.random.stateless_normal([256, 512], seed=[1, 2])
    hidden = x
    for layer in range(2):
        weights = v1.get_variable(f"w{layer}", [512, 512], initializer=v1.glorot_uniform_initializer(seed=layer))
        hidden = tf.nn.relu(tf.matmul(hidden, weights))
    return tf.reduce_mean(tf.square(hidden))


def conv_step(v1, tf):
    images = tf.random.stateless_normal([16, 32, 32, 32], seed=[3, 4])
    hidden = images
    for layer in range(2):
        kernel = v1.get_variable(f"k{layer}", [3, 3, 32, 32], initializer=v1.glorot_uniform_initializer(seed=layer))
        hidden = tf.nn.relu(tf.nn.conv2d(hidden, kernel, strides=1, padding="SAME"))
    return tf.reduce_mean(tf.square(hidden))


WORKLOADS = {"matmul": matmul_step, "conv": conv_step}


def speedup(build, grappler_pass: str) -> float:
    import tensorflow as tf
    from tensorflow.core.protobuf import rewriter_config_pb2

    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        loss = build(v1, tf)
        train = v1.train.GradientDescentOptimizer(0.01).minimize(loss)
        initialize = v1.global_variables_initializer()
    sessions = {}
    for reduced in (False, True):
        config = v1.ConfigProto()
        if reduced:
            setattr(config.graph_options.rewrite_options, grappler_pass, rewriter_config_pb2.RewriterConfig.ON)
        session = v1.Session(graph=graph, config=config)
        session.run(initialize)
        for _ in range(WARM_UP_RUNS):
            session.run(train)
        sessions[reduced] = session
    times: dict[bool, list[float]] = {False: [], True: []}
    for round_number in range(ROUNDS):
        for reduced in (round_number % 2 == 0, round_number % 2 != 0):
            started = time.perf_counter()
            for _ in range(RUNS):
                sessions[reduced].run(train)
            times[reduced].append(time.perf_counter() - started)
    for session in sessions.values():
        session.close()
    return statistics.median(times[False]) / statistics.median(times[True])


def main(arguments: list[str]) -> int:
    if len(arguments) != 1 or not arguments[0].startswith("auto_mixed_precision"):
        print(
            f"not a grappler mixed-precision pass: {' '.join(arguments)!r} (usage: python -m "
            "npu_bridge_compat.runtime.precision_probe auto_mixed_precision_onednn_bfloat16)",
            file=sys.stderr,
        )
        return 2
    print(json.dumps({name: round(speedup(build, arguments[0]), 3) for name, build in WORKLOADS.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
