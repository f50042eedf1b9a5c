"""`tf.contrib.cudnn_rnn`'s layers (`CudnnLSTM`, `CudnnGRU`, `CudnnRNNTanh`, `CudnnRNNRelu`) and their
`CudnnCompatible*Cell`s, computed with the RNN cells of tf.compat.v1.nn.rnn_cell on the canonical weights.

TF 1.15 kept the weights in one opaque cuDNN buffer and saved them in checkpoints in canonical form, one kernel
and bias per layer and direction, under the names of the compatible cells:
`<layer>/rnn/multi_rnn_cell/cell_<i>/cudnn_compatible_lstm_cell/{kernel,bias}` (unidirectional) and
`<layer>/stack_bidirectional_rnn/cell_<i>/bidirectional_rnn/{fw,bw}/cudnn_compatible_lstm_cell/{kernel,bias}`.
Here those canonical weights are the variables themselves, so TF 1.15's checkpoints restore by name, and a
checkpoint written on a CPU host or a GPU host restores on the other; the recurrence is tf.compat.v1.nn's dynamic
RNN on either (not cuDNN's fused kernel).
"""

from __future__ import annotations

import tensorflow as tf

from npu_bridge_compat import compat

__all__ = [
    "CUDNN_GRU",
    "CUDNN_INPUT_AUTO_MODE",
    "CUDNN_INPUT_LINEAR_MODE",
    "CUDNN_INPUT_SKIP_MODE",
    "CUDNN_LSTM",
    "CUDNN_RNN_BIDIRECTION",
    "CUDNN_RNN_RELU",
    "CUDNN_RNN_TANH",
    "CUDNN_RNN_UNIDIRECTION",
    "CudnnCompatibleGRUCell",
    "CudnnCompatibleLSTMCell",
    "CudnnGRU",
    "CudnnLSTM",
    "CudnnRNNRelu",
    "CudnnRNNTanh",
]

v1 = tf.compat.v1
CUDNN_RNN_UNIDIRECTION = "unidirectional"
CUDNN_RNN_BIDIRECTION = "bidirectional"
CUDNN_LSTM = "lstm"
CUDNN_GRU = "gru"
CUDNN_RNN_RELU = "rnn_relu"
CUDNN_RNN_TANH = "rnn_tanh"
CUDNN_INPUT_LINEAR_MODE = "linear_input"
CUDNN_INPUT_SKIP_MODE = "skip_input"
CUDNN_INPUT_AUTO_MODE = "auto_select"

_rnn_cell = compat.tf1_keras_api("nn.rnn_cell")


class CudnnCompatibleLSTMCell(_rnn_cell.LSTMCell):
    """The LSTM cell that computes what cuDNN's LSTM computes: gates i, j, f, o from one kernel and bias, no
    forget bias; variables `cudnn_compatible_lstm_cell/kernel` and `bias`."""

    def __init__(self, num_units: int, reuse=None, name: str = "cudnn_compatible_lstm_cell", **kwargs) -> None:
        super().__init__(num_units, forget_bias=0.0, state_is_tuple=True, reuse=reuse, name=name, **kwargs)


class CudnnCompatibleGRUCell(_rnn_cell.GRUCell):
    """The GRU cell that computes what cuDNN's GRU computes: the reset gate applied after the hidden projection,
    h' = u * h + (1 - u) * tanh(x W + b + r * (h R + b_R)); variables `gates/{kernel,bias}` and
    `candidate/{input,hidden}_projection/{kernel,bias}`."""

    def __init__(self, num_units: int, reuse=None, kernel_initializer=None, name: str = "cudnn_compatible_gru_cell"):
        super().__init__(num_units, reuse=reuse, kernel_initializer=kernel_initializer, name=name)
        self.units, self.kernel_initializer = num_units, kernel_initializer  # GRUCell keeps its own privately

    def build(self, inputs_shape) -> None:
        input_depth = tf.compat.dimension_value(inputs_shape[-1])
        if input_depth is None:
            raise ValueError(f"Expected inputs.shape[-1] to be known, saw shape: {inputs_shape}")
        units = self.units
        self.gates_kernel = self.add_weight(
            "gates/kernel", shape=[input_depth + units, 2 * units], initializer=self.kernel_initializer
        )
        self.gates_bias = self.add_weight("gates/bias", shape=[2 * units], initializer=v1.constant_initializer(1.0))
        self.candidate_input_kernel = self.add_weight(
            "candidate/input_projection/kernel", shape=[input_depth, units], initializer=self.kernel_initializer
        )
        self.candidate_hidden_kernel = self.add_weight(
            "candidate/hidden_projection/kernel", shape=[units, units], initializer=self.kernel_initializer
        )
        self.candidate_input_bias = self.add_weight(
            "candidate/input_projection/bias", shape=[units], initializer=v1.zeros_initializer()
        )
        self.candidate_hidden_bias = self.add_weight(
            "candidate/hidden_projection/bias", shape=[units], initializer=v1.zeros_initializer()
        )
        self.built = True

    def call(self, inputs, state):
        gates = tf.sigmoid(tf.matmul(tf.concat([inputs, state], 1), self.gates_kernel) + self.gates_bias)
        reset, update = tf.split(gates, 2, axis=1)
        candidate = tf.tanh(
            tf.matmul(inputs, self.candidate_input_kernel)
            + self.candidate_input_bias
            + reset * (tf.matmul(state, self.candidate_hidden_kernel) + self.candidate_hidden_bias)
        )
        new_h = update * state + (1 - update) * candidate
        return new_h, new_h


class _SimpleRNNCell(_rnn_cell.BasicRNNCell):
    """cuDNN's plain RNN: h' = act(x W + h R + b), one kernel and bias (`cudnn_compatible_rnn_cell`)."""

    def __init__(self, num_units: int, activation, name: str = "cudnn_compatible_rnn_cell") -> None:
        super().__init__(num_units, activation=activation, name=name)


class _CudnnRNN(compat.v1_layer_class()):
    """A stack of `num_layers` RNN layers over time-major inputs [time, batch, depth], one or two directions."""

    _cell_kind = ""
    _num_states = 1

    def __init__(
        self,
        num_layers: int,
        num_units: int,
        input_mode: str = CUDNN_INPUT_LINEAR_MODE,
        direction: str = CUDNN_RNN_UNIDIRECTION,
        dropout: float = 0.0,
        seed=None,
        dtype=tf.float32,
        kernel_initializer=None,
        bias_initializer=None,
        name=None,
    ) -> None:
        super().__init__(dtype=dtype, name=name)
        if direction not in (CUDNN_RNN_UNIDIRECTION, CUDNN_RNN_BIDIRECTION):
            raise ValueError(
                f"Invalid direction: {direction}, expecting {CUDNN_RNN_UNIDIRECTION} or {CUDNN_RNN_BIDIRECTION}"
            )
        if input_mode not in (CUDNN_INPUT_LINEAR_MODE, CUDNN_INPUT_SKIP_MODE, CUDNN_INPUT_AUTO_MODE):
            raise ValueError(
                f"Invalid input_mode: {input_mode}, expecting one of {CUDNN_INPUT_LINEAR_MODE}, "
                f"{CUDNN_INPUT_SKIP_MODE}, {CUDNN_INPUT_AUTO_MODE}"
            )
        if input_mode == CUDNN_INPUT_SKIP_MODE:
            raise NotImplementedError(
                "input_mode='skip_input' (no input projection in the first layer) has no compatible-cell form; "
                "use the default 'linear_input'"
            )
        self._num_layers = num_layers
        self._num_units = num_units
        self._input_mode = input_mode
        self._direction = direction
        self._dropout = dropout
        self._seed = seed
        self._kernel_initializer = kernel_initializer  # biases start at zero, as cuDNN's default
        self._cells = None

    @property
    def num_layers(self) -> int:
        return self._num_layers

    @property
    def num_units(self) -> int:
        return self._num_units

    @property
    def input_mode(self) -> str:
        return self._input_mode

    @property
    def direction(self) -> str:
        return self._direction

    @property
    def num_dirs(self) -> int:
        return 1 if self._direction == CUDNN_RNN_UNIDIRECTION else 2

    @property
    def rnn_mode(self) -> str:
        return self._cell_kind

    @property
    def state_shape(self):
        """The shape of each state tensor: [num_layers * num_dirs, batch, num_units] (batch as a tensor)."""
        return [self._num_layers * self.num_dirs, None, self._num_units]

    def _make_cell(self):
        raise NotImplementedError

    def build(self, input_shape) -> None:
        if tf.compat.dimension_value(tf.TensorShape(input_shape)[-1]) is None:
            raise ValueError("The last dimension of the inputs to `CudnnRNN` should be defined. Found `None`.")
        self._cells = [[self._make_cell() for _ in range(self.num_dirs)] for _ in range(self._num_layers)]
        self.built = True

    def call(self, inputs, initial_state=None, sequence_lengths=None, time_major: bool = True, training: bool = True):
        """(outputs [time, batch, num_dirs * num_units], output states): the states are (h, c) for an LSTM,
        (h,) otherwise, each [num_layers * num_dirs, batch, num_units]."""
        inputs = tf.convert_to_tensor(inputs, dtype=self.dtype)
        if not time_major:
            inputs = tf.transpose(inputs, [1, 0, 2])
        batch_size = tf.shape(inputs)[1]
        states = self._split_states(initial_state, batch_size, inputs.dtype)
        final_states = []
        outputs = inputs
        for layer, cells in enumerate(self._cells):
            if layer > 0 and training and self._dropout > 0:  # cuDNN drops out between layers only
                outputs = tf.nn.dropout(outputs, rate=self._dropout, seed=self._seed)
            outputs, layer_states = self._run_layer(layer, cells, outputs, states[layer], sequence_lengths)
            final_states.extend(layer_states)
        stacked = [tf.stack([self._state_tensors(s)[k] for s in final_states]) for k in range(self._num_states)]
        if not time_major:
            outputs = tf.transpose(outputs, [1, 0, 2])
        return outputs, tuple(stacked)

    def _run_layer(self, layer: int, cells, inputs, states, sequence_lengths):
        if self.num_dirs == 1:
            with v1.variable_scope(f"rnn/multi_rnn_cell/cell_{layer}") as scope:
                outputs, state = v1.nn.dynamic_rnn(
                    cells[0],
                    inputs,
                    sequence_length=sequence_lengths,
                    initial_state=states[0],
                    dtype=inputs.dtype,
                    time_major=True,
                    scope=scope,
                )
            return outputs, [state]
        with v1.variable_scope(f"stack_bidirectional_rnn/cell_{layer}"):
            (output_fw, output_bw), (state_fw, state_bw) = v1.nn.bidirectional_dynamic_rnn(
                cells[0],
                cells[1],
                inputs,
                sequence_length=sequence_lengths,
                initial_state_fw=states[0],
                initial_state_bw=states[1],
                dtype=inputs.dtype,
                time_major=True,
            )
        return tf.concat([output_fw, output_bw], 2), [state_fw, state_bw]

    def _state_tensors(self, state):
        return (state,) if self._num_states == 1 else (state.h, state.c)

    def _cell_state(self, tensors):
        return tensors[0]

    def _split_states(self, initial_state, batch_size, dtype):
        """Per layer, per direction, the cell state to start from (None: zeros)."""
        if initial_state is None:
            return [[None] * self.num_dirs for _ in range(self._num_layers)]
        initial_state = tuple(initial_state) if isinstance(initial_state, (tuple, list)) else (initial_state,)
        if len(initial_state) != self._num_states:
            raise ValueError(
                f"Invalid initial_state type: {type(initial_state)}, expecting {self._num_states} tensors "
                f"of shape {self.state_shape}"
            )
        unstacked = [
            tf.unstack(tf.convert_to_tensor(t, dtype=dtype), self._num_layers * self.num_dirs) for t in initial_state
        ]
        return [
            [
                self._cell_state([tensors[layer * self.num_dirs + direction] for tensors in unstacked])
                for direction in range(self.num_dirs)
            ]
            for layer in range(self._num_layers)
        ]


class CudnnLSTM(_CudnnRNN):
    """tf.contrib.cudnn_rnn.CudnnLSTM: states (h, c)."""

    _cell_kind = CUDNN_LSTM
    _num_states = 2

    def _make_cell(self):
        return CudnnCompatibleLSTMCell(self._num_units, initializer=self._kernel_initializer)

    def _cell_state(self, tensors):
        h, c = tensors
        return _rnn_cell.LSTMStateTuple(c=c, h=h)


class CudnnGRU(_CudnnRNN):
    """tf.contrib.cudnn_rnn.CudnnGRU: states (h,)."""

    _cell_kind = CUDNN_GRU

    def _make_cell(self):
        return CudnnCompatibleGRUCell(self._num_units, kernel_initializer=self._kernel_initializer)


class CudnnRNNTanh(_CudnnRNN):
    """tf.contrib.cudnn_rnn.CudnnRNNTanh: h' = tanh(x W + h R + b)."""

    _cell_kind = CUDNN_RNN_TANH

    def _make_cell(self):
        return _SimpleRNNCell(self._num_units, tf.tanh)


class CudnnRNNRelu(_CudnnRNN):
    """tf.contrib.cudnn_rnn.CudnnRNNRelu: h' = relu(x W + h R + b)."""

    _cell_kind = CUDNN_RNN_RELU

    def _make_cell(self):
        return _SimpleRNNCell(self._num_units, tf.nn.relu)
