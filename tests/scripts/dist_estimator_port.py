"""A ported NPUEstimator script on several ranks: each rank reads its shard and starts from its own weights;
NPUEstimator broadcasts rank 0's (as the adapter's does when RANK_SIZE > 1) and NPUDistributedOptimizer averages
the gradients. Prints one JSON line per rank.

Then every rank evaluates (its metric all-reduced across the ranks, as 8p scripts report a global metric) and
reads a variable back from its checkpoint.

Usage: dist_estimator_port.py MODEL_DIR ITERATIONS_PER_LOOP STEPS [shared]
(rank r writes under MODEL_DIR/rank<r>; with `shared`, all ranks use MODEL_DIR)
"""

import json
import os
import sys

import dist_model
import tensorflow as tf
from npu_bridge.npu_init import *

rank, size = get_rank_id(), get_rank_size()
shared = sys.argv[4:] == ["shared"]
model_dir = sys.argv[1] if shared else os.path.join(sys.argv[1], f"rank{rank}")
iterations, steps = int(sys.argv[2]), int(sys.argv[3])


class ReportHook(tf.compat.v1.train.SessionRunHook):
    """Prints the global steps seen after each run and the final weights."""

    def begin(self):
        self.global_step, self.steps = tf.compat.v1.train.get_global_step(), []

    def after_run(self, run_context, run_values):
        self.steps.append(int(run_context.session.run(self.global_step)))

    def end(self, session):
        print(json.dumps({"rank": rank, "global_steps": self.steps, "final": dist_model.weights(session)}), flush=True)


def model_fn(features, labels, mode):
    loss = dist_model.loss_of(features, labels, seed=rank)
    if mode == tf.estimator.ModeKeys.EVAL:
        global_loss = hccl_ops.allreduce(loss, "sum") / size
        return NPUEstimatorSpec(
            mode, loss=loss, eval_metric_ops={"global_loss": tf.compat.v1.metrics.mean(global_loss)}
        )
    optimizer = NPUDistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(dist_model.LEARNING_RATE))
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return NPUEstimatorSpec(mode, loss=loss, train_op=train_op)


config = NPURunConfig(model_dir=model_dir, iterations_per_loop=iterations, save_checkpoints_steps=steps)
estimator = NPUEstimator(model_fn=model_fn, config=config)
estimator.train(lambda: dist_model.dataset(rank, size), max_steps=steps, hooks=[ReportHook()])
checkpoints = sorted(os.listdir(model_dir)) if os.path.isdir(model_dir) else []
evaluation = estimator.evaluate(lambda: dist_model.dataset(rank, size), steps=3)
print(
    json.dumps(
        {
            "rank": rank,
            "checkpoints": checkpoints,
            "evaluated_at": int(evaluation["global_step"]),
            "global_loss": float(evaluation["global_loss"]),
            "output_bias": estimator.get_variable_value("output/bias").tolist(),
        }
    ),
    flush=True,
)
