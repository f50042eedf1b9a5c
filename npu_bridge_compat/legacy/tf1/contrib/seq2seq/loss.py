"""`tf.contrib.seq2seq.sequence_loss`: the weighted cross-entropy of a sequence of logits."""

from __future__ import annotations

import tensorflow as tf


def sequence_loss(
    logits,
    targets,
    weights,
    average_across_timesteps: bool = True,
    average_across_batch: bool = True,
    sum_over_timesteps: bool = False,
    sum_over_batch: bool = False,
    softmax_loss_function=None,
    name=None,
):
    """Weighted cross-entropy of [batch, time, classes] logits against [batch, time] targets.

    Averaging divides the summed losses by the summed weights, summing by the number of non-zero weights (over
    both axes when both are chosen, else over the one chosen); with neither, the result is the [batch, time] losses.
    """
    if average_across_timesteps and sum_over_timesteps:
        raise ValueError("average_across_timesteps and sum_over_timesteps cannot be set to True at same time.")
    if average_across_batch and sum_over_batch:
        raise ValueError("average_across_batch and sum_over_batch cannot be set to True at same time.")
    logits = tf.convert_to_tensor(logits)
    if logits.shape.rank != 3:
        raise ValueError("Logits must be a [batch_size x sequence_length x logits] tensor")
    with tf.name_scope(name or "sequence_loss"):
        classes = tf.shape(logits)[2]
        flat_logits = tf.reshape(logits, [-1, classes])
        flat_targets = tf.reshape(targets, [-1])
        if softmax_loss_function is None:
            losses = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=flat_targets, logits=flat_logits)
        else:
            losses = softmax_loss_function(labels=flat_targets, logits=flat_logits)
        weights = tf.cast(weights, losses.dtype)
        losses = tf.reshape(losses * tf.reshape(weights, [-1]), tf.shape(logits)[:2])
        if average_across_timesteps and average_across_batch or sum_over_timesteps and sum_over_batch:
            axes = None  # over everything
        elif average_across_timesteps or average_across_batch:
            axes = [0] if average_across_batch else [1]
        elif sum_over_timesteps or sum_over_batch:
            axes = [0] if sum_over_batch else [1]
        else:
            return losses
        total = tf.reduce_sum(losses, axis=axes)
        if average_across_timesteps or average_across_batch:
            return tf.math.divide_no_nan(total, tf.reduce_sum(weights, axis=axes))
        return tf.math.divide_no_nan(total, tf.cast(tf.math.count_nonzero(weights, axis=axes), losses.dtype))
