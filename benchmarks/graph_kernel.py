"""Graph-kernel fusion (enable_graph_kernel), fused vs unfused side by side in one run, interleaved rounds,
medians reported; the first run (tracing, XLA compilation) is timed separately as the compile cost.

- session, 1M float32 elements read from variables and written to one: MindSpore's two examples (mul then add;
  a custom op of sub and mul between a mul and a pow), a GELU followed by a normalisation, and all three in one
  graph (target: the chain >= 2.5x);
- Keras fit of a model whose step is mostly element-wise: 4096 features, three GELUs and a normalisation
  (target >= 1.3x); and, without a target, the same built of per-feature scale layers and Keras'
  LayerNormalization layer (whose FusedBatchNorm form and variable reads split the clusters);
- a session training step dominated by MatMul (2 dense blocks, 256 x 1024 x 1024) (target >= 0.97x: fusion must
  never make a model slower).

    python benchmarks/graph_kernel.py [--rounds=5] [--threads=1]
"""

import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from npu_bridge_compat.keras import NPUCallback  # noqa: E402  (sets XLA's fusion flags before TensorFlow runs)
from npu_bridge_compat.session import NPUSession, npu_config_proto  # noqa: E402

ELEMENTS = (1024, 1024)  # 1M floats


def session_config(fused: bool, threads: int):
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=threads, inter_op_parallelism_threads=threads)
    custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
    custom_op.name = "NpuOptimizer"
    custom_op.parameter_map["enable_graph_kernel"].b = fused
    return npu_config_proto(config)


def mindspore_mul_add(x, y):
    return x * 2.0 + y  # example 1: mul and add become one kernel


def mindspore_custom_op(x, y):
    a = x * 2.0
    custom = (a - y) * a  # "MyOp", a custom op composed of sub and mul
    return tf.pow(custom, 2.0)  # fused with the mul before it and the pow after it


def gelu_normalisation(x, y):
    h = tf.nn.gelu(x + y)
    mean, variance = tf.nn.moments(h, axes=[1], keepdims=True)
    return (h - mean) * tf.math.rsqrt(variance + 1e-5) * 0.5 + 0.1


def all_three(x, y):
    return mindspore_mul_add(x, y) + mindspore_custom_op(x, y) + gelu_normalisation(x, y)


def element_wise_session(build, fused: bool, threads: int, runs: int = 20):
    """(first run s, median run s, output) of `build(x, y)` over 1M floats, in a session."""
    graph = tf.Graph()
    with graph.as_default():
        random = np.random.RandomState(0)
        x = tf.compat.v1.Variable(random.randn(*ELEMENTS).astype(np.float32) * 0.5, name="x")
        y = tf.compat.v1.Variable(random.randn(*ELEMENTS).astype(np.float32) * 0.5, name="y")
        result = tf.compat.v1.Variable(tf.zeros(ELEMENTS), name="result")
        out = result.assign(build(x, y))  # materialised in memory, as a network's activations are
        checksum = tf.reduce_sum(result[:4, :4])
        init = tf.compat.v1.global_variables_initializer()
    with NPUSession(graph=graph, config=session_config(fused, threads)) as session:
        session.run(init)
        start = time.perf_counter()
        session.run(out.op)
        first = time.perf_counter() - start
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            session.run(out.op)
            times.append(time.perf_counter() - start)
        return first, statistics.median(times), session.run(checksum)


def matmul_step_session(fused: bool, threads: int, runs: int = 30):
    """(first run s, median step s, final loss) of a training step dominated by MatMul."""
    graph = tf.Graph()
    with graph.as_default():
        random = np.random.RandomState(1)
        x = tf.constant(random.randn(256, 1024).astype(np.float32))
        labels = tf.constant(random.randn(256, 1).astype(np.float32))
        h = x
        for block in range(2):
            w = tf.compat.v1.Variable(random.randn(1024, 1024).astype(np.float32) * 0.03, name=f"w{block}")
            h = tf.nn.relu(tf.matmul(h, w))
        w_out = tf.compat.v1.Variable(random.randn(1024, 1).astype(np.float32) * 0.03, name="w_out")
        loss = tf.reduce_mean(tf.square(tf.matmul(h, w_out) - labels))
        train = tf.compat.v1.train.GradientDescentOptimizer(1e-3).minimize(loss)
        init = tf.compat.v1.global_variables_initializer()
    with NPUSession(graph=graph, config=session_config(fused, threads)) as session:
        session.run(init)
        start = time.perf_counter()
        session.run(train)
        first = time.perf_counter() - start
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            session.run(train)
            times.append(time.perf_counter() - start)
        return first, statistics.median(times), session.run(loss)


class FeatureScale(tf.keras.layers.Layer):
    """x * scale + shift, one trainable pair per feature (element-wise)."""

    def build(self, input_shape):
        self.scale = self.add_weight(name="scale", shape=input_shape[-1:], initializer="ones")
        self.shift = self.add_weight(name="shift", shape=input_shape[-1:], initializer="zeros")

    def call(self, inputs):
        return inputs * self.scale + self.shift


def element_wise_keras(fused: bool, layers: bool = False, steps: int = 100):
    """(first fit s, median step s) of Keras fit with NPUCallback(iterations_per_loop=10): a 4096-wide batch of
    64 through three GELUs and a normalisation in one Lambda (or, with `layers`, through per-feature scales and
    Keras' LayerNormalization layer), then Dense(1)."""
    tf.keras.utils.set_random_seed(0)
    inputs = tf.keras.Input([4096])
    if layers:
        h = inputs
        for _ in range(3):
            h = tf.keras.layers.Lambda(tf.nn.gelu)(FeatureScale()(h))
        h = tf.keras.layers.LayerNormalization()(h)
    else:
        h = tf.keras.layers.Lambda(gelu_chain)(inputs)
    model = tf.keras.Model(inputs, tf.keras.layers.Dense(1)(h))
    model.compile(tf.keras.optimizers.SGD(0.01), "mse")
    random = np.random.RandomState(2)
    batch = (random.randn(64, 4096).astype(np.float32), random.randn(64, 1).astype(np.float32))
    dataset = tf.data.Dataset.from_tensors(batch).repeat()  # the input pipeline costs the same either way
    callback = NPUCallback(enable_graph_kernel=fused, iterations_per_loop=10)
    start = time.perf_counter()
    model.fit(dataset, steps_per_epoch=20, epochs=1, verbose=0, callbacks=[callback])
    first = time.perf_counter() - start
    start = time.perf_counter()
    model.fit(dataset, steps_per_epoch=steps, epochs=1, verbose=0, callbacks=[callback])
    return first, (time.perf_counter() - start) / steps


def gelu_chain(t):
    for _ in range(3):
        t = tf.nn.gelu(t * 1.1 + 0.1)
    mean, variance = tf.nn.moments(t, axes=[1], keepdims=True)
    return (t - mean) * tf.math.rsqrt(variance + 1e-5)


def main(argv: list[str]) -> None:
    rounds = int(next((a.split("=")[1] for a in argv if a.startswith("--rounds=")), 5))
    threads = int(next((a.split("=")[1] for a in argv if a.startswith("--threads=")), 1))
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    workloads = {
        "MindSpore example 1: mul + add (1M)": lambda fused: element_wise_session(mindspore_mul_add, fused, threads),
        "MindSpore example 2: mul, custom sub*mul, pow (1M)": lambda fused: element_wise_session(
            mindspore_custom_op, fused, threads
        ),
        "GELU + normalisation (1M)": lambda fused: element_wise_session(gelu_normalisation, fused, threads),
        "the chain: all three in one graph (1M)": lambda fused: element_wise_session(all_three, fused, threads),
        "Keras fit, element-wise-heavy model (4096 wide)": element_wise_keras,
        "(no target) the same with scale layers + LayerNormalization": lambda fused: element_wise_keras(fused, True),
        "MatMul-heavy training step (256x1024x1024, session)": lambda fused: matmul_step_session(fused, threads),
    }
    results = {name: {True: [], False: []} for name in workloads}
    for _ in range(rounds):  # interleaved: fused and unfused see the same machine state
        for name, run in workloads.items():
            for fused in (True, False):
                results[name][fused].append(run(fused))
    print(f"TensorFlow {tf.__version__}, {threads} thread(s), {rounds} rounds; medians")
    print(f"{'workload':<62} {'unfused ms':>11} {'fused ms':>9} {'speed-up':>9} {'compile s':>10}")
    for name, by_mode in results.items():
        fused = statistics.median(r[1] for r in by_mode[True])
        plain = statistics.median(r[1] for r in by_mode[False])
        compile_s = statistics.median(r[0] for r in by_mode[True]) - statistics.median(r[0] for r in by_mode[False])
        print(f"{name:<62} {plain * 1e3:11.2f} {fused * 1e3:9.2f} {plain / fused:8.2f}x {compile_s:10.2f}")
        if len(by_mode[True][0]) > 2:
            np.testing.assert_allclose(by_mode[True][0][2], by_mode[False][0][2], rtol=1e-4, err_msg=name)
    print("targets: the chain >= 2.5x, Keras element-wise >= 1.3x, MatMul-heavy >= 0.97x")
    print("compile s: the first run's extra time with fusion (XLA compiles each cluster once per shape)")


if __name__ == "__main__":
    main(sys.argv[1:])
