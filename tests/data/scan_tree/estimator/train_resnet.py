"""A ported Estimator script, as the porting tool leaves it: star import of npu_init, NPURunConfig with holders."""
import os

import tensorflow as tf
from npu_bridge.npu_init import *
from npu_bridge.estimator import npu_ops
from hccl.manage.api import get_rank_size

import resnet_model

flags = tf.compat.v1.app.flags
flags.DEFINE_integer("iterations_per_loop", 100, "steps per session run")
FLAGS = flags.FLAGS


def model_fn(features, labels, mode, params):
    logits = resnet_model.build(npu_ops.dropout(features, keep_prob=0.9), training=True)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    optimizer = NPUDistributedOptimizer(tf.compat.v1.train.MomentumOptimizer(0.1, 0.9))
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return NPUEstimatorSpec(mode, loss=loss, train_op=train_op)


def main(_):
    profiling = ProfilingConfig(enable_profiling=True,
                                profiling_options='{"output": "profiling", "training_trace": "on"}')
    run_config = NPURunConfig(
        model_dir=os.path.join("/tmp", "resnet"),
        iterations_per_loop=FLAGS.iterations_per_loop,
        precision_mode="allow_mix_precision",
        save_checkpoints_steps=1000,
        profiling_config=profiling,
        dump_config=DumpConfig(enable_dump_debug=True, dump_path="/tmp", dump_debug_mode="all"),
    )
    estimator = NPUEstimator(model_fn=model_fn, config=run_config, params={"ranks": get_rank_size()})
    estimator.train(input_fn=lambda params: None, max_steps=1000)


if __name__ == "__main__":
    tf.compat.v1.app.run()
