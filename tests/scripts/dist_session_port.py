"""A ported TF1 session script on several ranks (run with `--tf1`): hccl collectives checked value by value, then
training with NPUDistributedOptimizer and iterations_per_loop=10. Prints one JSON line per rank.

Then, as 8p scripts do, each rank saves into its own model_dir, restores from it in a fresh graph and evaluates
(the loss all-reduced across the ranks).

Usage: dist_session_port.py [--forever] [MODEL_DIR]   (--forever: keep training until stopped, printing each run)
"""

import json
import os
import sys

import dist_model
import numpy as np
import tensorflow as tf
from hccl.manage.api import create_group, get_group_rank_from_world_rank, get_rank_id, get_rank_size
from npu_bridge.estimator.npu.npu_hook import broadcast_global_variables
from npu_bridge.hccl import hccl_ops
from npu_bridge.npu_init import *

rank, size = get_rank_id(), get_rank_size()
last = size - 1
report = {"rank": rank}

# --- collectives ----------------------------------------------------------------------------------------
x = tf.constant([rank + 1.0, 10.0 * (rank + 1)])
checks = {reduction: hccl_ops.allreduce(x, reduction) for reduction in ("sum", "max", "min", "prod")}
checks["allgather"] = hccl_ops.allgather(x, size)
checks["broadcast"] = hccl_ops.broadcast([x], root_rank=1)[0]
checks["reduce"] = hccl_ops.reduce(x, "sum", root_rank=0)
checks["reduce_scatter"] = hccl_ops.reduce_scatter(
    tf.reshape(tf.range(2.0 * size), [2 * size, 1]) * (rank + 1), "sum", size
)
checks["int_sum"] = hccl_ops.allreduce(tf.constant([rank], tf.int8), "sum")
# all_to_all_v: rank r sends j + 1 copies of 100 r + j to rank j.
sends = [np.full(j + 1, 100 * rank + j, np.float32) for j in range(size)]
checks["all_to_all_v"] = hccl_ops.all_to_all_v(
    tf.constant(np.concatenate(sends)),
    tf.constant([j + 1 for j in range(size)], tf.int64),
    tf.constant(np.cumsum([0] + [j + 1 for j in range(size)])[:-1], tf.int64),
    tf.constant([rank + 1] * size, tf.int64),
    tf.constant([i * (rank + 1) for i in range(size)], tf.int64),
)
# all_to_all_v_c: rank i sends i + j + 1 copies of 100 i + j to rank j.
matrix = [[i + j + 1 for j in range(size)] for i in range(size)]
checks["all_to_all_v_c"] = hccl_ops.all_to_all_v_c(
    tf.constant(np.concatenate([np.full(matrix[rank][j], 100 * rank + j, np.float32) for j in range(size)])),
    tf.constant(matrix, tf.int64),
    rank,
)
if rank in (0, last):  # only the group's members build its collectives
    create_group("ends", 2, [0, last])
    report["group_rank"] = get_group_rank_from_world_rank(rank, "ends")
    checks["group_sum"] = hccl_ops.allreduce(x, "sum", group="ends")
    if rank == 0:  # in the same run as the receive's: ranks match collectives run by run
        checks["sent"] = hccl_ops.send(tf.constant([7.0, 8.0]), sr_tag=5, dest_rank=last)
    else:
        checks["received"] = hccl_ops.receive([2], tf.float32, sr_tag=5, src_rank=0)
with tf.Session() as sess:
    results = sess.run(checks)
report["collectives"] = {name: value.tolist() for name, value in results.items() if value is not None}

# --- training: each rank starts from its own weights; the broadcast gives everyone rank 0's -----------------
with tf.Graph().as_default():
    features, labels = tf.data.make_one_shot_iterator(dist_model.dataset(rank, size)).get_next()
    loss = dist_model.loss_of(features, labels, seed=rank)
    global_step = tf.train.get_or_create_global_step()
    optimizer = NPUDistributedOptimizer(tf.train.GradientDescentOptimizer(dist_model.LEARNING_RATE))
    train_op = optimizer.minimize(loss, global_step=global_step)
    config = npu_config_proto(tf.ConfigProto())
    config.graph_options.rewrite_options.custom_optimizers[0].parameter_map["iterations_per_loop"].i = 10
    with tf.Session(config=config) as sess:
        sess.run(tf.global_variables_initializer())
        report["own_initial"] = dist_model.weights(sess)
        sess.run(broadcast_global_variables(0))
        report["initial"] = dist_model.weights(sess)
        loop = util.set_iteration_per_loop(sess, train_op, 10)
        report["global_steps"] = [int(sess.run([loop, global_step])[1]) for _ in range(2)]
        report["final"] = dist_model.weights(sess)
        model_dirs = [argument for argument in sys.argv[1:] if not argument.startswith("--")]
        if model_dirs:
            os.makedirs(os.path.join(model_dirs[0], f"rank{rank}"), exist_ok=True)
            saved = tf.train.Saver().save(
                sess, os.path.join(model_dirs[0], f"rank{rank}", "model.ckpt"), global_step=global_step
            )
        print(json.dumps(report), flush=True)
        while "--forever" in sys.argv:
            print("trained to step", sess.run([loop, global_step])[1], flush=True)

if model_dirs:  # evaluate on every rank from its own checkpoint
    with tf.Graph().as_default():
        features, labels = tf.data.make_one_shot_iterator(dist_model.dataset(rank, size)).get_next()
        loss = dist_model.loss_of(features, labels, seed=rank)
        global_loss = hccl_ops.allreduce(loss, "sum") / size
        with tf.Session() as sess:
            tf.train.Saver().restore(sess, tf.train.latest_checkpoint(os.path.dirname(saved)))
            print(
                json.dumps(
                    {
                        "rank": rank,
                        "restored": dist_model.weights(sess),
                        "global_loss": float(sess.run(global_loss)),
                        "checkpoints": sorted(os.listdir(os.path.dirname(saved))),
                    }
                ),
                flush=True,
            )
