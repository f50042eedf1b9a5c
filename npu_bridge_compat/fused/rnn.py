"""Ascend's fused recurrent layers on a host: DynamicRNN (LSTM), DynamicGRUV2, DynamicAUGRU, basic_lstm_cell and
npu_rnn.npu_dynamic_rnn.

The layers are `tf.compat.v1.layers.Layer`s (tf_keras' with Keras 3) with the adapter's class names, so their
scopes (`dynamic_rnn`, `dynamic_gruv2`, `dynamic_augru`, numbered as usual) and variables are the adapter's:

    dynamic_rnn/dynamicrnn/w                  [input + hidden, 4 * hidden]  gate blocks i, j, f, o
    dynamic_rnn/dynamicrnn/b                  [4 * hidden]                  ([2, ...] when BIDIRECTIONAL:
                                                                             forward, then backward)
    dynamic_gruv2/dynamicgruv2/weight_input   [input, 3 * hidden]           gate blocks in gate_order (zrh, rzh)
    dynamic_gruv2/dynamicgruv2/weight_hidden  [hidden, 3 * hidden]
    dynamic_gruv2/dynamicgruv2/bias_input     [3 * hidden]   (and bias_hidden)
    dynamic_augru/dynamicaugru/...            as DynamicGRUV2
    <scope>/dynamicbase/seq_length            [batch] int32, not trainable (the adapter's default lengths)

The Ascend kernels reject use_peephole and num_proj; on a host they add variables the adapter never creates:
`dynamicrnn/wci`, `wcf`, `wco` [hidden] (zeros at first) and `<prefix>/project` [hidden, min(num_proj, hidden)].

Math (σ the sigmoid; x the step's input, h and c the state of one sequence):
  LSTM   [i, j, f, o] = [x, h]·w + b;  i = σ(i), j = tanh(j), f = σ(f + forget_bias), o = σ(o);
         c' = f·c + i·j, tanhc = tanh(c'), h' = o·tanhc. TensorFlow's BlockLSTM kernel computes it. With
         use_peephole, i and f also see wci·c and wcf·c, and o sees wco·c'. cell_clip > 0 clips c' to
         [-cell_clip, cell_clip], TensorFlow's convention (the Ascend LSTM kernel's code clips only from above).
  GRU    x_z, x_r, x_n = x·weight_input + bias_input and h_z, h_r, h_n = h·weight_hidden + bias_hidden (blocks in
         gate_order); update z = σ(x_z + h_z), reset r = σ(x_r + h_r); with reset_after hidden_new = h_n and
         new = tanh(x_n + r·hidden_new), otherwise hidden_new = (r·h)·W_hn + b_hn and new = tanh(x_n + hidden_new);
         h' = z·h + (1 - z)·new, clipped to [-cell_clip, cell_clip] when cell_clip > 0.
  AUGRU  the GRU with update_att = (1 - a)·z in place of z, a the step's attention score (weight_att): the form
         Ascend's AUGRU gradient kernel differentiates.
seq_length masks as the Ascend LSTM kernel does: at steps t >= seq_length[b] y is 0 and output_h / output_c hold
the state reached at the sequence's end (in a backward pass, the initial state: those steps come first). The
gate outputs at those steps are the unmasked recurrence's.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import tensorflow as tf

from npu_bridge_compat.compat import v1_layer_class
from npu_bridge_compat.errors import NpuOptionValueError
from npu_bridge_compat.fused.checks import check_choice, check_int, check_keep_prob, graph_mode_only

DYNAMIC_RNN_UNIDIRECTION = "UNIDIRECTIONAL"
DYNAMIC_RNN_BIDIRECTION = "BIDIRECTIONAL"
DYNAMIC_RNN_REDIRECTIONAL = "REDIRECTIONAL"


class LSTMOutputs(NamedTuple):
    """DynamicRNN's eight outputs, each [num_step, batch, hidden] (y: [.., min(num_proj, hidden)] with num_proj)."""

    y: tf.Tensor
    output_h: tf.Tensor
    output_c: tf.Tensor
    i: tf.Tensor
    j: tf.Tensor
    f: tf.Tensor
    o: tf.Tensor
    tanhc: tf.Tensor


class GRUOutputs(NamedTuple):
    y: tf.Tensor
    output_h: tf.Tensor
    update: tf.Tensor
    reset: tf.Tensor
    new: tf.Tensor
    hidden_new: tf.Tensor


class AUGRUOutputs(NamedTuple):
    y: tf.Tensor
    output_h: tf.Tensor
    update: tf.Tensor
    update_att: tf.Tensor
    reset: tf.Tensor
    new: tf.Tensor
    hidden_new: tf.Tensor


# --- the recurrences, time-major, one direction -------------------------------------------------------------


def _sequence_mask(seq_length: tf.Tensor, steps: tf.Tensor, dtype: tf.DType) -> tf.Tensor:
    """1 where a step is inside its sequence, [num_step, batch, 1]."""
    return tf.cast(tf.transpose(tf.sequence_mask(seq_length, steps))[..., None], dtype)


def _reverse_time(tensor: tf.Tensor, seq_length: tf.Tensor | None) -> tf.Tensor:
    if seq_length is None:
        return tf.reverse(tensor, [0])
    return tf.reverse_sequence(tensor, seq_length, seq_axis=0, batch_axis=1)


def _hold_state(states, initial, seq_length, mask, reverse: bool) -> tf.Tensor:
    """States at steps past a sequence's end: the state at its end (forward) or the initial one (backward)."""
    if reverse:
        held = initial[None]
    else:
        lengths = tf.minimum(seq_length, tf.shape(states)[0])
        ends = tf.stack([lengths, tf.range(tf.shape(lengths)[0])], axis=1)
        held = tf.gather_nd(tf.concat([initial[None], states], 0), ends)[None]
    return states * mask + held * (1 - mask)


def lstm_steps(
    x,
    w,
    b,
    init_h,
    init_c,
    seq_length=None,
    *,
    forget_bias: float = 0.0,
    cell_clip: float = -1.0,
    peephole=None,
    reverse: bool = False,
) -> LSTMOutputs:
    """One direction of DynamicRNN over time-major x [num_step, batch, input]; init_h / init_c [batch, hidden];
    peephole: (wci, wcf, wco) or None; reverse: the REDIRECTIONAL pass (each sequence read from its end)."""
    steps = tf.shape(x)[0]
    if reverse:
        x = _reverse_time(x, seq_length)
    hidden = tf.shape(b)[0] // 4
    wci, wcf, wco = peephole if peephole is not None else [tf.zeros([hidden], x.dtype)] * 3
    i, c, f, o, j, tanhc, h = tf.raw_ops.BlockLSTM(
        seq_len_max=tf.cast(steps, tf.int64),
        x=x,
        cs_prev=init_c,
        h_prev=init_h,
        w=w,
        wci=wci,
        wcf=wcf,
        wco=wco,
        b=b,
        forget_bias=forget_bias,
        cell_clip=cell_clip,
        use_peephole=peephole is not None,
    )
    h, c, i, j, f, o, tanhc = [_reverse_time(t, seq_length) if reverse else t for t in (h, c, i, j, f, o, tanhc)]
    if seq_length is None:
        return LSTMOutputs(h, h, c, i, j, f, o, tanhc)
    mask = _sequence_mask(seq_length, steps, x.dtype)
    return LSTMOutputs(
        h * mask,
        _hold_state(h, init_h, seq_length, mask, reverse),
        _hold_state(c, init_c, seq_length, mask, reverse),
        i,
        j,
        f,
        o,
        tanhc,
    )


def gru_steps(
    x,
    weight_input,
    weight_hidden,
    bias_input,
    bias_hidden,
    init_h,
    seq_length=None,
    attention=None,
    *,
    gate_order: str = "zrh",
    reset_after: bool = True,
    cell_clip: float = -1.0,
) -> AUGRUOutputs:
    """DynamicGRUV2 (attention None) or DynamicAUGRU (attention [num_step, batch]) over time-major x."""
    steps = tf.shape(x)[0]
    x_gates = tf.tensordot(x, weight_input, 1) + bias_input  # every step's input part in one product
    mask = (
        tf.ones([steps, tf.shape(x)[1], 1], x.dtype)
        if seq_length is None
        else _sequence_mask(seq_length, steps, x.dtype)
    )
    scores = tf.zeros_like(mask) if attention is None else tf.cast(attention, x.dtype)[..., None]
    update_at, reset_at = (0, 1) if gate_order == "zrh" else (1, 0)
    weight_new, bias_new = tf.split(weight_hidden, 3, axis=1)[2], tf.split(bias_hidden, 3)[2]

    def step(previous: AUGRUOutputs, inputs) -> AUGRUOutputs:
        h = previous.output_h
        x_step, inside, score = inputs
        x_parts = tf.split(x_step, 3, axis=-1)
        h_parts = tf.split(tf.matmul(h, weight_hidden) + bias_hidden, 3, axis=-1)
        update = tf.sigmoid(x_parts[update_at] + h_parts[update_at])
        reset = tf.sigmoid(x_parts[reset_at] + h_parts[reset_at])
        if reset_after:
            hidden_new = h_parts[2]
            new = tf.tanh(x_parts[2] + reset * hidden_new)
        else:
            hidden_new = tf.matmul(reset * h, weight_new) + bias_new
            new = tf.tanh(x_parts[2] + hidden_new)
        update_att = (1 - score) * update
        h_next = update_att * h + (1 - update_att) * new
        if cell_clip > 0:
            h_next = tf.clip_by_value(h_next, -cell_clip, cell_clip)
        return AUGRUOutputs(
            h_next * inside, inside * h_next + (1 - inside) * h, update, update_att, reset, new, hidden_new
        )

    zeros = tf.zeros_like(init_h)
    first = AUGRUOutputs(zeros, init_h, zeros, zeros, zeros, zeros, zeros)
    return AUGRUOutputs(*tf.scan(step, (x_gates, mask, scores), initializer=first))


# --- the adapter's layers -----------------------------------------------------------------------------------


def _read_only(name: str) -> property:
    return property(lambda self: getattr(self, "_" + name), doc=f"The layer's {name} (read-only, as on Ascend).")


def _batch_major(tensor: tf.Tensor) -> tf.Tensor:
    """Swaps the time and batch axes of [T, B, ...] or of a bidirectional [2, T, B, ...]."""
    perm = [1, 0, 2] if tensor.shape.rank == 3 else [0, 2, 1, 3]
    return tf.transpose(tensor, perm)


class _DynamicBasic(v1_layer_class()):
    """What the adapter's layers share: options, checks, the seq_length variable, the input layout."""

    _prefix = ""  # the variables' scope inside the layer's, e.g. "dynamicrnn"

    def __init__(
        self,
        hidden_size,
        dtype,
        direction=DYNAMIC_RNN_UNIDIRECTION,
        cell_depth=1,
        keep_prob=1.0,
        cell_clip=-1.0,
        num_proj=0,
        time_major=True,
        activation="tanh",
        is_training=True,
    ):
        hidden_size = check_int("hidden_size", hidden_size, 1)
        dtype = tf.as_dtype(dtype)
        check_choice("dtype", dtype, (tf.float16, tf.float32), " (the kernels' types)")
        super().__init__(dtype=dtype)  # the layer's own dtype (Keras' `dtype`) is the kernels'
        self._hidden_size = hidden_size
        if direction not in (DYNAMIC_RNN_UNIDIRECTION, DYNAMIC_RNN_BIDIRECTION):
            raise NpuOptionValueError(
                f"Invalid direction: {direction}, expecting {DYNAMIC_RNN_UNIDIRECTION} or {DYNAMIC_RNN_BIDIRECTION}"
            )
        check_choice("cell_depth", cell_depth, (1,), ": the Ascend kernel computes one layer; stack layers instead")
        check_choice(
            "keep_prob", keep_prob, (1.0,), ": the Ascend kernel has no dropout; apply npu_ops.dropout to y instead"
        )
        check_choice("activation", activation, ("tanh",), " (the only one the Ascend kernel implements)")
        self._direction = direction
        self._cell_depth = cell_depth
        self._keep_prob = keep_prob
        self._cell_clip = float(cell_clip)
        self._num_proj = check_int("num_proj", num_proj, 0)
        self._time_major = bool(time_major)
        self._activation = activation
        self._is_training = bool(is_training)
        self._seq_length = None
        self._project = None

    direction = _read_only("direction")
    cell_depth = _read_only("cell_depth")
    keep_prob = _read_only("keep_prob")
    cell_clip = _read_only("cell_clip")
    num_proj = _read_only("num_proj")
    time_major = _read_only("time_major")
    activation = _read_only("activation")
    is_training = _read_only("is_training")

    @property
    def _directions(self) -> int:
        return 2 if self._direction == DYNAMIC_RNN_BIDIRECTION else 1

    def _per_direction(self, shape: list[int]) -> list[int]:
        return [2, *shape] if self._directions == 2 else shape

    @staticmethod
    def _input_size(input_shape) -> int:
        input_size = tf.compat.dimension_value(input_shape[2])
        if input_size is None:
            raise ValueError("Expected input_shape[2] to be known, saw shape: input_size.")
        return input_size

    def _variable(self, name: str, shape: list[int], initializer, dtype=None, trainable: bool = True):
        return self.add_weight(
            name, shape=shape, dtype=dtype or self.dtype, initializer=initializer, trainable=trainable
        )

    def build(self, input_shape):
        # The adapter reads these dimensions as [time, batch] whatever time_major says; so does its checkpoint.
        steps = tf.compat.dimension_value(input_shape[0]) or 1
        batch = tf.compat.dimension_value(input_shape[1]) or 16
        self._seq_length = self._variable(
            "dynamicbase/seq_length", [batch], tf.compat.v1.constant_initializer(steps), dtype=tf.int32, trainable=False
        )
        if self._num_proj:
            projected = min(self._num_proj, self._hidden_size)
            self._project = self._variable(
                f"{self._prefix}/project",
                self._per_direction([self._hidden_size, projected]),
                tf.compat.v1.glorot_uniform_initializer(),
            )
        super().build(input_shape)

    def _time_major_input(self, x) -> tf.Tensor:
        x = tf.cast(tf.convert_to_tensor(x), self.dtype)
        return x if self._time_major else _batch_major(x)

    def _initial_state(self, value, batch) -> tf.Tensor:
        """The initial state per direction, [directions, batch, hidden]; zeros by default."""
        if value is None:
            return tf.zeros([self._directions, batch, self._hidden_size], self.dtype)
        value = tf.cast(tf.convert_to_tensor(value), self.dtype)
        return value[None] if value.shape.rank == 2 else value

    def _lengths(self, seq_length) -> tf.Tensor | None:
        return None if seq_length is None else tf.cast(tf.convert_to_tensor(seq_length), tf.int32)

    def _of_direction(self, tensor, direction: int):
        """One direction's part of a variable ([2, ...] when BIDIRECTIONAL)."""
        return tensor[direction] if self._directions == 2 else tensor

    def _projected(self, y: tf.Tensor, direction: int) -> tf.Tensor:
        if self._project is None:
            return y
        return tf.tensordot(y, self._of_direction(self._project, direction), 1)

    def _in_input_layout(self, outputs):
        return outputs if self._time_major else type(outputs)(*[_batch_major(t) for t in outputs])


class DynamicRNN(_DynamicBasic):
    """npu_dynamic_rnn.DynamicRNN: the fused LSTM. `DynamicRNN(hidden_size, dtype, ...)(x, seq_length=None,
    init_h=None, init_c=None, weight=None, bias=None)` returns (y, output_h, output_c, i, j, f, o, tanhc).

    Time-major x [num_step, batch, input] (batch-major with time_major=False); init_h / init_c [1, batch, hidden]
    ([2, ...] when BIDIRECTIONAL); outputs [num_step, batch, hidden], stacked as [2, ...] (forward, backward) when
    BIDIRECTIONAL. weight / bias replace the layer's variables for one call, as in the adapter. is_training only
    tells the NPU whether to keep the gate outputs for its gradient kernel: on a host they are always returned.
    """

    _prefix = "dynamicrnn"

    def __init__(
        self,
        hidden_size,
        dtype,
        cell_type="LSTM",
        direction=DYNAMIC_RNN_UNIDIRECTION,
        cell_depth=1,
        use_peephole=False,
        keep_prob=1.0,
        cell_clip=-1.0,
        num_proj=0,
        time_major=True,
        activation="tanh",
        forget_bias=0.0,
        is_training=True,
    ):
        super().__init__(
            hidden_size,
            dtype,
            direction=direction,
            cell_depth=cell_depth,
            keep_prob=keep_prob,
            cell_clip=cell_clip,
            num_proj=num_proj,
            time_major=time_major,
            activation=activation,
            is_training=is_training,
        )
        check_choice("cell_type", cell_type, ("LSTM",), " (the only cell DynamicRNN implements)")
        self._cell_type = cell_type
        self._use_peephole = bool(use_peephole)
        self._forget_bias = float(forget_bias)
        self._rnn_w = self._rnn_b = None
        self._peephole = None

    cell_type = _read_only("cell_type")
    use_peephole = _read_only("use_peephole")
    forget_bias = _read_only("forget_bias")

    def build(self, input_shape):
        input_size = self._input_size(input_shape)
        hidden = self._hidden_size
        self._rnn_w = self._variable(
            "dynamicrnn/w",
            self._per_direction([input_size + hidden, 4 * hidden]),
            tf.compat.v1.glorot_uniform_initializer(seed=10),
        )
        self._rnn_b = self._variable(
            "dynamicrnn/b", self._per_direction([4 * hidden]), tf.compat.v1.zeros_initializer()
        )
        if self._use_peephole:
            self._peephole = [
                self._variable(f"dynamicrnn/{name}", self._per_direction([hidden]), tf.compat.v1.zeros_initializer())
                for name in ("wci", "wcf", "wco")
            ]
        super().build(input_shape)

    def call(self, x, seq_length=None, init_h=None, init_c=None, weight=None, bias=None):
        x = self._time_major_input(x)
        batch = tf.shape(x)[1]
        init_h, init_c = self._initial_state(init_h, batch), self._initial_state(init_c, batch)
        weight = self._rnn_w if weight is None else tf.cast(tf.convert_to_tensor(weight), self.dtype)
        bias = self._rnn_b if bias is None else tf.cast(tf.convert_to_tensor(bias), self.dtype)
        seq_length = self._lengths(seq_length)
        passes = []
        for direction in range(self._directions):
            pick = self._of_direction
            peephole = None if self._peephole is None else [pick(p, direction) for p in self._peephole]
            outputs = lstm_steps(
                x,
                pick(weight, direction),
                pick(bias, direction),
                init_h[direction],
                init_c[direction],
                seq_length,
                forget_bias=self._forget_bias,
                cell_clip=self._cell_clip,
                peephole=peephole,
                reverse=direction == 1,
            )
            passes.append(outputs._replace(y=self._projected(outputs.y, direction)))
        outputs = passes[0] if len(passes) == 1 else LSTMOutputs(*[tf.stack(pair) for pair in zip(*passes)])
        return self._in_input_layout(outputs)


class _DynamicGRU(_DynamicBasic):
    """DynamicGRUV2 and DynamicAUGRU: the same weights and recurrence, AUGRU scaling the update by attention."""

    def __init__(
        self,
        hidden_size,
        dtype,
        direction=DYNAMIC_RNN_UNIDIRECTION,
        cell_depth=1,
        keep_prob=1.0,
        cell_clip=-1.0,
        num_proj=0,
        time_major=True,
        activation="tanh",
        gate_order="zrh",
        reset_after=True,
        is_training=True,
    ):
        super().__init__(
            hidden_size,
            dtype,
            direction=direction,
            cell_depth=cell_depth,
            keep_prob=keep_prob,
            cell_clip=cell_clip,
            num_proj=num_proj,
            time_major=time_major,
            activation=activation,
            is_training=is_training,
        )
        if direction != DYNAMIC_RNN_UNIDIRECTION:
            raise NpuOptionValueError(
                f"{type(self).__name__} runs in one direction: direction must be "
                f"'{DYNAMIC_RNN_UNIDIRECTION}' (the Ascend kernel has no bidirectional "
                f"GRU; run a second layer on reversed input), got '{direction}'"
            )
        check_choice("gate_order", gate_order, ("zrh", "rzh"))
        self._gate_order = gate_order
        self._reset_after = bool(reset_after)
        self._weight_input = self._weight_hidden = self._bias_input = self._bias_hidden = None

    gate_order = _read_only("gate_order")
    reset_after = _read_only("reset_after")

    def build(self, input_shape):
        input_size = self._input_size(input_shape)
        hidden = self._hidden_size
        stdv = 1.0 / math.sqrt(hidden)

        def uniform(name, shape):
            return self._variable(f"{self._prefix}/{name}", shape, tf.compat.v1.random_uniform_initializer(-stdv, stdv))

        self._weight_input = uniform("weight_input", [input_size, 3 * hidden])
        self._weight_hidden = uniform("weight_hidden", [hidden, 3 * hidden])
        self._bias_input = uniform("bias_input", [3 * hidden])
        self._bias_hidden = uniform("bias_hidden", [3 * hidden])
        super().build(input_shape)

    def _run(self, x, attention, seq_length, init_h) -> AUGRUOutputs:
        x = self._time_major_input(x)
        init_h = self._initial_state(init_h, tf.shape(x)[1])[-1]
        if attention is not None:
            attention = tf.convert_to_tensor(attention)
            attention = attention if self._time_major else tf.transpose(attention)
        outputs = gru_steps(
            x,
            self._weight_input,
            self._weight_hidden,
            self._bias_input,
            self._bias_hidden,
            init_h,
            self._lengths(seq_length),
            attention,
            gate_order=self._gate_order,
            reset_after=self._reset_after,
            cell_clip=self._cell_clip,
        )
        return self._in_input_layout(outputs._replace(y=self._projected(outputs.y, 0)))


class DynamicGRUV2(_DynamicGRU):
    """npu_dynamic_rnn.DynamicGRUV2: `DynamicGRUV2(hidden_size, dtype, ...)(x, seq_length=None, init_h=None)`
    returns (y, output_h, update, reset, new, hidden_new), each [num_step, batch, hidden]; init_h [batch, hidden]."""

    _prefix = "dynamicgruv2"

    def call(self, x, seq_length=None, init_h=None):
        outputs = self._run(x, None, seq_length, init_h)
        return GRUOutputs(outputs.y, outputs.output_h, outputs.update, outputs.reset, outputs.new, outputs.hidden_new)


class DynamicAUGRU(_DynamicGRU):
    """npu_dynamic_rnn.DynamicAUGRU: `DynamicAUGRU(hidden_size, dtype, ...)(x, weight_att, seq_length=None,
    init_h=None)` returns (y, output_h, update, update_att, reset, new, hidden_new); weight_att [num_step, batch]
    holds each step's attention score."""

    _prefix = "dynamicaugru"

    def call(self, x, weight_att, seq_length=None, init_h=None):
        return self._run(x, weight_att, seq_length, init_h)


# --- npu_ops.basic_lstm_cell and npu_rnn.npu_dynamic_rnn ----------------------------------------------------


def basic_lstm_cell(x, h, c, w, b, keep_prob, forget_bias, state_is_tuple, activation, name=None):
    """npu_ops.basic_lstm_cell: one LSTM step, returning (ct, ht, it, jt, ft, ot, tanhct) with DynamicRNN's math
    and w [input + hidden, 4 * hidden] in i, j, f, o blocks. The NPU kernel drops inputs only through a mask the
    adapter never passes, so keep_prob is checked and has no effect; state_is_tuple does not change the math."""
    graph_mode_only("basic_lstm_cell")
    check_keep_prob(keep_prob)
    check_choice("activation", activation, ("tanh",), " (the only one the Ascend kernel implements)")
    with tf.name_scope(name or "basic_lstm_cell"):
        x = tf.convert_to_tensor(x, name="x")
        step = lstm_steps(
            x[None],
            tf.convert_to_tensor(w, name="w"),
            tf.convert_to_tensor(b, name="b"),
            tf.convert_to_tensor(h, name="h"),
            tf.convert_to_tensor(c, name="c"),
            forget_bias=float(forget_bias),
        )
        return tuple(t[0] for t in (step.output_c, step.output_h, step.i, step.j, step.f, step.o, step.tanhc))


def npu_dynamic_rnn(cell, inputs, initial_state=None, dtype=None, sequence_length=None, scope=None):
    """npu_rnn.npu_dynamic_rnn: the RNN of `cell` over time-major inputs, unrolled by static_rnn as the adapter
    does (variables under `scope`, default "rnn"); returns (outputs [time, batch, ...], final state)."""
    outputs, state = tf.compat.v1.nn.static_rnn(
        cell,
        tf.unstack(inputs, axis=0),
        initial_state=initial_state,
        dtype=dtype,
        sequence_length=sequence_length,
        scope=scope,
    )
    return tf.stack(outputs, axis=0), state
