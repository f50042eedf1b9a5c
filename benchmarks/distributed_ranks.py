"""Several ranks against one, side by side in one run: samples per second of a matmul-heavy MLP trained through
the session door (NPUDistributedOptimizer, iterations_per_loop=10), with 1 rank and with 2 ranks, each rank held
to one CPU core (its affinity set before TensorFlow starts, so TensorFlow sizes its thread pools to that core).
Each rank trains on BATCH samples per step, so 2 ranks process twice the samples per step. Goal: >= 1.7x.
Two independent processes, one per core, are measured too: they show how much parallel work the host gives two
cores at all (shared caches and memory bandwidth, hyperthreads, other load), the ceiling for 2 ranks.

    python benchmarks/distributed_ranks.py [--steps 50] [--batch 4096] [--width 512]
"""

import argparse
import json
import os
import subprocess
import sys
import time

LOOP = 10


def rank_main(arguments) -> None:
    """One rank (or the single process): train, then print the samples per second it saw."""
    cores = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cores[int(os.environ["RANK_ID"]) % len(cores)]})
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf

    from npu_bridge_compat import util
    from npu_bridge_compat.distributed import NPUDistributedOptimizer, get_rank_size
    from npu_bridge_compat.session import NPUSession, npu_config_proto

    v1 = tf.compat.v1
    v1.disable_eager_execution()
    size, width, batch = get_rank_size(), arguments.width, arguments.batch
    data = np.random.RandomState(0).randn(batch, width).astype(np.float32)
    features = v1.data.make_one_shot_iterator(tf.data.Dataset.from_tensors(data).repeat()).get_next()
    hidden = features
    for layer in range(3):  # plain variables and matmuls: TF1 layers are not on every TensorFlow line
        kernel = v1.get_variable(f"kernel{layer}", [width, width], initializer=v1.glorot_uniform_initializer())
        hidden = tf.nn.relu(tf.matmul(hidden, kernel))
    loss = tf.reduce_mean(tf.square(hidden))
    train_op = NPUDistributedOptimizer(v1.train.GradientDescentOptimizer(1e-4)).minimize(
        loss, global_step=v1.train.get_or_create_global_step()
    )
    config = npu_config_proto(v1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1))
    config.graph_options.rewrite_options.custom_optimizers[0].parameter_map["iterations_per_loop"].i = LOOP
    with NPUSession(config=config) as sess:
        sess.run(v1.global_variables_initializer())
        looped = util.set_iteration_per_loop(sess, train_op, LOOP)
        sess.run(looped)  # warm up
        runs = max(1, arguments.steps // LOOP)
        start = time.perf_counter()
        for _ in range(runs):
            sess.run(looped)
        seconds = time.perf_counter() - start
    print(json.dumps({"samples_per_s": size * batch * runs * LOOP / seconds, "seconds": seconds}), flush=True)


def measure(processes: int, ranks: int, port: int = 0) -> list[float]:
    """Samples per second seen by each of `processes` processes (on cores 0, 1, ...), which form one job of
    `ranks` ranks (several ranks) or train alone (ranks=1)."""
    command = [sys.executable, __file__, "--rank", *sys.argv[1:]]
    environment = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}
    if ranks > 1:
        environment.update(RANK_SIZE=str(ranks), NPU_BRIDGE_COMPAT_PORT=str(port))
    started = [
        subprocess.Popen(command, env={**environment, "RANK_ID": str(index)}, stdout=subprocess.PIPE, text=True)
        for index in range(processes)
    ]
    rates = []
    for process in started:
        output, _ = process.communicate(timeout=1800)
        if process.returncode != 0:
            raise SystemExit(f"a process failed with status {process.returncode}")
        rates.append(json.loads(output.strip().splitlines()[-1])["samples_per_s"])
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=50, help="training steps measured")
    parser.add_argument("--batch", type=int, default=4096, help="samples per rank per step")
    parser.add_argument("--width", type=int, default=512, help="width of the three dense layers")
    parser.add_argument("--rank", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.rank:
        rank_main(arguments)
        return
    from npu_bridge_compat.distributed.launch import free_port_block

    cores = len(os.sched_getaffinity(0))
    print(
        f"{cores} CPU cores available; each rank is held to one"
        + ("" if cores >= 2 else " (the two ranks share it: expect no speed-up)")
    )
    one = measure(1, 1)[0]
    alone = sum(measure(2, 1))  # the host's own limit: two processes at once, talking to nobody
    two = min(measure(2, 2, free_port_block(2)))  # they step together: the slowest rank's view is the job's
    print(f"{'':<42}{'samples/s':>10}  {'vs 1 rank':>9}")
    for name, rate in [("1 rank", one), ("2 independent processes (host ceiling)", alone), ("2 ranks", two)]:
        print(f"{name:<42}{rate:>10.1f}  {rate / one:>8.2f}x")
    print(f"2 ranks vs 1: {two / one:.2f}x (goal >= 1.7x); {two / alone:.0%} of what this host runs in parallel")


if __name__ == "__main__":
    main()
