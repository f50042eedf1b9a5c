"""The phases of a ported 8p script on several ranks, as AlexNet-style scripts run them: train, then evaluate
every checkpoint (one NPUEstimator.evaluate each, until the input ends), predict and export. The metrics'
values are all-reduced (`hccl_ops.allreduce(metric[0], "sum") / rank_size`, the 8p scripts' global metric), an
evaluation hook runs a collective after every step and the evaluation's input_fn takes the ranks' least number of
batches. The script imports NPUEstimator and hccl_ops only (not
npu_init, which would send every session to the rank's server). Prints one JSON line per rank.

Usage: dist_phases_port.py MODEL_DIR PHASES [shared] [extra]
PHASES: comma-separated train, evaluate, predict, export, run in this process. Rank r uses MODEL_DIR/rank<r>, or
MODEL_DIR itself with `shared`. With `extra`, rank 0 first builds a collective the other ranks never build.
"""

import json
import os
import sys

import dist_model
import tensorflow as tf
from npu_bridge.estimator.npu.npu_config import NPURunConfig
from npu_bridge.estimator.npu.npu_estimator import NPUEstimator
from npu_bridge.estimator.npu.npu_optimizer import NPUDistributedOptimizer
from npu_bridge.hccl import hccl_ops

v1 = tf.compat.v1
STEPS, SAVE_EVERY, EVAL_BATCHES = 8, 4, 3
rank, size = int(os.environ["RANK_ID"]), int(os.environ["RANK_SIZE"])
phases = sys.argv[2].split(",")
model_dir = sys.argv[1] if "shared" in sys.argv[3:] else os.path.join(sys.argv[1], f"rank{rank}")

if "extra" in sys.argv[3:] and rank == 0:  # a rank-0-only op, built and never run
    with v1.Graph().as_default():
        hccl_ops.allreduce(v1.constant([1.0, 2.0]), "sum")
        hccl_ops.allreduce(v1.constant(1.0), "sum")


class GlobalStepsHook(v1.train.SessionRunHook):
    """Reads the sum of the ranks' global steps after every evaluation step (a collective in a hook). It runs after
    the step, not with it: a collective independent of the input, fetched with the step in which the input runs
    out, is cut off on the rank whose step ends first."""

    def begin(self):
        self.summed = hccl_ops.allreduce(v1.cast(v1.train.get_global_step(), v1.float32), "sum")
        self.seen = []

    def after_run(self, run_context, run_values):
        self.seen.append(float(run_context.session.run(self.summed)))


def all_ranks_mean(metric):
    value, update = metric
    return hccl_ops.allreduce(value, "sum") / size, update


def output_of(features):
    """The model's output, from the variables loss_of made."""
    with v1.variable_scope("", reuse=True):
        hidden = v1.nn.relu(v1.matmul(features, v1.get_variable("hidden/kernel")) + v1.get_variable("hidden/bias"))
        return v1.matmul(hidden, v1.get_variable("output/kernel")) + v1.get_variable("output/bias")


def model_fn(features, labels, mode):
    features = features["features"] if isinstance(features, dict) else features  # export's receiver: a dict
    if mode == tf.estimator.ModeKeys.PREDICT:
        dist_model.loss_of(features, v1.zeros_like(features[:, :1]), seed=rank)
        return tf.estimator.EstimatorSpec(mode, predictions={"y": output_of(features)})
    loss = dist_model.loss_of(features, labels, seed=rank)
    if mode == tf.estimator.ModeKeys.EVAL:
        absolute = v1.reduce_mean(v1.abs(output_of(features) - labels))
        metrics = {
            "global_loss": all_ranks_mean(v1.metrics.mean(loss)),
            "global_absolute": all_ranks_mean(v1.metrics.mean(absolute)),
        }
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops=metrics, evaluation_hooks=[hook])
    optimizer = NPUDistributedOptimizer(v1.train.GradientDescentOptimizer(dist_model.LEARNING_RATE))
    train_op = optimizer.minimize(loss, global_step=v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def evaluation_input():
    """The rank's shard, as many batches as the rank with fewest has (a collective in input_fn)."""
    batches = hccl_ops.allreduce(v1.constant(EVAL_BATCHES + rank, v1.int64), "min")
    return dist_model.dataset(rank, size).take(batches)


hook = GlobalStepsHook()
config = NPURunConfig(model_dir=model_dir, save_checkpoints_steps=SAVE_EVERY, iterations_per_loop=1)
estimator = NPUEstimator(model_fn=model_fn, config=config)
report = {"rank": rank}
for phase in phases:
    if phase == "train":
        estimator.train(lambda: dist_model.dataset(rank, size), max_steps=STEPS)
    elif phase == "evaluate":
        checkpoints = sorted(
            (int(name.split("-")[1].split(".")[0]), os.path.join(model_dir, name.rsplit(".", 1)[0]))
            for name in os.listdir(model_dir)
            if name.startswith("model.ckpt-") and name.endswith(".index")
        )
        report["evaluations"] = []
        for step, path in checkpoints:
            result = estimator.evaluate(evaluation_input, checkpoint_path=path)
            report["evaluations"].append(
                {
                    "step": step,
                    "global_loss": float(result["global_loss"]),
                    "global_absolute": float(result["global_absolute"]),
                    "summed_steps": hook.seen,
                }
            )
        report["final"] = {
            name: estimator.get_variable_value(name).tolist()
            for name in ("hidden/kernel", "hidden/bias", "output/kernel", "output/bias")
        }
    elif phase == "predict":
        inputs = lambda: v1.data.Dataset.from_tensor_slices(dist_model.FEATURES[:4]).batch(2)  # noqa: E731
        report["predictions"] = [float(p["y"][0]) for p in estimator.predict(inputs)]
    elif phase == "export":

        def serving():
            features = v1.placeholder(v1.float32, [None, 4], name="features")
            return tf.estimator.export.ServingInputReceiver({"features": features}, {"features": features})

        exported = estimator.export_saved_model(os.path.join(sys.argv[1], f"export{rank}"), serving)
        exported = exported.decode() if isinstance(exported, bytes) else exported
        report["exported"] = os.path.isfile(os.path.join(exported, "saved_model.pb"))
        report["exported_bias"] = v1.train.load_variable(
            os.path.join(exported, "variables", "variables"), "output/bias"
        ).tolist()
print(json.dumps(report), flush=True)
