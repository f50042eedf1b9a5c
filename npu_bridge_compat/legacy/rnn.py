"""The adapter's fused RNN layers, where TensorFlow has the same computation."""

from __future__ import annotations

import tensorflow as tf

from npu_bridge_compat.errors import device_only
from npu_bridge_compat.errors import NpuOptionValueError


class DynamicRNN:
    """Ascend's fused time-major LSTM: `DynamicRNN(hidden_size, dtype)(x, seq_length)` returns
    (y, output_h, output_c, i, j, f, o, tanhc); the gate outputs are the NPU kernel's internals and come back
    as None on a host."""

    def __init__(self, hidden_size: int, dtype=tf.float32, cell_type: str = "LSTM", direction: str = "UNIDIRECTIONAL",
                 cell_depth: int = 1, use_peephole: bool = False, keep_prob: float = 1.0, cell_clip: float = -1.0,
                 num_proj: int = 0, time_major: bool = True, activation: str = "tanh", forget_bias: float = 0.0,
                 is_training: bool = True) -> None:
        if cell_type != "LSTM" or direction != "UNIDIRECTIONAL" or use_peephole or num_proj or forget_bias:
            raise NpuOptionValueError("DynamicRNN on a host supports cell_type='LSTM', direction='UNIDIRECTIONAL', "
                                      "no peephole, no projection and forget_bias=0")
        self._time_major = time_major
        self._layer = tf.keras.layers.LSTM(hidden_size, return_sequences=True, return_state=True, dtype=dtype,
                                           unit_forget_bias=False, activation=activation,
                                           dropout=1.0 - keep_prob if is_training else 0.0)

    def __call__(self, x, seq_length=None, init_h=None, init_c=None):
        inputs = tf.transpose(x, [1, 0, 2]) if self._time_major else x
        mask = tf.sequence_mask(seq_length, tf.shape(inputs)[1]) if seq_length is not None else None
        initial = [init_h[0], init_c[0]] if init_h is not None and init_c is not None else None
        y, h, c = self._layer(inputs, mask=mask, initial_state=initial)
        if self._time_major:
            y = tf.transpose(y, [1, 0, 2])
        return y, h[None], c[None], None, None, None, None, None


DynamicGRUV2 = device_only("npu_dynamic_rnn.DynamicGRUV2")
DynamicAUGRU = device_only("npu_dynamic_rnn.DynamicAUGRU")


def npu_dynamic_rnn(cell, inputs, initial_state=None, dtype=None, sequence_length=None, scope=None):
    """npu_rnn.npu_dynamic_rnn: `tf.compat.v1.nn.dynamic_rnn` with time-major inputs, as the NPU takes them."""
    return tf.compat.v1.nn.dynamic_rnn(cell, inputs, sequence_length=sequence_length, initial_state=initial_state,
                                       dtype=dtype, time_major=True, scope=scope)
