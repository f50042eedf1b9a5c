"""A long 2-rank job: a small model trained through the session door with NPUDistributedOptimizer (one allreduce
per step, as 8p scripts at iterations_per_loop=1 run), 20,000 steps by default, started by `launch`. Each rank
reports its OS threads and resident memory at the start and at the end, and its steps per second: both must stay
flat however long the job runs (a job that leaked a thread per collective died after a few thousand steps).

    python benchmarks/distributed_long_job.py [--steps 20000]
"""

import argparse
import json
import os
import subprocess
import sys
import time


def os_threads() -> int:
    return len(os.listdir("/proc/self/task"))


def resident_mb() -> float:
    with open("/proc/self/status") as status:
        kilobytes = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    return round(kilobytes / 1024, 1)


def rank_main(steps: int) -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf

    from npu_bridge_compat.distributed import NPUDistributedOptimizer, get_rank_id
    from npu_bridge_compat.session import NPUSession

    v1 = tf.compat.v1
    v1.disable_eager_execution()
    data = np.random.RandomState(get_rank_id()).randn(32, 16).astype(np.float32)
    features = v1.data.make_one_shot_iterator(tf.data.Dataset.from_tensors(data).repeat()).get_next()
    kernel = v1.get_variable("kernel", [16, 1], initializer=v1.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(features, kernel) - 1.0))
    train_op = NPUDistributedOptimizer(v1.train.GradientDescentOptimizer(0.01)).minimize(
        loss, global_step=v1.train.get_or_create_global_step()
    )
    with NPUSession() as sess:
        sess.run(v1.global_variables_initializer())
        sess.run(train_op)
        start = {"threads": os_threads(), "resident_mb": resident_mb()}
        began = time.perf_counter()
        for _ in range(steps):
            sess.run(train_op)
        seconds = time.perf_counter() - began
        end = {"threads": os_threads(), "resident_mb": resident_mb()}
    print(
        json.dumps(
            {
                "rank": get_rank_id(),
                "start": start,
                "end": end,
                "steps_per_s": round(steps / seconds),
                "collectives": steps,
            }
        ),
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--rank", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.rank:
        rank_main(arguments.steps)
        return
    began = time.perf_counter()
    job = subprocess.run(
        [
            sys.executable,
            "-m",
            "npu_bridge_compat",
            "launch",
            "-n",
            "2",
            __file__,
            "--rank",
            "--steps",
            str(arguments.steps),
        ],
        capture_output=True,
        text=True,
    )
    reports = [json.loads(line.split("] ", 1)[1]) for line in job.stdout.splitlines() if '] {"rank"' in line]
    for report in sorted(reports, key=lambda found: found["rank"]):
        print(
            f"rank {report['rank']}: {report['collectives']} steps (one allreduce each), "
            f"{report['steps_per_s']} steps/s; OS threads {report['start']['threads']} -> "
            f"{report['end']['threads']}; resident memory {report['start']['resident_mb']} -> "
            f"{report['end']['resident_mb']} MB"
        )
    print(f"job exit status {job.returncode} after {time.perf_counter() - began:.0f} s")
    if job.returncode != 0 or len(reports) != 2:
        sys.stderr.write(job.stdout[-3000:] + job.stderr[-3000:])
        sys.exit(1)


if __name__ == "__main__":
    main()
