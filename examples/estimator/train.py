"""A ported-style Estimator training script: NPURunConfig + NPUEstimator, synthetic data, trains in seconds.

    python examples/estimator/train.py --iterations_per_loop=10 --precision_mode=allow_mix_precision
    python examples/estimator/train.py --mix_compile_mode --iterations_per_loop=1    # BN workaround path

Written as Ascend ports are (NPURunConfig replacing RunConfig, NPUEstimator replacing Estimator); on a host the
NPU options go through npu_bridge_compat's translator. The run prints the translation report once, its progress
every 100 steps, then its loss and steps per second. Library deprecation notices are hidden, as under
`python -m npu_bridge_compat run`; PYTHONWARNINGS=default brings them back. On TensorFlow 2.16 and later (Python
3.12, 3.13) tf.estimator is tensorflow-estimator 2.15, served by npu_bridge_compat.
"""

import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from npu_bridge_compat.compat import select_keras_2  # noqa: E402

select_keras_2()  # tf.compat.v1.layers are Keras 2's: tf_keras from TensorFlow 2.16 (before TensorFlow is imported)

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from absl import app, flags  # noqa: E402

from npu_bridge_compat.estimator import DumpConfig, NPUEstimator, NPURunConfig, ProfilingConfig  # noqa: E402
from npu_bridge_compat.logs import quiet_library_deprecations  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_integer("iterations_per_loop", 10, "Training steps per session run.")
flags.DEFINE_integer("max_steps", 300, "Total training steps.")
flags.DEFINE_integer("batch_size", 32, "Batch size.")
flags.DEFINE_string("precision_mode", None, "NPU precision mode, e.g. allow_mix_precision.")
flags.DEFINE_bool("mix_compile_mode", False, "Mixed compute (needs iterations_per_loop=1).")
flags.DEFINE_string("model_dir", None, "Checkpoint directory (a temporary one by default).")
flags.DEFINE_string("dump_path", None, "Enable data dump into this existing directory.")
flags.DEFINE_string("profiling_dir", None, "Enable profiling with this output directory.")


def input_fn(params):
    rng = np.random.RandomState(0)
    images = rng.randn(1024, 8, 8, 3).astype(np.float32)
    labels = (images[:, :4, :, 0].mean(axis=(1, 2)) > images[:, 4:, :, 0].mean(axis=(1, 2))).astype(np.int32)
    dataset = tf.data.Dataset.from_tensor_slices((images, labels)).shuffle(1024, seed=0).repeat()
    return dataset.batch(params["batch_size"], drop_remainder=True)  # static shapes, as Ascend needs


def model_fn(features, labels, mode, params):
    training = mode == tf.estimator.ModeKeys.TRAIN
    net = tf.compat.v1.layers.conv2d(features, 8, 3, padding="same", activation=tf.nn.relu)
    net = tf.compat.v1.layers.batch_normalization(net, training=training, fused=True)
    net = tf.compat.v1.layers.flatten(net)
    logits = tf.compat.v1.layers.dense(net, 2)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    global_step = tf.compat.v1.train.get_global_step()
    update_ops = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)
    with tf.control_dependencies(update_ops):
        train_op = tf.compat.v1.train.AdamOptimizer(0.01).minimize(loss, global_step=global_step)
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


class Progress(tf.compat.v1.train.SessionRunHook):
    """Prints the step and the training speed every `every` steps (at session-run boundaries, where N-step runs
    end), and keeps the overall speed."""

    def __init__(self, every):
        self.every = every

    def begin(self):
        self._global_step = tf.compat.v1.train.get_global_step()

    def after_create_session(self, session, coord):
        self.start_step, self.start_time = session.run(self._global_step), time.perf_counter()
        self._shown = (self.start_step, self.start_time)

    def after_run(self, run_context, run_values):
        step = run_context.session.run(self._global_step)
        if step // self.every > self._shown[0] // self.every:
            now = time.perf_counter()
            print(f"step {step}: {(step - self._shown[0]) / (now - self._shown[1]):.0f} steps/s", flush=True)
            self._shown = (step, now)

    def end(self, session):
        self.steps = session.run(self._global_step) - self.start_step
        self.seconds = time.perf_counter() - self.start_time


def main(_):
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.WARN)
    quiet_library_deprecations()
    dump = DumpConfig(enable_dump=True, dump_path=FLAGS.dump_path, dump_step="0|5") if FLAGS.dump_path else None
    profiling = (
        ProfilingConfig(enable_profiling=True, profiling_options=f'{{"output": "{FLAGS.profiling_dir}"}}')
        if FLAGS.profiling_dir
        else None
    )
    config = NPURunConfig(
        model_dir=FLAGS.model_dir or tempfile.mkdtemp(prefix="npu_estimator_"),
        iterations_per_loop=FLAGS.iterations_per_loop,
        precision_mode=FLAGS.precision_mode,
        mix_compile_mode=FLAGS.mix_compile_mode,
        save_checkpoints_steps=100,
        log_step_count_steps=100,
        dump_config=dump,
        profiling_config=profiling,
    )
    estimator = NPUEstimator(model_fn, config=config, params={"batch_size": FLAGS.batch_size})
    progress = Progress(every=100)
    estimator.train(input_fn, max_steps=FLAGS.max_steps, hooks=[progress])
    metrics = estimator.evaluate(input_fn, steps=10)
    print(
        f"trained to step {metrics['global_step']}, eval loss {metrics['loss']:.4f}, "
        f"{progress.steps / progress.seconds:.0f} steps/s"
    )


if __name__ == "__main__":
    app.run(main)
