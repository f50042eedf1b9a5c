"""`tf.contrib.seq2seq`'s `Decoder` interface and `dynamic_decode`, on tf.while_loop and TensorArrays: graph mode
and eagerly alike."""

from __future__ import annotations

import abc

import tensorflow as tf

__all__ = ["Decoder", "dynamic_decode"]


class Decoder(abc.ABC):
    """What `dynamic_decode` drives: a batch size, the structure (`output_size`, `output_dtype`) of one step's
    outputs without the batch dimension, `initialize` giving (finished, first inputs, first state), `step` giving
    (outputs, next state, next inputs, finished), and optionally `finalize` over the stacked outputs."""

    @property
    def batch_size(self):
        raise NotImplementedError

    @property
    def output_size(self):
        raise NotImplementedError

    @property
    def output_dtype(self):
        raise NotImplementedError

    @abc.abstractmethod
    def initialize(self, name=None):
        """(finished, initial inputs, initial state)."""

    @abc.abstractmethod
    def step(self, time, inputs, state, name=None):
        """(outputs, next state, next inputs, finished) of one decoding step."""

    def finalize(self, outputs, final_state, sequence_lengths):
        raise NotImplementedError

    @property
    def tracks_own_finished(self) -> bool:
        """Whether `step`'s finished flags already include the earlier steps' (beam search reorders its beams, so
        an entry finished earlier may be unfinished now)."""
        return False


def _transpose_batch_time(tensor):
    """[time, batch, ...] <-> [batch, time, ...]; tensors of rank under 2 pass unchanged."""
    tensor = tf.convert_to_tensor(tensor)
    rank = tensor.shape.rank
    if rank is not None and rank < 2:
        return tensor
    if rank is None:
        rank = tf.rank(tensor)
        perm = tf.concat([[1, 0], tf.range(2, rank)], 0)
    else:
        perm = [1, 0, *range(2, rank)]
    return tf.transpose(tensor, perm)


def _with_batch(batch_size, shape) -> tf.TensorShape:
    static_batch = tf.get_static_value(batch_size)
    return tf.TensorShape([None if static_batch is None else int(static_batch)]).concatenate(tf.TensorShape(shape))


def _zeros(batch_size, shape, dtype):
    shape = tf.TensorShape(shape)
    return tf.zeros(tf.concat([tf.reshape(batch_size, [1]), tf.constant(shape.as_list(), tf.int32)], 0), dtype)


def dynamic_decode(
    decoder: Decoder,
    output_time_major: bool = False,
    impute_finished: bool = False,
    maximum_iterations=None,
    parallel_iterations: int = 32,
    swap_memory: bool = False,
    scope=None,
):
    """Run `decoder` step by step until every batch entry is finished (or `maximum_iterations` steps).

    Returns (final_outputs, final_state, final_sequence_lengths): outputs [batch, time, ...] ([time, batch, ...]
    when `output_time_major`), after `decoder.finalize` where it has one. With `impute_finished`, finished
    entries emit zeros and keep their last state. Variables are made under the variable scope `scope` or
    "decoder".
    """
    if not isinstance(decoder, Decoder):
        raise TypeError(f"Expected decoder to be type Decoder, but saw: {type(decoder)}")
    v1 = tf.compat.v1
    with v1.variable_scope(scope or "decoder") as variable_scope:
        in_graph = not tf.executing_eagerly()
        if in_graph and variable_scope.caching_device is None:
            # the loop reads each variable once, not once per step
            variable_scope.set_caching_device(lambda op: op.device)
        if maximum_iterations is not None:
            maximum_iterations = tf.convert_to_tensor(maximum_iterations, dtype=tf.int32, name="maximum_iterations")
            if maximum_iterations.shape.rank != 0:
                raise ValueError("maximum_iterations must be a scalar")

        initial_finished, initial_inputs, initial_state = decoder.initialize()
        if maximum_iterations is not None:
            initial_finished = tf.logical_or(initial_finished, 0 >= maximum_iterations)
        zero_outputs = tf.nest.map_structure(
            lambda shape, dtype: _zeros(decoder.batch_size, shape, dtype), decoder.output_size, decoder.output_dtype
        )
        initial_sequence_lengths = tf.zeros_like(initial_finished, dtype=tf.int32)
        initial_time = tf.constant(0, dtype=tf.int32)

        def make_array(shape, dtype):
            return tf.TensorArray(
                dtype=dtype, size=0, dynamic_size=True, element_shape=_with_batch(decoder.batch_size, shape)
            )

        initial_arrays = tf.nest.map_structure(make_array, decoder.output_size, decoder.output_dtype)

        def condition(time, arrays, state, inputs, finished, sequence_lengths):
            return tf.logical_not(tf.reduce_all(finished))

        def body(time, arrays, state, inputs, finished, sequence_lengths):
            next_outputs, decoder_state, next_inputs, decoder_finished = decoder.step(time, inputs, state)
            if decoder.tracks_own_finished:
                next_finished = decoder_finished
            else:
                next_finished = tf.logical_or(decoder_finished, finished)
            next_sequence_lengths = tf.where(
                tf.logical_not(finished), tf.fill(tf.shape(sequence_lengths), time + 1), sequence_lengths
            )
            tf.nest.assert_same_structure(state, decoder_state)
            tf.nest.assert_same_structure(arrays, next_outputs)
            tf.nest.assert_same_structure(inputs, next_inputs)
            if maximum_iterations is not None:
                next_finished = tf.logical_or(next_finished, time + 1 >= maximum_iterations)
            if impute_finished:
                emit = tf.nest.map_structure(
                    lambda out, zero: _where_rows(finished, zero, out), next_outputs, zero_outputs
                )
                next_state = tf.nest.map_structure(_keep_finished(finished), decoder_state, state)
            else:
                emit, next_state = next_outputs, decoder_state
            arrays = tf.nest.map_structure(lambda array, out: array.write(time, out), arrays, emit)
            return time + 1, arrays, next_state, next_inputs, next_finished, next_sequence_lengths

        loop_vars = (initial_time, initial_arrays, initial_state, initial_inputs, initial_finished)
        _, final_arrays, final_state, _, _, final_sequence_lengths = tf.while_loop(
            condition,
            body,
            loop_vars=(*loop_vars, initial_sequence_lengths),
            parallel_iterations=parallel_iterations,
            maximum_iterations=maximum_iterations,
            swap_memory=swap_memory,
        )
        final_outputs = tf.nest.map_structure(lambda array: array.stack(), final_arrays)
        try:
            final_outputs, final_state = decoder.finalize(final_outputs, final_state, final_sequence_lengths)
        except NotImplementedError:
            pass
        if not output_time_major:
            final_outputs = tf.nest.map_structure(_transpose_batch_time, final_outputs)
    return final_outputs, final_state, final_sequence_lengths


def _where_rows(finished, chosen, other):
    """`chosen`'s rows where `finished` [batch] is True, `other`'s elsewhere (TF 1.15's where on rows)."""
    rank = other.shape.rank
    if rank is None:
        rank = tf.rank(other)
    mask = tf.reshape(finished, tf.concat([tf.shape(finished), tf.ones([rank - 1], tf.int32)], 0))
    return tf.where(mask, chosen, other)


def _keep_finished(finished):
    """For a state's tensors: the old value where the entry had finished, else the new one (TensorArrays and
    scalars pass as the new value)."""

    def keep(new, old):
        if isinstance(new, tf.TensorArray) or new.shape.rank == 0:
            return new
        return _where_rows(finished, old, new)

    return keep
