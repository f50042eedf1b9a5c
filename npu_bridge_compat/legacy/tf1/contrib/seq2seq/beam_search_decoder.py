"""`tf.contrib.seq2seq`'s beam search: `BeamSearchDecoder`, its outputs and state, `tile_batch` and
`gather_tree` (TF 1.15's beam_search_ops), on TensorFlow's own ops."""

from __future__ import annotations

import collections

import tensorflow as tf

from npu_bridge_compat.legacy.tf1.contrib.seq2seq.attention_wrapper import AttentionWrapperState
from npu_bridge_compat.legacy.tf1.contrib.seq2seq.basic_decoder import assert_like_rnncell, output_layer_size
from npu_bridge_compat.legacy.tf1.contrib.seq2seq.decoder import Decoder

__all__ = [
    "BeamSearchDecoder",
    "BeamSearchDecoderOutput",
    "BeamSearchDecoderState",
    "FinalBeamSearchDecoderOutput",
    "gather_tree",
    "gather_tree_from_array",
    "get_attention_probs",
    "tile_batch",
]


class BeamSearchDecoderState(
    collections.namedtuple(
        "BeamSearchDecoderState", ("cell_state", "log_probs", "finished", "lengths", "accumulated_attention_probs")
    )
):
    pass


class BeamSearchDecoderOutput(
    collections.namedtuple("BeamSearchDecoderOutput", ("scores", "predicted_ids", "parent_ids"))
):
    pass


class FinalBeamSearchDecoderOutput(
    collections.namedtuple("FinalBeamDecoderOutput", ["predicted_ids", "beam_search_decoder_output"])
):
    """`predicted_ids` [batch, time, beam] (time-major with output_time_major), the beams' tokens traced back from
    the last step, best beam first; `beam_search_decoder_output` the per-step `BeamSearchDecoderOutput`."""


def tile_batch(t, multiplier: int, name=None):
    """Every batch entry of each tensor in `t` repeated `multiplier` times in place: [b0, b0, b1, b1, ...]."""
    with tf.name_scope(name or "tile_batch"):
        return tf.nest.map_structure(lambda tensor: tf.repeat(tensor, multiplier, axis=0), t)


def gather_tree(step_ids, parent_ids, max_sequence_lengths, end_token, name=None):
    """The full beams from per-step ids and parent beam indices ([max_time, batch, beam] each), traced back from
    each entry's last step (`max_sequence_lengths` [batch]); steps past it, and steps after a beam's first
    `end_token`, are `end_token`."""
    with tf.name_scope(name or "GatherTree"):
        step_ids = tf.convert_to_tensor(step_ids, name="step_ids")
        parent_ids = tf.convert_to_tensor(parent_ids, dtype=step_ids.dtype, name="parent_ids")
        end_token = tf.convert_to_tensor(end_token, dtype=step_ids.dtype, name="end_token")
        max_time = tf.shape(step_ids)[0]
        lengths = tf.minimum(tf.cast(max_sequence_lengths, tf.int32), max_time)
        beams = tf.shape(step_ids)[2]
        first_pointer = tf.tile(tf.expand_dims(tf.range(beams, dtype=step_ids.dtype), 0), [tf.shape(step_ids)[1], 1])

        def back_one_step(carried, step):
            pointer, _ = carried
            ids, parents, time = step
            in_range = tf.expand_dims(time < lengths, 1)
            traced = tf.gather(ids, pointer, batch_dims=1)
            next_pointer = tf.where(in_range, tf.gather(parents, pointer, batch_dims=1), pointer)
            return next_pointer, tf.where(in_range, traced, end_token)

        _, traced = tf.scan(
            back_one_step,
            (step_ids, parent_ids, tf.range(max_time)),
            initializer=(first_pointer, tf.zeros_like(first_pointer)),
            reverse=True,
        )
        after_end = tf.cumsum(tf.cast(tf.equal(traced, end_token), tf.int32), axis=0, exclusive=True) > 0
        result = tf.where(after_end, end_token, traced)
        result.set_shape(step_ids.shape)
        return result


def gather_tree_from_array(t, parent_ids, sequence_length):
    """`t` [max_time, batch * beam, ...] (a stacked TensorArray of the beams' values) reordered along the
    beams as `gather_tree` reorders the ids; steps past a beam's length keep their order."""
    max_time = tf.shape(parent_ids)[0]
    batch_size = tf.shape(parent_ids)[1]
    beam_width = tf.shape(parent_ids)[2]
    beam_ids = tf.tile(tf.reshape(tf.range(beam_width), [1, 1, -1]), [max_time, batch_size, 1])
    max_sequence_lengths = tf.cast(tf.reduce_max(sequence_length, axis=1), tf.int32)
    sorted_beam_ids = gather_tree(beam_ids, parent_ids, max_sequence_lengths, end_token=beam_width + 1)
    in_bound_steps = tf.transpose(tf.sequence_mask(sequence_length, maxlen=max_time), perm=[2, 0, 1])
    sorted_beam_ids = tf.where(in_bound_steps, sorted_beam_ids, beam_ids)
    split = tf.reshape(t, tf.concat([[max_time, batch_size, beam_width], tf.shape(t)[2:]], 0))
    ordered = tf.gather(split, sorted_beam_ids, batch_dims=2)
    ordered = tf.reshape(ordered, tf.shape(t))
    ordered.set_shape(t.shape)
    return ordered


def _check_maybe(t) -> None:
    if isinstance(t, tf.TensorArray):
        raise TypeError(f"TensorArray state is not supported by BeamSearchDecoder: {t}")
    if t.shape.rank is None:
        raise ValueError(f"Expected tensor ({t}) to have known rank, but ndims == None.")


def _length_penalty(sequence_lengths, penalty_factor):
    """((5 + length) / 6) ** penalty_factor (Wu et al., 2016); 1 when the factor is statically 0."""
    penalty_factor = tf.convert_to_tensor(penalty_factor, name="penalty_factor")
    if tf.get_static_value(penalty_factor) == 0:
        return 1.0
    return tf.math.divide(
        (5.0 + tf.cast(sequence_lengths, tf.float32)) ** penalty_factor, (5.0 + 1.0) ** penalty_factor
    )


def _get_scores(log_probs, sequence_lengths, length_penalty_weight, coverage_penalty_weight, finished, attention):
    """The beams' log probabilities divided by the length penalty, plus the weighted coverage penalty."""
    scores = log_probs / tf.cast(_length_penalty(sequence_lengths, length_penalty_weight), log_probs.dtype)
    coverage_penalty_weight = tf.convert_to_tensor(coverage_penalty_weight, name="coverage_penalty_weight")
    if coverage_penalty_weight.shape.rank != 0:
        raise ValueError(f"coverage_penalty_weight should be a scalar, but saw shape: {coverage_penalty_weight.shape}")
    if tf.get_static_value(coverage_penalty_weight) == 0.0:
        return scores
    if attention is None:
        raise ValueError("accumulated_attention_probs can be None only if coverage penalty is disabled.")
    attention = tf.where(tf.equal(attention, 0.0), tf.ones_like(attention), attention)
    coverage_penalty = tf.reduce_sum(tf.math.log(tf.minimum(attention, 1.0)), 2)
    weighted = coverage_penalty * coverage_penalty_weight
    weighted = tf.where(finished, weighted, tf.zeros_like(weighted))
    return scores + tf.expand_dims(weighted, 2)


def _mask_probs(probs, eos_token, finished):
    """A finished beam's step log probabilities: 0 for `eos_token`, the dtype's minimum for every other id."""
    vocab_size = tf.shape(probs)[2]
    finished_row = tf.one_hot(eos_token, vocab_size, dtype=probs.dtype, on_value=0.0, off_value=probs.dtype.min)
    finished_probs = tf.tile(tf.reshape(finished_row, [1, 1, -1]), tf.concat([tf.shape(finished), [1]], 0))
    finished_mask = tf.tile(tf.expand_dims(finished, 2), [1, 1, vocab_size])
    return tf.where(finished_mask, finished_probs, probs)


def _tensor_gather_helper(gather_indices, gather_from, batch_size, range_size, gather_shape, name=None):
    """Per batch entry, the rows `gather_indices` [batch, beam] of `gather_from` seen as `gather_shape`."""
    with tf.name_scope(name or "tensor_gather_helper"):
        offsets = tf.expand_dims(tf.range(batch_size) * range_size, 1)
        gather_indices = tf.reshape(gather_indices + offsets, [-1])
        output = tf.gather(tf.reshape(gather_from, gather_shape), gather_indices)
        final_shape = tf.shape(gather_from)[: 1 + len(gather_shape)]
        static_batch_size = tf.get_static_value(batch_size)
        final_static_shape = tf.TensorShape([static_batch_size]).concatenate(
            gather_from.shape[1 : 1 + len(gather_shape)]
        )
        output = tf.reshape(output, final_shape, name="output")
        output.set_shape(final_static_shape)
        return output


def get_attention_probs(next_cell_state, coverage_penalty_weight):
    """The alignments of an attention cell state (averaged over several mechanisms) for the coverage penalty;
    None where the penalty is off."""
    if tf.get_static_value(coverage_penalty_weight) == 0.0:
        return None
    probs = None
    if isinstance(next_cell_state, AttentionWrapperState):
        probs = next_cell_state.alignments
    if probs is None:
        raise ValueError("coverage_penalty_weight needs an AttentionWrapper cell (its alignments)")
    if isinstance(probs, tuple):
        probs = tf.reduce_mean(tf.stack(probs), axis=0)
    return probs


class BeamSearchDecoder(Decoder):
    """Beam search over `cell`: the initial state and memory must be tiled `beam_width` times with `tile_batch`;
    each step keeps the `beam_width` best continuations of all beams by log probability divided by the length
    penalty ((5 + length) / 6) ** length_penalty_weight (plus a coverage penalty on attention)."""

    def __init__(
        self,
        cell,
        embedding,
        start_tokens,
        end_token,
        initial_state,
        beam_width: int,
        output_layer=None,
        length_penalty_weight: float = 0.0,
        coverage_penalty_weight: float = 0.0,
        reorder_tensor_arrays: bool = True,
    ) -> None:
        assert_like_rnncell("cell", cell)
        if output_layer is not None and not callable(output_layer):
            raise TypeError(f"output_layer must be a Layer, received: {type(output_layer)}")
        self._cell = cell
        self._output_layer = output_layer
        self._reorder_tensor_arrays = reorder_tensor_arrays
        self._embedding_fn = embedding if callable(embedding) else (lambda ids: tf.nn.embedding_lookup(embedding, ids))
        self._start_tokens = tf.convert_to_tensor(start_tokens, dtype=tf.int32, name="start_tokens")
        if self._start_tokens.shape.rank != 1:
            raise ValueError("start_tokens must be a vector")
        self._end_token = tf.convert_to_tensor(end_token, dtype=tf.int32, name="end_token")
        if self._end_token.shape.rank != 0:
            raise ValueError("end_token must be a scalar")
        self._batch_size = tf.size(self._start_tokens)
        self._beam_width = beam_width
        self._length_penalty_weight = length_penalty_weight
        self._coverage_penalty_weight = coverage_penalty_weight
        self._initial_cell_state = tf.nest.map_structure(
            self._maybe_split_batch_beams, initial_state, self._cell.state_size
        )
        self._start_tokens = tf.tile(tf.expand_dims(self._start_tokens, 1), [1, self._beam_width])
        self._start_inputs = self._embedding_fn(self._start_tokens)
        self._finished = tf.one_hot(
            tf.zeros([self._batch_size], dtype=tf.int32),
            depth=self._beam_width,
            on_value=False,
            off_value=True,
            dtype=tf.bool,
        )

    @property
    def batch_size(self):
        return self._batch_size

    @property
    def tracks_own_finished(self) -> bool:
        return True

    def _rnn_output_size(self):
        return output_layer_size(self._output_layer, self._cell.output_size)

    @property
    def output_size(self) -> BeamSearchDecoderOutput:
        beams = tf.TensorShape([self._beam_width])
        return BeamSearchDecoderOutput(scores=beams, predicted_ids=beams, parent_ids=beams)

    @property
    def output_dtype(self) -> BeamSearchDecoderOutput:
        dtype = tf.nest.flatten(self._initial_cell_state)[0].dtype
        return BeamSearchDecoderOutput(
            scores=tf.nest.map_structure(lambda _: dtype, self._rnn_output_size()),
            predicted_ids=tf.int32,
            parent_ids=tf.int32,
        )

    def initialize(self, name=None):
        """(finished, start inputs, the first BeamSearchDecoderState): only beam 0 of each entry is live."""
        with tf.name_scope(name or "BeamSearchDecoderInitialize"):
            dtype = tf.nest.flatten(self._initial_cell_state)[0].dtype
            log_probs = tf.one_hot(
                tf.zeros([self._batch_size], dtype=tf.int32),
                depth=self._beam_width,
                on_value=tf.convert_to_tensor(0.0, dtype=dtype),
                off_value=tf.convert_to_tensor(-float("inf"), dtype=dtype),
                dtype=dtype,
            )
            attention_probs = get_attention_probs(self._initial_cell_state, self._coverage_penalty_weight)
            initial_state = BeamSearchDecoderState(
                cell_state=self._initial_cell_state,
                log_probs=log_probs,
                finished=self._finished,
                lengths=tf.zeros([self._batch_size, self._beam_width], dtype=tf.int64),
                accumulated_attention_probs=() if attention_probs is None else attention_probs,
            )
        return self._finished, self._start_inputs, initial_state

    def finalize(self, outputs, final_state, sequence_lengths):
        """The beams traced back through their parents (`gather_tree`), and TensorArrays of the cell state (an
        attention history) reordered the same way."""
        max_sequence_lengths = tf.cast(tf.reduce_max(final_state.lengths, axis=1), tf.int32)
        predicted_ids = gather_tree(
            outputs.predicted_ids,
            outputs.parent_ids,
            max_sequence_lengths=max_sequence_lengths,
            end_token=self._end_token,
        )
        if self._reorder_tensor_arrays:
            final_state = final_state._replace(
                cell_state=tf.nest.map_structure(
                    lambda t: self._maybe_sort_array_beams(t, outputs.parent_ids, final_state.lengths),
                    final_state.cell_state,
                )
            )
        return FinalBeamSearchDecoderOutput(
            beam_search_decoder_output=outputs, predicted_ids=predicted_ids
        ), final_state

    def _merge_batch_beams(self, t, s):
        """[batch, beam, ...] -> [batch * beam, ...]."""
        s = tf.TensorShape(s) if not isinstance(s, tf.Tensor) else tf.TensorShape(tf.get_static_value(s))
        t_shape = tf.shape(t)
        static_batch_size = tf.get_static_value(self._batch_size)
        batch_size_beam_width = None if static_batch_size is None else static_batch_size * self._beam_width
        reshaped = tf.reshape(t, tf.concat([[self._batch_size * self._beam_width], t_shape[2:]], 0))
        reshaped.set_shape(tf.TensorShape([batch_size_beam_width]).concatenate(s))
        return reshaped

    def _split_batch_beams(self, t, s):
        """[batch * beam, ...] -> [batch, beam, ...]."""
        s = tf.TensorShape(s) if not isinstance(s, tf.Tensor) else tf.TensorShape(tf.get_static_value(s))
        t_shape = tf.shape(t)
        reshaped = tf.reshape(t, tf.concat([[self._batch_size, self._beam_width], t_shape[1:]], 0))
        expected = tf.TensorShape([tf.get_static_value(self._batch_size), self._beam_width]).concatenate(s)
        if not reshaped.shape.is_compatible_with(expected):
            raise ValueError(
                "Unexpected behavior when reshaping between beam width and batch size.  The reshaped tensor has "
                f"shape: {reshaped.shape}.  We expected it to have shape (batch_size, beam_width, depth) == "
                f"{expected}.  Perhaps you forgot to create a zero_state with "
                "batch_size=encoder_batch_size * beam_width?"
            )
        reshaped.set_shape(expected)
        return reshaped

    def _maybe_split_batch_beams(self, t, s):
        if isinstance(t, tf.TensorArray):
            return t
        _check_maybe(t)
        return self._split_batch_beams(t, s) if t.shape.rank >= 1 else t

    def _maybe_merge_batch_beams(self, t, s):
        if isinstance(t, tf.TensorArray):
            return t
        _check_maybe(t)
        return self._merge_batch_beams(t, s) if t.shape.rank >= 2 else t

    def _maybe_sort_array_beams(self, t, parent_ids, sequence_length):
        """A TensorArray of [batch * beam, ...] values, reordered along the final beams; other states pass."""
        if not isinstance(t, tf.TensorArray):
            return t
        element_shape = t.element_shape
        if element_shape.rank is None or element_shape.rank < 1:
            return t
        stacked = t.stack()
        sorted_array = tf.TensorArray(dtype=t.dtype, size=tf.shape(stacked)[0], element_shape=element_shape).unstack(
            gather_tree_from_array(stacked, parent_ids, sequence_length)
        )
        if hasattr(sorted_array, "mark_used"):  # graph mode: a final state the program never reads is fine
            sorted_array.mark_used()
        return sorted_array

    def step(self, time, inputs, state, name=None):
        """One beam search step: the cell on all beams at once, then the `beam_width` best continuations."""
        with tf.name_scope(name or "BeamSearchDecoderStep"):
            inputs = tf.nest.map_structure(lambda inp: self._merge_batch_beams(inp, s=inp.shape[2:]), inputs)
            cell_state = tf.nest.map_structure(self._maybe_merge_batch_beams, state.cell_state, self._cell.state_size)
            cell_outputs, next_cell_state = self._cell(inputs, cell_state)
            cell_outputs = tf.nest.map_structure(lambda out: self._split_batch_beams(out, out.shape[1:]), cell_outputs)
            next_cell_state = tf.nest.map_structure(
                self._maybe_split_batch_beams, next_cell_state, self._cell.state_size
            )
            if self._output_layer is not None:
                cell_outputs = self._output_layer(cell_outputs)
            beam_search_output, beam_search_state = _beam_search_step(
                time=time,
                logits=cell_outputs,
                next_cell_state=next_cell_state,
                beam_state=state,
                batch_size=self._batch_size,
                beam_width=self._beam_width,
                end_token=self._end_token,
                length_penalty_weight=self._length_penalty_weight,
                coverage_penalty_weight=self._coverage_penalty_weight,
            )
            finished = beam_search_state.finished
            sample_ids = beam_search_output.predicted_ids
            next_inputs = tf.cond(
                tf.reduce_all(finished), lambda: self._start_inputs, lambda: self._embedding_fn(sample_ids)
            )
        return beam_search_output, beam_search_state, next_inputs, finished


def _beam_search_step(
    time,
    logits,
    next_cell_state,
    beam_state,
    batch_size,
    beam_width,
    end_token,
    length_penalty_weight,
    coverage_penalty_weight,
):
    """The next beams: every live beam's continuations scored, the best `beam_width` per entry kept; finished
    beams continue only with `end_token` at no cost."""
    static_batch_size = tf.get_static_value(batch_size)
    prediction_lengths = beam_state.lengths
    previously_finished = beam_state.finished
    not_finished = tf.logical_not(previously_finished)

    step_log_probs = _mask_probs(tf.nn.log_softmax(logits), end_token, previously_finished)
    total_probs = tf.expand_dims(beam_state.log_probs, 2) + step_log_probs

    vocab_size = tf.compat.dimension_value(logits.shape[-1]) or tf.shape(logits)[-1]
    lengths_to_add = tf.one_hot(
        tf.fill([batch_size, beam_width], end_token),
        vocab_size,
        on_value=tf.constant(0, tf.int64),
        off_value=tf.constant(1, tf.int64),
        dtype=tf.int64,
    )
    lengths_to_add *= tf.expand_dims(tf.cast(not_finished, tf.int64), 2)
    new_prediction_lengths = lengths_to_add + tf.expand_dims(prediction_lengths, 2)

    accumulated_attention_probs = None
    attention_probs = get_attention_probs(next_cell_state, coverage_penalty_weight)
    if attention_probs is not None:
        attention_probs *= tf.expand_dims(tf.cast(not_finished, attention_probs.dtype), 2)
        accumulated_attention_probs = beam_state.accumulated_attention_probs + attention_probs

    scores = _get_scores(
        log_probs=total_probs,
        sequence_lengths=new_prediction_lengths,
        length_penalty_weight=length_penalty_weight,
        coverage_penalty_weight=coverage_penalty_weight,
        finished=previously_finished,
        attention=accumulated_attention_probs,
    )
    scores_flat = tf.reshape(scores, [batch_size, -1])
    next_beam_scores, word_indices = tf.math.top_k(scores_flat, k=beam_width)
    next_beam_scores.set_shape([static_batch_size, beam_width])
    word_indices.set_shape([static_batch_size, beam_width])

    next_beam_probs = _tensor_gather_helper(
        word_indices, total_probs, batch_size, beam_width * vocab_size, [-1], name="next_beam_probs"
    )
    next_word_ids = tf.cast(word_indices % vocab_size, tf.int32)
    next_beam_ids = tf.cast(word_indices // vocab_size, tf.int32)

    previously_finished = _tensor_gather_helper(next_beam_ids, previously_finished, batch_size, beam_width, [-1])
    next_finished = tf.logical_or(previously_finished, tf.equal(next_word_ids, end_token))
    next_prediction_len = _tensor_gather_helper(next_beam_ids, beam_state.lengths, batch_size, beam_width, [-1])
    next_prediction_len += tf.cast(tf.logical_not(previously_finished), tf.int64)

    next_accumulated_attention_probs = ()
    if accumulated_attention_probs is not None:
        next_accumulated_attention_probs = _tensor_gather_helper(
            next_beam_ids,
            accumulated_attention_probs,
            batch_size,
            beam_width,
            [batch_size * beam_width, -1],
            name="next_accumulated_attention_probs",
        )

    def gather_state(gather_from):
        if isinstance(gather_from, tf.TensorArray):
            return gather_from
        _check_maybe(gather_from)
        if gather_from.shape.rank < 2:
            return gather_from
        return _tensor_gather_helper(next_beam_ids, gather_from, batch_size, beam_width, [batch_size * beam_width, -1])

    next_state = BeamSearchDecoderState(
        cell_state=tf.nest.map_structure(gather_state, next_cell_state),
        log_probs=next_beam_probs,
        lengths=next_prediction_len,
        finished=next_finished,
        accumulated_attention_probs=next_accumulated_attention_probs,
    )
    output = BeamSearchDecoderOutput(scores=next_beam_scores, predicted_ids=next_word_ids, parent_ids=next_beam_ids)
    return output, next_state
