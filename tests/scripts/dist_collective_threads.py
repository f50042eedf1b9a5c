"""Ported-style 2-rank script: many collectives, counting this process's OS threads before and after.

`--mode session`: one hccl_ops.allreduce per `sess.run` (graph mode, the session door's gRPC session);
`--mode function`: one allreduce per call of a `tf.function` (eager, as TF2 scripts and Keras run them);
`--mode stuck`: rank 1 runs one allreduce more than rank 0, which stays alive meanwhile (a diverging script).
Prints one JSON line per rank."""

import argparse
import json
import os
import time

import tensorflow as tf
from npu_bridge.hccl import hccl_ops
from npu_bridge.npu_init import *  # noqa: F401,F403 - the adapter's star import, as ported scripts have it

parser = argparse.ArgumentParser()
parser.add_argument("--mode", choices=["session", "function", "stuck"], required=True)
parser.add_argument("--collectives", type=int, default=1500)
args = parser.parse_args()
rank = int(os.environ["RANK_ID"])


def os_threads() -> int:
    return len(os.listdir("/proc/self/task"))


def report(**values) -> None:
    print(json.dumps({"rank": rank, **values}), flush=True)


if args.mode == "function":
    value = tf.constant([1.0, 2.0, float(rank)])

    @tf.function
    def reduced():
        return hccl_ops.allreduce(value, "sum")

    reduced()
    before = os_threads()
    for _ in range(args.collectives):
        result = reduced()
    report(before=before, after=os_threads(), result=result.numpy().tolist())
else:
    tf.compat.v1.disable_eager_execution()
    fed = tf.compat.v1.placeholder(tf.float32, [3])
    total = hccl_ops.allreduce(fed, "sum")
    with tf.compat.v1.Session() as sess:
        feed = {fed: [1.0, 2.0, float(rank)]}
        sess.run(total, feed)
        if args.mode == "stuck":
            if rank == 0:
                time.sleep(60)  # alive, heartbeating, never joining rank 1's extra collective
            else:
                started = time.monotonic()
                try:
                    sess.run(total, feed)
                finally:
                    report(waited=round(time.monotonic() - started, 1))
        else:
            before = os_threads()
            for _ in range(args.collectives):
                result = sess.run(total, feed)
            report(before=before, after=os_threads(), result=result.tolist())
