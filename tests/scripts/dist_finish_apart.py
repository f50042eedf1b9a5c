"""Ported-style 2-rank script whose ranks finish at different times: after the last collective, the rank named by
--late keeps working (saving, printing a summary) for --seconds before it exits; the other exits at once.
`--mode session` (graph mode) or `--mode eager`. Prints one JSON line per rank when it is done."""

import argparse
import json
import os
import time

import tensorflow as tf
from npu_bridge.hccl import hccl_ops
from npu_bridge.npu_init import *  # noqa: F401,F403 - the adapter's star import, as ported scripts have it

parser = argparse.ArgumentParser()
parser.add_argument("--mode", choices=["session", "eager"], required=True)
parser.add_argument("--late", type=int, required=True)
parser.add_argument("--seconds", type=float, default=3.0)
args = parser.parse_args()
rank = int(os.environ["RANK_ID"])

if args.mode == "eager":
    total = hccl_ops.allreduce(tf.constant([1.0, float(rank)]), "sum").numpy().tolist()
else:
    tf.compat.v1.disable_eager_execution()
    with tf.compat.v1.Session() as sess:
        total = sess.run(hccl_ops.allreduce(tf.constant([1.0, float(rank)]), "sum")).tolist()
if rank == args.late:
    time.sleep(args.seconds)
print(json.dumps({"rank": rank, "total": total}), flush=True)
