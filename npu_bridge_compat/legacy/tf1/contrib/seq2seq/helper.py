"""`tf.contrib.seq2seq`'s helpers: what a `BasicDecoder` samples at each step and reads next."""

from __future__ import annotations

import abc

import tensorflow as tf

from npu_bridge_compat.legacy.tf1.contrib.seq2seq.decoder import _transpose_batch_time

__all__ = [
    "CustomHelper",
    "GreedyEmbeddingHelper",
    "Helper",
    "InferenceHelper",
    "SampleEmbeddingHelper",
    "ScheduledEmbeddingTrainingHelper",
    "ScheduledOutputTrainingHelper",
    "TrainingHelper",
]


class Helper(abc.ABC):
    """A decoding helper: `initialize` gives (finished, first inputs), `sample` the sample ids of a step's
    outputs, `next_inputs` (finished, next inputs, next state)."""

    @property
    @abc.abstractmethod
    def batch_size(self):
        """The batch size (an int32 scalar)."""

    @property
    @abc.abstractmethod
    def sample_ids_shape(self) -> tf.TensorShape:
        """The shape of one batch entry's sample ids."""

    @property
    @abc.abstractmethod
    def sample_ids_dtype(self) -> tf.DType:
        """The dtype of the sample ids."""

    @abc.abstractmethod
    def initialize(self, name=None):
        """(finished, initial inputs)."""

    @abc.abstractmethod
    def sample(self, time, outputs, state, name=None):
        """The sample ids of `outputs`."""

    @abc.abstractmethod
    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        """(finished, next inputs, next state)."""


class CustomHelper(Helper):
    """A helper of three functions: `initialize_fn()` -> (finished, inputs), `sample_fn(time, outputs, state)` ->
    sample ids, `next_inputs_fn(time, outputs, state, sample_ids)` -> (finished, next inputs, next state)."""

    def __init__(self, initialize_fn, sample_fn, next_inputs_fn, sample_ids_shape=None, sample_ids_dtype=None) -> None:
        self._initialize_fn = initialize_fn
        self._sample_fn = sample_fn
        self._next_inputs_fn = next_inputs_fn
        self._batch_size = None
        self._sample_ids_shape = tf.TensorShape(sample_ids_shape or [])
        self._sample_ids_dtype = tf.as_dtype(sample_ids_dtype or tf.int32)

    @property
    def batch_size(self):
        if self._batch_size is None:
            raise ValueError("batch_size accessed before initialize was called")
        return self._batch_size

    @property
    def sample_ids_shape(self) -> tf.TensorShape:
        return self._sample_ids_shape

    @property
    def sample_ids_dtype(self) -> tf.DType:
        return self._sample_ids_dtype

    def initialize(self, name=None):
        with tf.name_scope(name or f"{type(self).__name__}Initialize"):
            finished, next_inputs = self._initialize_fn()
            if self._batch_size is None:
                self._batch_size = tf.size(finished)
        return finished, next_inputs

    def sample(self, time, outputs, state, name=None):
        with tf.name_scope(name or f"{type(self).__name__}Sample"):
            return self._sample_fn(time=time, outputs=outputs, state=state)

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        with tf.name_scope(name or f"{type(self).__name__}NextInputs"):
            return self._next_inputs_fn(time=time, outputs=outputs, state=state, sample_ids=sample_ids)


def _unstack_into_array(inputs):
    # readable more than once: a helper may serve several decodes eagerly
    return tf.TensorArray(
        dtype=inputs.dtype, size=tf.shape(inputs)[0], element_shape=inputs.shape[1:], clear_after_read=False
    ).unstack(inputs)


class TrainingHelper(Helper):
    """Teacher forcing: step t reads the given inputs' step t; an entry finishes at its sequence length."""

    def __init__(self, inputs, sequence_length, time_major: bool = False, name=None) -> None:
        with tf.name_scope(name or "TrainingHelper"):
            inputs = tf.nest.map_structure(tf.convert_to_tensor, inputs)
            if not time_major:
                inputs = tf.nest.map_structure(_transpose_batch_time, inputs)
            self._input_arrays = tf.nest.map_structure(_unstack_into_array, inputs)
            self._sequence_length = tf.convert_to_tensor(sequence_length, name="sequence_length")
            if self._sequence_length.shape.rank != 1:
                raise ValueError(
                    f"Expected sequence_length to be a vector, but received shape: {self._sequence_length.shape}"
                )
            self._zero_inputs = tf.nest.map_structure(lambda step: tf.zeros_like(step[0]), inputs)
            self._batch_size = tf.size(self._sequence_length)

    @property
    def inputs(self):
        return self._input_arrays

    @property
    def sequence_length(self):
        return self._sequence_length

    @property
    def batch_size(self):
        return self._batch_size

    @property
    def sample_ids_shape(self) -> tf.TensorShape:
        return tf.TensorShape([])

    @property
    def sample_ids_dtype(self) -> tf.DType:
        return tf.int32

    def _inputs_at(self, time, all_finished):
        return tf.cond(
            all_finished,
            lambda: self._zero_inputs,
            lambda: tf.nest.map_structure(lambda array: array.read(time), self._input_arrays),
        )

    def initialize(self, name=None):
        with tf.name_scope(name or "TrainingHelperInitialize"):
            finished = tf.equal(0, self._sequence_length)
            return finished, self._inputs_at(0, tf.reduce_all(finished))

    def sample(self, time, outputs, state, name=None):
        with tf.name_scope(name or "TrainingHelperSample"):
            return tf.cast(tf.argmax(outputs, axis=-1), tf.int32)

    def next_inputs(self, time, outputs, state, name=None, **unused_kwargs):
        with tf.name_scope(name or "TrainingHelperNextInputs"):
            next_time = time + 1
            finished = next_time >= self._sequence_length
            return finished, self._inputs_at(next_time, tf.reduce_all(finished)), state


class ScheduledEmbeddingTrainingHelper(TrainingHelper):
    """Teacher forcing where each entry, with `sampling_probability`, reads instead the embedding of an id
    sampled from its outputs (the logits); a sample id of -1 marks an entry that read the given input."""

    def __init__(
        self,
        inputs,
        sequence_length,
        embedding,
        sampling_probability,
        time_major: bool = False,
        seed=None,
        scheduling_seed=None,
        name=None,
    ) -> None:
        with tf.name_scope(name or "ScheduledEmbeddingSamplingWrapper"):
            self._embedding_fn = _embedding_fn(embedding)
            self._sampling_probability = tf.convert_to_tensor(sampling_probability, name="sampling_probability")
            if self._sampling_probability.shape.rank not in (0, 1):
                raise ValueError(
                    "sampling_probability must be either a scalar or a vector. "
                    f"saw shape: {self._sampling_probability.shape}"
                )
            self._seed = seed
            self._scheduling_seed = scheduling_seed
            super().__init__(inputs=inputs, sequence_length=sequence_length, time_major=time_major, name=name)

    def initialize(self, name=None):
        return super().initialize(name=name or "ScheduledEmbeddingTrainingHelperInitialize")

    def sample(self, time, outputs, state, name=None):
        with tf.name_scope(name or "ScheduledEmbeddingTrainingHelperSample"):
            select = _bernoulli(self._sampling_probability, self.batch_size, self._scheduling_seed)
            sampled = tf.random.categorical(outputs, 1, dtype=tf.int32, seed=self._seed)[:, 0]
            return tf.where(select, sampled, tf.fill([self.batch_size], -1))

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        with tf.name_scope(name or "ScheduledEmbeddingTrainingHelperNextInputs"):
            finished, base_next_inputs, state = super().next_inputs(time=time, outputs=outputs, state=state)

            def maybe_sample():
                sampling = tf.cast(tf.where(sample_ids > -1), tf.int32)
                not_sampling = tf.cast(tf.where(sample_ids <= -1), tf.int32)
                sampled_inputs = self._embedding_fn(tf.gather_nd(sample_ids, sampling))
                given_inputs = tf.gather_nd(base_next_inputs, not_sampling)
                shape = tf.shape(base_next_inputs)
                return tf.scatter_nd(sampling, sampled_inputs, shape) + tf.scatter_nd(not_sampling, given_inputs, shape)

            next_inputs = tf.cond(tf.reduce_all(finished), lambda: base_next_inputs, maybe_sample)
            return finished, next_inputs, state


class ScheduledOutputTrainingHelper(TrainingHelper):
    """Teacher forcing where each entry, with `sampling_probability`, reads instead its own outputs (through
    `next_inputs_fn` when given, concatenated with `auxiliary_inputs` when given); the sample ids are the
    boolean choices."""

    def __init__(
        self,
        inputs,
        sequence_length,
        sampling_probability,
        time_major: bool = False,
        seed=None,
        next_inputs_fn=None,
        auxiliary_inputs=None,
        name=None,
    ) -> None:
        with tf.name_scope(name or "ScheduledOutputTrainingHelper"):
            self._sampling_probability = tf.convert_to_tensor(sampling_probability, name="sampling_probability")
            if self._sampling_probability.shape.rank not in (0, 1):
                raise ValueError(
                    "sampling_probability must be either a scalar or a vector. "
                    f"saw shape: {self._sampling_probability.shape}"
                )
            if auxiliary_inputs is None:
                maybe_concatenated = inputs
            else:
                inputs = tf.convert_to_tensor(inputs)
                auxiliary_inputs = tf.convert_to_tensor(auxiliary_inputs)
                maybe_concatenated = tf.concat([inputs, auxiliary_inputs], -1)
                if not time_major:
                    auxiliary_inputs = _transpose_batch_time(auxiliary_inputs)
            self._auxiliary_arrays = None if auxiliary_inputs is None else _unstack_into_array(auxiliary_inputs)
            self._seed = seed
            self._next_inputs_fn = next_inputs_fn
            super().__init__(
                inputs=maybe_concatenated, sequence_length=sequence_length, time_major=time_major, name=name
            )

    @property
    def sample_ids_shape(self) -> tf.TensorShape:
        return tf.TensorShape([])

    @property
    def sample_ids_dtype(self) -> tf.DType:
        return tf.bool

    def initialize(self, name=None):
        return super().initialize(name=name or "ScheduledOutputTrainingHelperInitialize")

    def sample(self, time, outputs, state, name=None):
        with tf.name_scope(name or "ScheduledOutputTrainingHelperSample"):
            return _bernoulli(self._sampling_probability, self.batch_size, self._seed)

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        with tf.name_scope(name or "ScheduledOutputTrainingHelperNextInputs"):
            finished, base_next_inputs, state = super().next_inputs(
                time=time, outputs=outputs, state=state, sample_ids=sample_ids
            )
            sample_ids = tf.cast(sample_ids, tf.bool)

            def maybe_sample():
                sampled_outputs = outputs if self._next_inputs_fn is None else self._next_inputs_fn(outputs)
                if self._auxiliary_arrays is not None:
                    sampled_outputs = tf.concat([sampled_outputs, self._auxiliary_arrays.read(time + 1)], -1)
                sampling = tf.cast(tf.where(sample_ids), tf.int32)
                not_sampling = tf.cast(tf.where(tf.logical_not(sample_ids)), tf.int32)
                shape = tf.shape(base_next_inputs)
                chosen = tf.gather_nd(tf.cast(sampled_outputs, base_next_inputs.dtype), sampling)
                return tf.scatter_nd(sampling, chosen, shape) + tf.scatter_nd(
                    not_sampling, tf.gather_nd(base_next_inputs, not_sampling), shape
                )

            all_finished = tf.reduce_all(finished)
            no_samples = tf.logical_not(tf.reduce_any(sample_ids))
            next_inputs = tf.cond(tf.logical_or(all_finished, no_samples), lambda: base_next_inputs, maybe_sample)
            return finished, next_inputs, state


class GreedyEmbeddingHelper(Helper):
    """Inference: each step reads the embedding of its outputs' argmax; an entry finishes at `end_token`."""

    def __init__(self, embedding, start_tokens, end_token) -> None:
        self._embedding_fn = _embedding_fn(embedding)
        self._start_tokens = tf.convert_to_tensor(start_tokens, dtype=tf.int32, name="start_tokens")
        self._end_token = tf.convert_to_tensor(end_token, dtype=tf.int32, name="end_token")
        if self._start_tokens.shape.rank != 1:
            raise ValueError("start_tokens must be a vector")
        self._batch_size = tf.size(self._start_tokens)
        if self._end_token.shape.rank != 0:
            raise ValueError("end_token must be a scalar")
        self._start_inputs = self._embedding_fn(self._start_tokens)

    @property
    def batch_size(self):
        return self._batch_size

    @property
    def sample_ids_shape(self) -> tf.TensorShape:
        return tf.TensorShape([])

    @property
    def sample_ids_dtype(self) -> tf.DType:
        return tf.int32

    def initialize(self, name=None):
        return tf.tile([False], [self._batch_size]), self._start_inputs

    def sample(self, time, outputs, state, name=None):
        if not isinstance(outputs, tf.Tensor):
            raise TypeError(f"Expected outputs to be a single Tensor, got: {type(outputs)}")
        return tf.argmax(outputs, axis=-1, output_type=tf.int32)

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        finished = tf.equal(sample_ids, self._end_token)
        next_inputs = tf.cond(
            tf.reduce_all(finished), lambda: self._start_inputs, lambda: self._embedding_fn(sample_ids)
        )
        return finished, next_inputs, state


class SampleEmbeddingHelper(GreedyEmbeddingHelper):
    """Inference that samples each step's id from its outputs (logits divided by `softmax_temperature`)."""

    def __init__(self, embedding, start_tokens, end_token, softmax_temperature=None, seed=None) -> None:
        super().__init__(embedding, start_tokens, end_token)
        self._softmax_temperature = softmax_temperature
        self._seed = seed

    def sample(self, time, outputs, state, name=None):
        if not isinstance(outputs, tf.Tensor):
            raise TypeError(f"Expected outputs to be a single Tensor, got: {type(outputs)}")
        logits = outputs if self._softmax_temperature is None else outputs / self._softmax_temperature
        return tf.random.categorical(logits, 1, dtype=tf.int32, seed=self._seed)[:, 0]


class InferenceHelper(Helper):
    """Inference on outputs themselves (no embedding): `sample_fn(outputs)` gives the samples, `end_fn(samples)`
    the finished flags, `next_inputs_fn(samples)` (or the samples) the next inputs."""

    def __init__(self, sample_fn, sample_shape, sample_dtype, start_inputs, end_fn, next_inputs_fn=None) -> None:
        self._sample_fn = sample_fn
        self._end_fn = end_fn
        self._sample_shape = tf.TensorShape(sample_shape)
        self._sample_dtype = tf.as_dtype(sample_dtype)
        self._next_inputs_fn = next_inputs_fn
        self._batch_size = tf.shape(start_inputs)[0]
        self._start_inputs = tf.convert_to_tensor(start_inputs, name="start_inputs")

    @property
    def batch_size(self):
        return self._batch_size

    @property
    def sample_ids_shape(self) -> tf.TensorShape:
        return self._sample_shape

    @property
    def sample_ids_dtype(self) -> tf.DType:
        return self._sample_dtype

    def initialize(self, name=None):
        return tf.tile([False], [self._batch_size]), self._start_inputs

    def sample(self, time, outputs, state, name=None):
        return self._sample_fn(outputs)

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        finished = self._end_fn(sample_ids)
        next_inputs = sample_ids if self._next_inputs_fn is None else self._next_inputs_fn(sample_ids)
        next_inputs = tf.cond(tf.reduce_all(finished), lambda: self._start_inputs, lambda: next_inputs)
        return finished, next_inputs, state


def _embedding_fn(embedding):
    if callable(embedding):
        return embedding
    return lambda ids: tf.nn.embedding_lookup(embedding, ids)


def _bernoulli(probability, batch_size, seed):
    """`batch_size` booleans, each True with `probability` (a scalar or one per entry)."""
    draws = tf.random.uniform([batch_size], seed=seed, dtype=probability.dtype)
    return draws < probability
