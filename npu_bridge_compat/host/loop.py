"""Several training steps in one session run: the host form of the NPU's iterations_per_loop.

The step is built inside a `tf.compat.v1.while_loop` whose body pulls its own batch from the iterator, so one
`Session.run` executes N full steps (input, forward, backward, update) and `global_step` advances by N, as the
NPU's loop sink does. Iterations run strictly one after another (`parallel_iterations=1`).

Tensors made inside the body cannot be fetched from outside. The loss is carried out as a loop variable; each
summary the step writes is stored, every iteration, in a local variable that is read after the loop. Outside the
loop both hold the last iteration's values, which is what the NPU reports too.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import tensorflow as tf


@dataclasses.dataclass(frozen=True)
class LoopResult:
    train_op: Any  # runs the whole loop
    loss: Any  # the last iteration's loss (float32)
    step_output: Any  # what `step_fn` returned while the body was built (its tensors live inside the loop)


def training_loop(step_fn: Callable[[], tuple[Any, Any, Any]], iterations,
                  keep_going: Callable[[], Any] | None = None) -> LoopResult:
    """Run the step `step_fn` builds `iterations` times per session run.

    `step_fn()` builds one step inside the loop body and returns (train_op, loss, anything). Summaries it adds
    to the SUMMARIES collection are replaced there by their last-iteration values. `keep_going()`, if given,
    builds a bool tensor checked before each iteration: false ends the loop early (a numeric check failed).
    """
    graph = tf.compat.v1.get_default_graph()
    summaries_key = tf.compat.v1.GraphKeys.SUMMARIES
    summaries_before = {s.ref() for s in graph.get_collection(summaries_key)}
    built: dict[str, Any] = {}

    def body(index, last_loss):
        train_op, loss, step_output = step_fn()
        summaries = [s for s in graph.get_collection(summaries_key) if s.ref() not in summaries_before]
        holders = [tf.compat.v1.Variable("", trainable=False, use_resource=True, name="last_summary",
                                         collections=[tf.compat.v1.GraphKeys.LOCAL_VARIABLES])
                   for _ in summaries]
        updates = [holder.assign(summary) for holder, summary in zip(holders, summaries)]
        built.update(step_output=step_output, summaries=summaries, holders=holders)
        with tf.control_dependencies([train_op, *updates]):
            return index + 1, tf.cast(tf.identity(loss), tf.float32)

    def condition(index, _):
        return index < iterations if keep_going is None else (index < iterations) & keep_going()

    index, loss = tf.compat.v1.while_loop(
        condition,
        body,
        [tf.constant(0, iterations.dtype), tf.constant(0.0)],
        parallel_iterations=1,
        back_prop=False,
        name="npu_iterations_per_loop",
    )
    loop_op = tf.group(index, loss, name="IterationOp")
    with tf.control_dependencies([loop_op]):
        carried = [holder.read_value() for holder in built["holders"]]
    collection = graph.get_collection_ref(summaries_key)
    inner = {s.ref() for s in built["summaries"]}
    collection[:] = [s for s in collection if s.ref() not in inner] + carried
    return LoopResult(train_op=loop_op, loss=loss, step_output=built["step_output"])
