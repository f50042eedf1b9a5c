"""`tf.contrib.seq2seq`'s attention: the mechanisms (Bahdanau, Luong and their monotonic forms) and
`AttentionWrapper`, an RNN cell of `tf.compat.v1.nn.rnn_cell` that attends over a memory after each step.

Variables are named as TF 1.15 named them, so its checkpoints restore: the mechanism's `memory_layer/kernel` in
the scope it is made in; inside the wrapper's scope (`attention_wrapper` unless named) the wrapped cell's
variables, `attention_layer/kernel`, and in `bahdanau_attention` / `luong_attention` the `query_layer/kernel`,
`attention_v`, `attention_g`, `attention_b` (and `attention_score_bias` for the monotonic forms).
"""

from __future__ import annotations

import collections
import functools
import math

import numpy as np
import tensorflow as tf

from npu_bridge_compat import compat
from npu_bridge_compat.legacy.tf1.contrib.framework import with_same_shape
from npu_bridge_compat.legacy.tf1.contrib.seq2seq.basic_decoder import assert_like_rnncell

__all__ = [
    "AttentionMechanism",
    "AttentionWrapper",
    "AttentionWrapperState",
    "BahdanauAttention",
    "BahdanauMonotonicAttention",
    "LuongAttention",
    "LuongMonotonicAttention",
    "hardmax",
    "monotonic_attention",
    "safe_cumprod",
]

v1 = tf.compat.v1
_RNNCell = compat.tf1_keras_api("nn.rnn_cell").RNNCell
_Dense = compat.tf1_keras_api("layers").Dense


class AttentionMechanism:
    """The base class attention mechanisms are recognized by."""

    @property
    def alignments_size(self):
        raise NotImplementedError

    @property
    def state_size(self):
        raise NotImplementedError


def _static_or_dynamic_dim(tensor, axis: int):
    return tf.compat.dimension_value(tensor.shape[axis]) or tf.shape(tensor)[axis]


def _prepare_memory(memory, memory_sequence_length, check_inner_dims_defined: bool):
    """The memory with the steps past each entry's `memory_sequence_length` zeroed."""
    memory = tf.nest.map_structure(lambda m: tf.convert_to_tensor(m, name="memory"), memory)
    if memory_sequence_length is not None:
        memory_sequence_length = tf.convert_to_tensor(memory_sequence_length, name="memory_sequence_length")
    if check_inner_dims_defined:
        for m in tf.nest.flatten(memory):
            if not m.shape[2:].is_fully_defined():
                raise ValueError(f"Expected memory {m.name} to have fully defined inner dims, but saw shape: {m.shape}")
    if memory_sequence_length is None:
        return memory
    first = tf.nest.flatten(memory)[0]
    mask = tf.sequence_mask(memory_sequence_length, maxlen=tf.shape(first)[1], dtype=first.dtype)
    lengths_batch = _static_or_dynamic_dim(memory_sequence_length, 0)

    def masked(m):
        extra_ones = tf.ones(m.shape.rank - 2, dtype=tf.int32)
        check = tf.debugging.assert_equal(
            lengths_batch,
            _static_or_dynamic_dim(m, 0),
            message="memory_sequence_length and memory tensor batch sizes do not match.",
        )
        with tf.control_dependencies([check]):
            return m * tf.reshape(mask, tf.concat([tf.shape(mask), extra_ones], 0))

    return tf.nest.map_structure(masked, memory)


def _maybe_mask_score(score, memory_sequence_length, score_mask_value):
    if memory_sequence_length is None:
        return score
    check = tf.debugging.assert_positive(
        memory_sequence_length, message="All values in memory_sequence_length must be greater than zero."
    )
    with tf.control_dependencies([check]):
        mask = tf.sequence_mask(memory_sequence_length, maxlen=tf.shape(score)[1])
        return tf.where(mask, score, score_mask_value * tf.ones_like(score))


class _BaseAttentionMechanism(AttentionMechanism):
    """Keys (the memory through `memory_layer`), values (the masked memory), and a probability function that
    masks scores past each entry's memory length with `score_mask_value` (-inf unless given)."""

    def __init__(
        self,
        query_layer,
        memory,
        probability_fn,
        memory_sequence_length=None,
        memory_layer=None,
        check_inner_dims_defined: bool = True,
        score_mask_value=None,
        custom_key_value_fn=None,
        name=None,
    ) -> None:
        for what, layer in (("query_layer", query_layer), ("memory_layer", memory_layer)):
            if layer is not None and not callable(layer):
                raise TypeError(f"{what} is not a Layer: {type(layer).__name__}")
        self._query_layer = query_layer
        self._memory_layer = memory_layer
        self._eager_variables: dict = {}
        self.dtype = memory_layer.dtype if memory_layer is not None else None
        if not callable(probability_fn):
            raise TypeError(f"probability_fn must be callable, saw type: {type(probability_fn).__name__}")
        if score_mask_value is None:
            score_mask_value = tf.as_dtype(tf.nest.flatten(memory)[0].dtype).as_numpy_dtype(-np.inf)
        self._probability_fn = lambda score, prev: probability_fn(
            _maybe_mask_score(score, memory_sequence_length, score_mask_value), prev
        )
        with tf.name_scope(name or "BaseAttentionMechanismInit"):
            self._values = _prepare_memory(memory, memory_sequence_length, check_inner_dims_defined)
            self._keys = self.memory_layer(self._values) if self.memory_layer is not None else self._values
            if custom_key_value_fn is not None:
                self._keys, self._values = custom_key_value_fn(self._keys, self._values)
            self._batch_size = _static_or_dynamic_dim(self._keys, 0)
            self._alignments_size = _static_or_dynamic_dim(self._keys, 1)

    def _scope(self, default_name: str, query):
        """The variable scope the scores are computed in; eagerly, where get_variable makes a new variable at
        every call, it hands back the mechanism's own variables after the first call."""
        return v1.variable_scope(None, default_name, [query], custom_getter=self._reusing_getter)

    def _reusing_getter(self, getter, name, *args, **kwargs):
        if not tf.executing_eagerly():
            return getter(name, *args, **kwargs)
        if name not in self._eager_variables:
            self._eager_variables[name] = getter(name, *args, **kwargs)
        return self._eager_variables[name]

    @property
    def memory_layer(self):
        return self._memory_layer

    @property
    def query_layer(self):
        return self._query_layer

    @property
    def values(self):
        return self._values

    @property
    def keys(self):
        return self._keys

    @property
    def batch_size(self):
        return self._batch_size

    @property
    def alignments_size(self):
        return self._alignments_size

    @property
    def state_size(self):
        return self._alignments_size

    def initial_alignments(self, batch_size, dtype):
        """Zeros of [batch_size, max memory time]."""
        return tf.zeros(tf.stack([batch_size, self._alignments_size]), dtype=dtype)

    def initial_state(self, batch_size, dtype):
        return self.initial_alignments(batch_size, dtype)


def _luong_score(query, keys, scale: bool):
    """query [batch, depth] · keys [batch, time, depth] -> [batch, time], times a scalar `attention_g` (one at
    first) when `scale`."""
    depth = query.shape[-1]
    key_units = keys.shape[-1]
    if depth != key_units:
        raise ValueError(
            "Incompatible or unknown inner dimensions between query and keys.  Query "
            f"({query}) has units: {depth}.  Keys ({keys}) have units: {key_units}.  Perhaps you need to set "
            "num_units to the keys' dimension?"
        )
    score = tf.squeeze(tf.matmul(tf.expand_dims(query, 1), keys, transpose_b=True), [1])
    if scale:
        gain = v1.get_variable("attention_g", dtype=query.dtype, initializer=v1.ones_initializer(), shape=())
        score = gain * score
    return score


def _bahdanau_score(processed_query, keys, normalize: bool):
    """v · tanh(keys + query) -> [batch, time]; with `normalize`, v is weight-normalized (gain `attention_g`,
    bias `attention_b`)."""
    dtype = processed_query.dtype
    num_units = _static_or_dynamic_dim(keys, 2)
    processed_query = tf.expand_dims(processed_query, 1)
    v = v1.get_variable("attention_v", [num_units], dtype=dtype)
    if not normalize:
        return tf.reduce_sum(v * tf.tanh(keys + processed_query), [2])
    gain = v1.get_variable(
        "attention_g", dtype=dtype, initializer=v1.constant_initializer(math.sqrt(1.0 / num_units)), shape=()
    )
    bias = v1.get_variable("attention_b", [num_units], dtype=dtype, initializer=v1.zeros_initializer())
    normed_v = gain * v * tf.math.rsqrt(tf.reduce_sum(tf.square(v)))
    return tf.reduce_sum(normed_v * tf.tanh(keys + processed_query + bias), [2])


def _memory_dense(num_units: int, name: str, dtype):
    return _Dense(num_units, name=name, use_bias=False, dtype=dtype)


class LuongAttention(_BaseAttentionMechanism):
    """Multiplicative attention (Luong et al., 2015): scores are the query's dot products with the keys (the
    memory through a bias-free `memory_layer` of `num_units`), optionally scaled by a learned scalar."""

    def __init__(
        self,
        num_units: int,
        memory,
        memory_sequence_length=None,
        scale: bool = False,
        probability_fn=None,
        score_mask_value=None,
        dtype=None,
        custom_key_value_fn=None,
        name: str = "LuongAttention",
    ) -> None:
        probability_fn = probability_fn or tf.nn.softmax
        dtype = dtype or tf.float32
        super().__init__(
            query_layer=None,
            memory_layer=_memory_dense(num_units, "memory_layer", dtype),
            memory=memory,
            probability_fn=lambda score, _: probability_fn(score),
            memory_sequence_length=memory_sequence_length,
            score_mask_value=score_mask_value,
            custom_key_value_fn=custom_key_value_fn,
            name=name,
        )
        self._num_units = num_units
        self._scale = scale
        self._name = name

    def __call__(self, query, state):
        """(alignments [batch, time], next state) for `query` [batch, num_units]."""
        with self._scope("luong_attention", query):
            score = _luong_score(query, self._keys, self._scale)
        alignments = self._probability_fn(score, state)
        return alignments, alignments


class BahdanauAttention(_BaseAttentionMechanism):
    """Additive attention (Bahdanau et al., 2015): scores are v · tanh(keys + query_layer(query)), keys being the
    memory through a bias-free `memory_layer`; `normalize` weight-normalizes v (Salimans and Kingma, 2016)."""

    def __init__(
        self,
        num_units: int,
        memory,
        memory_sequence_length=None,
        normalize: bool = False,
        probability_fn=None,
        score_mask_value=None,
        dtype=None,
        custom_key_value_fn=None,
        name: str = "BahdanauAttention",
    ) -> None:
        probability_fn = probability_fn or tf.nn.softmax
        dtype = dtype or tf.float32
        super().__init__(
            query_layer=_memory_dense(num_units, "query_layer", dtype),
            memory_layer=_memory_dense(num_units, "memory_layer", dtype),
            memory=memory,
            probability_fn=lambda score, _: probability_fn(score),
            memory_sequence_length=memory_sequence_length,
            score_mask_value=score_mask_value,
            custom_key_value_fn=custom_key_value_fn,
            name=name,
        )
        self._num_units = num_units
        self._normalize = normalize
        self._name = name

    def __call__(self, query, state):
        """(alignments [batch, time], next state) for `query` [batch, query depth]."""
        with self._scope("bahdanau_attention", query):
            score = _bahdanau_score(self.query_layer(query), self._keys, self._normalize)
        alignments = self._probability_fn(score, state)
        return alignments, alignments


def safe_cumprod(x, *args, **kwargs):
    """cumprod(x) computed as exp(cumsum(log(x))) with x clipped to [tiny, 1], which keeps its gradient finite;
    the arguments after `x` are tf.math.cumsum's (axis, exclusive, reverse)."""
    with tf.name_scope("SafeCumprod"):
        x = tf.convert_to_tensor(x, name="x")
        tiny = np.finfo(x.dtype.as_numpy_dtype).tiny
        return tf.exp(tf.cumsum(tf.math.log(tf.clip_by_value(x, tiny, 1)), *args, **kwargs))


def monotonic_attention(p_choose_i, previous_attention, mode: str):
    """The expected monotonic alignments [batch, time] from the probabilities `p_choose_i` of stopping at each
    memory entry and the previous step's alignments: `recursive` (a tf.scan, exact), `parallel` (cumprod form,
    may lose precision where p_choose_i is near 1) or `hard` (p_choose_i all 0 or 1: the first chosen entry at
    or after the previous one)."""
    p_choose_i = tf.convert_to_tensor(p_choose_i, name="p_choose_i")
    previous_attention = tf.convert_to_tensor(previous_attention, name="previous_attention")
    if mode == "recursive":
        batch_size = _static_or_dynamic_dim(p_choose_i, 0)
        shifted_1mp_choose_i = tf.concat([tf.ones((batch_size, 1), p_choose_i.dtype), 1 - p_choose_i[:, :-1]], 1)
        attention = p_choose_i * tf.transpose(
            tf.scan(
                lambda carried, step: step[0] * carried + step[1],
                [tf.transpose(shifted_1mp_choose_i), tf.transpose(previous_attention)],
                tf.zeros((batch_size,), p_choose_i.dtype),
            )
        )
    elif mode == "parallel":
        cumprod_1mp_choose_i = safe_cumprod(1 - p_choose_i, axis=1, exclusive=True)
        attention = (
            p_choose_i
            * cumprod_1mp_choose_i
            * tf.cumsum(previous_attention / tf.clip_by_value(cumprod_1mp_choose_i, 1e-10, 1.0), axis=1)
        )
    elif mode == "hard":
        p_choose_i *= tf.cumsum(previous_attention, axis=1)  # nothing before the last step's entry
        attention = p_choose_i * tf.math.cumprod(1 - p_choose_i, axis=1, exclusive=True)
    else:
        raise ValueError("mode must be 'recursive', 'parallel', or 'hard'.")
    return attention


def _monotonic_probability_fn(score, previous_alignments, sigmoid_noise, mode: str, seed=None):
    if sigmoid_noise > 0:
        score += sigmoid_noise * tf.random.normal(tf.shape(score), dtype=score.dtype, seed=seed)
    if mode == "hard":
        p_choose_i = tf.cast(score > 0, score.dtype)
    else:
        p_choose_i = tf.sigmoid(score)
    return monotonic_attention(p_choose_i, previous_alignments, mode)


class _BaseMonotonicAttentionMechanism(_BaseAttentionMechanism):
    """Monotonic mechanisms start with all attention on the first memory entry."""

    def initial_alignments(self, batch_size, dtype):
        max_time = self._alignments_size
        return tf.one_hot(tf.zeros((batch_size,), dtype=tf.int32), max_time, dtype=dtype)


class BahdanauMonotonicAttention(_BaseMonotonicAttentionMechanism):
    """Bahdanau scores plus a learned scalar `attention_score_bias`, through the monotonic attention of Raffel et
    al. (2017)."""

    def __init__(
        self,
        num_units: int,
        memory,
        memory_sequence_length=None,
        normalize: bool = False,
        score_mask_value=None,
        sigmoid_noise: float = 0.0,
        sigmoid_noise_seed=None,
        score_bias_init: float = 0.0,
        mode: str = "parallel",
        dtype=None,
        name: str = "BahdanauMonotonicAttention",
    ) -> None:
        dtype = dtype or tf.float32
        super().__init__(
            query_layer=_memory_dense(num_units, "query_layer", dtype),
            memory_layer=_memory_dense(num_units, "memory_layer", dtype),
            memory=memory,
            probability_fn=functools.partial(
                _monotonic_probability_fn, sigmoid_noise=sigmoid_noise, mode=mode, seed=sigmoid_noise_seed
            ),
            memory_sequence_length=memory_sequence_length,
            score_mask_value=score_mask_value,
            name=name,
        )
        self._num_units = num_units
        self._normalize = normalize
        self._name = name
        self._score_bias_init = score_bias_init

    def __call__(self, query, state):
        with self._scope("bahdanau_monotonic_attention", query):
            score = _bahdanau_score(self.query_layer(query), self._keys, self._normalize)
            score_bias = v1.get_variable(
                "attention_score_bias", dtype=score.dtype, initializer=float(self._score_bias_init)
            )
            score += score_bias
        alignments = self._probability_fn(score, state)
        return alignments, alignments


class LuongMonotonicAttention(_BaseMonotonicAttentionMechanism):
    """Luong scores plus a learned scalar `attention_score_bias`, through the monotonic attention of Raffel et
    al. (2017)."""

    def __init__(
        self,
        num_units: int,
        memory,
        memory_sequence_length=None,
        scale: bool = False,
        score_mask_value=None,
        sigmoid_noise: float = 0.0,
        sigmoid_noise_seed=None,
        score_bias_init: float = 0.0,
        mode: str = "parallel",
        dtype=None,
        name: str = "LuongMonotonicAttention",
    ) -> None:
        dtype = dtype or tf.float32
        super().__init__(
            query_layer=None,
            memory_layer=_memory_dense(num_units, "memory_layer", dtype),
            memory=memory,
            probability_fn=functools.partial(
                _monotonic_probability_fn, sigmoid_noise=sigmoid_noise, mode=mode, seed=sigmoid_noise_seed
            ),
            memory_sequence_length=memory_sequence_length,
            score_mask_value=score_mask_value,
            name=name,
        )
        self._num_units = num_units
        self._scale = scale
        self._score_bias_init = score_bias_init
        self._name = name

    def __call__(self, query, state):
        with self._scope("luong_monotonic_attention", query):
            score = _luong_score(query, self._keys, self._scale)
            score_bias = v1.get_variable(
                "attention_score_bias", dtype=query.dtype, initializer=float(self._score_bias_init)
            )
            score += score_bias
        alignments = self._probability_fn(score, state)
        return alignments, alignments


class AttentionWrapperState(
    collections.namedtuple(
        "AttentionWrapperState",
        ("cell_state", "attention", "time", "alignments", "alignment_history", "attention_state"),
    )
):
    """The state of an `AttentionWrapper`: the wrapped cell's state, the last attention output, the step number,
    the last alignments (a tuple of them with several mechanisms), their history (TensorArrays, when kept) and the
    mechanisms' own states."""

    def clone(self, **kwargs) -> AttentionWrapperState:
        """A copy with the given fields replaced, each new tensor keeping the shape of the one it replaces (in
        graph mode with a check where the shapes are not both known)."""

        def keep_shape(old, new):
            if not (isinstance(old, tf.Tensor) and isinstance(new, tf.Tensor)):
                return new
            if tf.executing_eagerly():
                if old.shape != new.shape:
                    raise ValueError(
                        "The shape of the AttentionWrapperState is expected to be same as the one to clone. "
                        f"self.shape: {old.shape}, input.shape: {new.shape}"
                    )
                return new
            return with_same_shape(old, new)

        return tf.nest.map_structure(keep_shape, self, super()._replace(**kwargs))


def hardmax(logits, name=None):
    """One-hot vectors of the argmax over the last axis of `logits`, in the logits' dtype."""
    with tf.name_scope(name or "Hardmax"):
        logits = tf.convert_to_tensor(logits, name="logits")
        depth = tf.compat.dimension_value(logits.shape[-1]) or tf.shape(logits)[-1]
        return tf.one_hot(tf.argmax(logits, -1), depth, dtype=logits.dtype)


def _compute_attention(attention_mechanism, cell_output, attention_state, attention_layer):
    """(attention, alignments, next attention state): the context is the alignments' weighted sum of the values,
    through `attention_layer` (on [cell_output, context]) when there is one."""
    alignments, next_attention_state = attention_mechanism(cell_output, state=attention_state)
    context = tf.squeeze(tf.matmul(tf.expand_dims(alignments, 1), attention_mechanism.values), [1])
    if attention_layer is not None:
        return attention_layer(tf.concat([cell_output, context], 1)), alignments, next_attention_state
    return context, alignments, next_attention_state


def _zero_state_tensors(state_size, batch_size, dtype):
    def zeros(size):
        shape = tf.TensorShape(size)
        return tf.zeros(tf.concat([[batch_size], tf.constant(shape.as_list(), tf.int32)], 0), dtype=dtype)

    return tf.nest.map_structure(zeros, state_size)


class AttentionWrapper(_RNNCell):
    """An RNN cell that feeds `cell` its inputs with the last attention (`cell_input_fn`, concatenation unless
    given), then attends with each mechanism on the cell's output; outputs the attention (or, without
    `output_attention`, the cell's output) and an `AttentionWrapperState`."""

    def __init__(
        self,
        cell,
        attention_mechanism,
        attention_layer_size=None,
        alignment_history: bool = False,
        cell_input_fn=None,
        output_attention: bool = True,
        initial_cell_state=None,
        name=None,
        attention_layer=None,
        attention_fn=None,
    ) -> None:
        super().__init__(name=name)
        assert_like_rnncell("cell", cell)
        if isinstance(attention_mechanism, (list, tuple)):
            self._is_multi = True
            mechanisms = tuple(attention_mechanism)
            for mechanism in mechanisms:
                if not isinstance(mechanism, AttentionMechanism):
                    raise TypeError(
                        "attention_mechanism must contain only instances of AttentionMechanism, saw type: "
                        f"{type(mechanism).__name__}"
                    )
        else:
            self._is_multi = False
            if not isinstance(attention_mechanism, AttentionMechanism):
                raise TypeError(
                    "attention_mechanism must be an AttentionMechanism or list of multiple AttentionMechanism "
                    f"instances, saw type: {type(attention_mechanism).__name__}"
                )
            mechanisms = (attention_mechanism,)
        if cell_input_fn is None:
            cell_input_fn = lambda inputs, attention: tf.concat([inputs, attention], -1)  # noqa: E731
        elif not callable(cell_input_fn):
            raise TypeError(f"cell_input_fn must be callable, saw type: {type(cell_input_fn).__name__}")
        if attention_layer_size is not None and attention_layer is not None:
            raise ValueError("Only one of attention_layer_size and attention_layer should be set")
        if attention_layer_size is not None:
            sizes = tuple(
                attention_layer_size if isinstance(attention_layer_size, (list, tuple)) else (attention_layer_size,)
            )
            if len(sizes) != len(mechanisms):
                raise ValueError(
                    "If provided, attention_layer_size must contain exactly one integer per attention_mechanism, "
                    f"saw: {len(sizes)} vs {len(mechanisms)}"
                )
            self._attention_layers = tuple(
                _Dense(size, name="attention_layer", use_bias=False, dtype=mechanism.dtype)
                for size, mechanism in zip(sizes, mechanisms)
            )
            self._attention_layer_size = sum(sizes)
        elif attention_layer is not None:
            layers = tuple(attention_layer if isinstance(attention_layer, (list, tuple)) else (attention_layer,))
            if len(layers) != len(mechanisms):
                raise ValueError(
                    "If provided, attention_layer must contain exactly one layer per attention_mechanism, "
                    f"saw: {len(layers)} vs {len(mechanisms)}"
                )
            self._attention_layers = layers
            self._attention_layer_size = sum(
                tf.compat.dimension_value(
                    layer.compute_output_shape(
                        [None, cell.output_size + tf.compat.dimension_value(mechanism.values.shape[-1])]
                    )[-1]
                )
                for layer, mechanism in zip(layers, mechanisms)
            )
        else:
            self._attention_layers = None
            self._attention_layer_size = sum(
                tf.compat.dimension_value(mechanism.values.shape[-1]) for mechanism in mechanisms
            )
        self._cell = cell
        self._attention_mechanisms = mechanisms
        self._cell_input_fn = cell_input_fn
        self._output_attention = output_attention
        self._alignment_history = alignment_history
        self._attention_fn = attention_fn or _compute_attention
        with tf.name_scope(name or "AttentionWrapperInit"):
            self._initial_cell_state = (
                None if initial_cell_state is None else tf.nest.map_structure(tf.identity, initial_cell_state)
            )

    def _item_or_tuple(self, seq):
        items = tuple(seq)
        return items if self._is_multi else items[0]

    @property
    def output_size(self):
        return self._attention_layer_size if self._output_attention else self._cell.output_size

    @property
    def state_size(self) -> AttentionWrapperState:
        return AttentionWrapperState(
            cell_state=self._cell.state_size,
            time=tf.TensorShape([]),
            attention=self._attention_layer_size,
            alignments=self._item_or_tuple(m.alignments_size for m in self._attention_mechanisms),
            attention_state=self._item_or_tuple(m.state_size for m in self._attention_mechanisms),
            alignment_history=self._item_or_tuple(
                m.alignments_size if self._alignment_history else () for m in self._attention_mechanisms
            ),
        )

    def zero_state(self, batch_size, dtype) -> AttentionWrapperState:
        """The first state: the wrapped cell's (or `initial_cell_state`), zero attention, the mechanisms' initial
        alignments, and empty alignment histories where kept."""
        with tf.name_scope(f"{type(self).__name__}ZeroState"):
            if self._initial_cell_state is not None:
                cell_state = self._initial_cell_state
            else:
                cell_state = self._cell.zero_state(batch_size, dtype)
            cell_state = tf.nest.map_structure(tf.identity, cell_state)
            alignments = [m.initial_alignments(batch_size, dtype) for m in self._attention_mechanisms]
            return AttentionWrapperState(
                cell_state=cell_state,
                time=tf.zeros([], dtype=tf.int32),
                attention=_zero_state_tensors(self._attention_layer_size, batch_size, dtype),
                alignments=self._item_or_tuple(alignments),
                attention_state=self._item_or_tuple(
                    m.initial_state(batch_size, dtype) for m in self._attention_mechanisms
                ),
                alignment_history=self._item_or_tuple(
                    tf.TensorArray(dtype, size=0, dynamic_size=True, element_shape=alignment.shape)
                    if self._alignment_history
                    else ()
                    for alignment in alignments
                ),
            )

    def call(self, inputs, state):
        if not isinstance(state, AttentionWrapperState):
            raise TypeError(
                f"Expected state to be instance of AttentionWrapperState. Received type {type(state)} instead."
            )
        cell_inputs = self._cell_input_fn(inputs, state.attention)
        cell_output, next_cell_state = self._cell(cell_inputs, state.cell_state)
        if self._is_multi:
            previous_states, previous_histories = state.attention_state, state.alignment_history
        else:
            previous_states, previous_histories = [state.attention_state], [state.alignment_history]
        attentions, all_alignments, next_states, histories = [], [], [], []
        for index, mechanism in enumerate(self._attention_mechanisms):
            attention, alignments, next_attention_state = self._attention_fn(
                mechanism,
                cell_output,
                previous_states[index],
                self._attention_layers[index] if self._attention_layers else None,
            )
            history = previous_histories[index].write(state.time, alignments) if self._alignment_history else ()
            attentions.append(attention)
            all_alignments.append(alignments)
            next_states.append(next_attention_state)
            histories.append(history)
        attention = tf.concat(attentions, 1)
        next_state = AttentionWrapperState(
            time=state.time + 1,
            cell_state=next_cell_state,
            attention=attention,
            attention_state=self._item_or_tuple(next_states),
            alignments=self._item_or_tuple(all_alignments),
            alignment_history=self._item_or_tuple(histories),
        )
        return (attention if self._output_attention else cell_output), next_state
