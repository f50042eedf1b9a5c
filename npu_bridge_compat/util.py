"""The adapter's `util` module for session scripts: several training steps per `sess.run`.

    train_op = util.set_iteration_per_loop(sess, train_op, 10)
    sess.run(train_op)               # 10 steps: the iterator advances 10 batches, global_step grows by 10
    _, loss = sess.run([train_op, loss])   # through an NPUSession: loss is the last iteration's value

Or, to change N later (e.g. N for training, 1 for evaluation):

    loop = util.IterationPerLoop()
    train_op = loop.create_iteration_per_loop_var(train_op)
    ...
    loop.load_iteration_per_loop_var(sess, 10)

Fed placeholders keep their fed value for all N iterations of a run; the data itself should come from a
`tf.data` iterator (as the NPU's loop sink requires), otherwise every iteration trains on the same fed batch.
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf

from npu_bridge_compat.compat.sessions import session_config_of
from npu_bridge_compat.errors import NpuCompatWarning, NpuOptionTypeError, NpuOptionValueError, warn
from npu_bridge_compat.options import options_from_config_proto
from npu_bridge_compat.options.rules import mixed_compute_runs_one_step
from npu_bridge_compat.runtime.loop import loop_train_op


def _check_train_op(train_op) -> None:
    if not isinstance(train_op, tf.Operation):
        raise NpuOptionValueError(
            f"The incoming 'train_op' type is '{type(train_op).__name__}', and the need type is 'Operation'"
        )


def _check_iterations(iterations_per_loop) -> None:
    if isinstance(iterations_per_loop, bool) or not isinstance(iterations_per_loop, int):
        raise NpuOptionTypeError(f"iterations_per_loop must be int, got {type(iterations_per_loop).__name__}")
    if iterations_per_loop <= 0:
        raise NpuOptionValueError(f"iterations_per_loop must be positive, got {iterations_per_loop}")


def _check_against_session_config(sess, iterations_per_loop: int) -> None:
    """The session's NPU options must allow the loop (mixed compute) and should name the same N (Ascend docs)."""
    config = getattr(sess, "npu_options", None)
    if config is None and session_config_of(sess) is not None:
        config = options_from_config_proto(session_config_of(sess), source="the session's ConfigProto")
    if config is None:
        return
    mixed_compute_runs_one_step(dataclasses.replace(config, iterations_per_loop=iterations_per_loop))
    if config.iterations_per_loop != iterations_per_loop:
        warn(
            f"set_iteration_per_loop(..., {iterations_per_loop}) differs from the session config's "
            f'parameter_map["iterations_per_loop"]={config.iterations_per_loop}; Ascend requires them equal. '
            f"{iterations_per_loop} steps per run are used.",
            NpuCompatWarning,
        )


class IterationPerLoop:
    """Build the loop once, load N later (the adapter's two-phase form)."""

    def create_iteration_per_loop_var(self, train_op):
        """The looped train op; N is 1 until `load_iteration_per_loop_var` loads another value."""
        _check_train_op(train_op)
        graph = train_op.graph
        with graph.as_default(), tf.name_scope("npu_runconfig"):
            iterations = tf.compat.v1.Variable(
                1,
                dtype=tf.int64,
                trainable=False,
                use_resource=True,
                name="iterations_per_loop",
                collections=[tf.compat.v1.GraphKeys.LOCAL_VARIABLES],
            )
        self._looped = loop_train_op(train_op, iterations, most_steps=1)
        return self._looped.loop_op

    def load_iteration_per_loop_var(self, sess, iterations_per_loop: int) -> None:
        _check_iterations(iterations_per_loop)
        _check_against_session_config(sess, iterations_per_loop)
        if iterations_per_loop > 1 and self._looped.feeds_its_data:
            warn(
                "the looped train op reads no tf.data iterator: every iteration of a run trains on the same fed "
                "batch. Feed data through a dataset iterator for N distinct steps per run.",
                NpuCompatWarning,
            )
        self._looped.iterations.load(iterations_per_loop, sess)
        self._looped.most_steps = iterations_per_loop


def set_iteration_per_loop(sess, train_op, iterations_per_loop: int):
    """Return an op that runs `train_op` `iterations_per_loop` times per `sess.run` (unchanged for 1)."""
    _check_train_op(train_op)
    _check_iterations(iterations_per_loop)
    if iterations_per_loop == 1:
        _check_against_session_config(sess, iterations_per_loop)
        return train_op
    loop = IterationPerLoop()
    loop_op = loop.create_iteration_per_loop_var(train_op)
    loop.load_iteration_per_loop_var(sess, iterations_per_loop)
    return loop_op
