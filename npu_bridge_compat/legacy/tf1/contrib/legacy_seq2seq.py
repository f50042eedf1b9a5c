"""`tf.contrib.legacy_seq2seq`'s per-step losses and plain RNN decoder (lists of per-timestep tensors)."""

from __future__ import annotations

import tensorflow as tf

__all__ = ["rnn_decoder", "sequence_loss", "sequence_loss_by_example"]

v1 = tf.compat.v1


def sequence_loss_by_example(
    logits, targets, weights, average_across_timesteps: bool = True, softmax_loss_function=None, name=None
):
    """Per-example loss: the weighted cross-entropies of the timesteps summed (and divided by the weights)."""
    if not len(logits) == len(targets) == len(weights):
        raise ValueError(
            f"Lengths of logits, weights, and targets must be the same {len(logits)}, {len(weights)}, {len(targets)}."
        )
    with tf.name_scope(name or "sequence_loss_by_example"):
        steps = []
        for logit, target, weight in zip(logits, targets, weights):
            if softmax_loss_function is None:
                loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.reshape(target, [-1]), logits=logit)
            else:
                loss = softmax_loss_function(labels=target, logits=logit)
            steps.append(loss * weight)
        total = tf.add_n(steps)
        return total / (tf.add_n(weights) + 1e-12) if average_across_timesteps else total


def sequence_loss(
    logits,
    targets,
    weights,
    average_across_timesteps: bool = True,
    average_across_batch: bool = True,
    softmax_loss_function=None,
    name=None,
):
    """The batch's summed `sequence_loss_by_example`, divided by the batch size when `average_across_batch`."""
    with tf.name_scope(name or "sequence_loss"):
        cost = tf.reduce_sum(
            sequence_loss_by_example(logits, targets, weights, average_across_timesteps, softmax_loss_function)
        )
        if not average_across_batch:
            return cost
        return cost / tf.cast(tf.shape(targets[0])[0], cost.dtype)


def rnn_decoder(decoder_inputs, initial_state, cell, loop_function=None, scope=None):
    """Run `cell` over the decoder inputs (or, with `loop_function`, over what it makes of the last output)."""
    with v1.variable_scope(scope or "rnn_decoder"):
        state, outputs, previous = initial_state, [], None
        for step, decoder_input in enumerate(decoder_inputs):
            if loop_function is not None and previous is not None:
                with v1.variable_scope("loop_function", reuse=True):
                    decoder_input = loop_function(previous, step)
            if step > 0:
                v1.get_variable_scope().reuse_variables()
            output, state = cell(decoder_input, state)
            outputs.append(output)
            if loop_function is not None:
                previous = output
        return outputs, state
