"""Session door, side by side in one run:

1. util.set_iteration_per_loop with N=100: one sess.run of the looped op vs 100 sess.run(train_op), same model
   (a tiny dataset-fed MLP), in steps per second (target >= 2.5x);
2. NPUSession.run vs a raw tf.compat.v1.Session.run on a tiny graph: the wrapper's overhead against a session
   with the same host config (target <= 2%), and against TensorFlow's default config.

  python benchmarks/session_iterations_per_loop.py
"""

import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from npu_bridge_compat.compat import select_keras_2  # noqa: E402

select_keras_2()  # tf.layers are Keras 2: tf_keras from TensorFlow 2.16, chosen before TensorFlow loads

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from npu_bridge_compat import util  # noqa: E402
from npu_bridge_compat.session import NPUSession, npu_config_proto  # noqa: E402

v1 = tf.compat.v1
N = 100
FEATURES = np.random.RandomState(0).randn(2048, 16).astype(np.float32)


def looped_vs_single(rounds: int = 5) -> tuple[float, float]:
    with tf.Graph().as_default():
        iterator = v1.data.make_initializable_iterator(
            tf.data.Dataset.from_tensor_slices((FEATURES, FEATURES[:, :1])).repeat().batch(32)
        )
        x, y = iterator.get_next()
        hidden = v1.layers.dense(x, 16, activation=tf.nn.relu)
        loss = v1.losses.mean_squared_error(y, v1.layers.dense(hidden, 1))
        train_op = v1.train.GradientDescentOptimizer(0.01).minimize(
            loss, global_step=v1.train.get_or_create_global_step()
        )
        config = npu_config_proto(v1.ConfigProto())
        config.graph_options.rewrite_options.custom_optimizers[0].parameter_map["iterations_per_loop"].i = N
        with NPUSession(config=config) as sess:
            sess.run([v1.global_variables_initializer(), iterator.initializer])
            looped = util.set_iteration_per_loop(sess, train_op, N)
            sess.run(looped), sess.run(train_op)  # warm up both
            looped_rates, single_rates = [], []
            for _ in range(rounds):
                start = time.perf_counter()
                for _ in range(10):
                    sess.run(looped)
                looped_rates.append(10 * N / (time.perf_counter() - start))
                start = time.perf_counter()
                for _ in range(10 * N):
                    sess.run(train_op)
                single_rates.append(10 * N / (time.perf_counter() - start))
    return statistics.median(looped_rates), statistics.median(single_rates)


def run_overhead(runs: int = 500, rounds: int = 60) -> tuple[float, float]:
    """NPUSession.run against tf.compat.v1.Session.run of a tiny graph, in short blocks of runs that alternate, the
    median of the blocks' ratios: against a session with the host config NPUSession gives TensorFlow (the
    wrapper's own cost), and against one with TensorFlow's default config (the wrapper and the adapter's
    defaults it keeps: remapping off, ...)."""
    with tf.Graph().as_default():
        value = tf.constant(1.0) + 1.0
        wrapped = NPUSession(config=npu_config_proto(v1.ConfigProto()))
        same_config = v1.Session(config=wrapped.npu_plan.host_config(npu_config_proto(v1.ConfigProto())))
        default = v1.Session()
        sessions = (same_config, wrapped, default)
        seconds: dict[int, list[float]] = {index: [] for index in range(len(sessions))}
        for session in sessions:
            session.run(value)
        for round_number in range(rounds):
            order = list(range(len(sessions)))
            order = order[round_number % len(order) :] + order[: round_number % len(order)]
            for index in order:
                start = time.perf_counter()
                for _ in range(runs):
                    sessions[index].run(value)
                seconds[index].append(time.perf_counter() - start)
        for session in sessions:
            session.close()
    own = statistics.median(w / s for w, s in zip(seconds[1], seconds[0]))
    with_defaults = statistics.median(w / d for w, d in zip(seconds[1], seconds[2]))
    return own - 1.0, with_defaults - 1.0


def main() -> None:
    v1.logging.set_verbosity(v1.logging.ERROR)
    looped, single = looped_vs_single()
    own, with_defaults = run_overhead()
    print(f"set_iteration_per_loop N={N}: {looped:8.0f} steps/s")
    print(f"{N} separate sess.run:       {single:8.0f} steps/s")
    print(f"ratio                            {looped / single:8.2f}  (target >= 2.5)")
    print(f"NPUSession.run overhead vs raw Session.run, same host config: {own * 100:+.1f}%  (target <= 2%)")
    print(f"  against a raw Session.run with TensorFlow's default config: {with_defaults * 100:+.1f}%")


if __name__ == "__main__":
    main()
