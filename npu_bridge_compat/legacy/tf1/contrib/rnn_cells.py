"""`tf.contrib.rnn.LayerNormBasicLSTMCell`, an RNN cell of tf.compat.v1.nn.rnn_cell (Keras 2's)."""

from __future__ import annotations

import tensorflow as tf

from npu_bridge_compat import compat

__all__ = ["LayerNormBasicLSTMCell"]

v1 = tf.compat.v1
_rnn_cell = compat.tf1_keras_api("nn.rnn_cell")
_GATES = ("input", "transform", "forget", "output")


class LayerNormBasicLSTMCell(_rnn_cell.RNNCell):
    """TF 1.15's contrib LSTM cell with layer normalization (Ba et al., 2016) of each gate's
    pre-activation and of the new cell state, and recurrent dropout of the candidate (Semeniuta et al., 2016).
    Variables as TF 1.15 named them: `kernel` (and `bias` without layer norm), `input|transform|forget|
    output|state/gamma` and `beta`."""

    def __init__(
        self,
        num_units: int,
        forget_bias: float = 1.0,
        input_size=None,
        activation=tf.tanh,
        layer_norm: bool = True,
        norm_gain: float = 1.0,
        norm_shift: float = 0.0,
        dropout_keep_prob=1.0,
        dropout_prob_seed=None,
        reuse=None,
    ) -> None:
        super().__init__(_reuse=reuse)
        del input_size  # deprecated in TF 1.15 already, and without effect
        self._num_units = num_units
        self._activation = activation
        self._forget_bias = forget_bias
        self._keep_prob = dropout_keep_prob
        self._seed = dropout_prob_seed
        self._layer_norm = layer_norm
        self._norm_gain = norm_gain
        self._norm_shift = norm_shift

    @property
    def state_size(self):
        return _rnn_cell.LSTMStateTuple(self._num_units, self._num_units)

    @property
    def output_size(self) -> int:
        return self._num_units

    def build(self, inputs_shape) -> None:
        input_depth = tf.compat.dimension_value(inputs_shape[-1])
        if input_depth is None:
            raise ValueError(f"Expected inputs.shape[-1] to be known, saw shape: {inputs_shape}")
        out_size = 4 * self._num_units
        self._kernel = self.add_weight("kernel", [input_depth + self._num_units, out_size])
        self._bias = None if self._layer_norm else self.add_weight("bias", [out_size])
        self._norms = {}
        if self._layer_norm:
            for scope, size in (*((gate, self._num_units) for gate in _GATES), ("state", self._num_units)):
                gamma = self.add_weight(f"{scope}/gamma", [size], initializer=v1.constant_initializer(self._norm_gain))
                beta = self.add_weight(f"{scope}/beta", [size], initializer=v1.constant_initializer(self._norm_shift))
                self._norms[scope] = (gamma, beta)
        self.built = True

    def _norm(self, inputs, scope: str):
        gamma, beta = self._norms[scope]
        mean, variance = tf.nn.moments(inputs, [1], keepdims=True)
        return tf.nn.batch_normalization(inputs, mean, variance, beta, gamma, variance_epsilon=1e-12)

    def call(self, inputs, state):
        c, h = state
        gates = tf.matmul(tf.concat([inputs, h], 1), self._kernel)
        if self._bias is not None:
            gates = tf.nn.bias_add(gates, self._bias)
        i, j, f, o = tf.split(gates, 4, 1)
        if self._layer_norm:
            i, j, f, o = (self._norm(g, name) for g, name in zip((i, j, f, o), _GATES))
        g = self._activation(j)
        if not isinstance(self._keep_prob, float) or self._keep_prob < 1:
            g = tf.nn.dropout(g, rate=1 - self._keep_prob, seed=self._seed)
        new_c = c * tf.sigmoid(f + self._forget_bias) + tf.sigmoid(i) * g
        if self._layer_norm:
            new_c = self._norm(new_c, "state")
        new_h = self._activation(new_c) * tf.sigmoid(o)
        return new_h, _rnn_cell.LSTMStateTuple(new_c, new_h)
