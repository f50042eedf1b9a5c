"""A ported TF1 session script as a cluster's scheduler starts it on several ranks (run with `--tf1`): it says what
the adapter's rank API reads, then trains with NPUDistributedOptimizer and iterations_per_loop=10 from rank 0's
weights. Prints one JSON line per rank.

Usage: dist_scheduler_port.py [--forever]   (--forever: keep training until stopped, printing each run)
"""

import json
import sys

import dist_model
import tensorflow as tf
from hccl.manage.api import get_local_rank_id, get_local_rank_size, get_rank_id, get_rank_size
from npu_bridge.estimator.npu.npu_hook import broadcast_global_variables
from npu_bridge.npu_init import *

from npu_bridge_compat.distributed import ranks

rank, size = get_rank_id(), get_rank_size()
report = {
    "rank": rank,
    "size": size,
    "local_rank": get_local_rank_id(),
    "local_size": get_local_rank_size(),
    "device": ranks.device_id_source(),
}
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
        sess.run(broadcast_global_variables(0))
        loop = util.set_iteration_per_loop(sess, train_op, 10)
        report["global_steps"] = [int(sess.run([loop, global_step])[1]) for _ in range(2)]
        report["final"] = dist_model.weights(sess)
        print(json.dumps(report), flush=True)
        while "--forever" in sys.argv:
            print("trained to step", sess.run([loop, global_step])[1], flush=True)
