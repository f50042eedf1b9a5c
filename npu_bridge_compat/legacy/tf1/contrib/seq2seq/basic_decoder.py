"""`tf.contrib.seq2seq.BasicDecoder`: an RNN cell, an optional output layer and a helper, one step at a time."""

from __future__ import annotations

import collections

import tensorflow as tf

from npu_bridge_compat.legacy.tf1.contrib.seq2seq.decoder import Decoder
from npu_bridge_compat.legacy.tf1.contrib.seq2seq.helper import Helper

__all__ = ["BasicDecoder", "BasicDecoderOutput"]


class BasicDecoderOutput(collections.namedtuple("BasicDecoderOutput", ("rnn_output", "sample_id"))):
    pass


def assert_like_rnncell(name: str, cell) -> None:
    """TypeError unless `cell` has an RNN cell's interface (output_size, state_size, zero_state, callable)."""
    missing = [
        what
        for what, present in (
            ("'output_size' property is missing", hasattr(cell, "output_size")),
            ("'state_size' property is missing", hasattr(cell, "state_size")),
            ("either 'zero_state' or 'get_initial_state' method is required", hasattr(cell, "zero_state")),
            ("is not callable", callable(cell)),
        )
        if not present
    ]
    if missing:
        raise TypeError(f"The argument {name!r} ({cell}) is not an RNNCell: {', '.join(missing)}.")


def output_layer_size(output_layer, cell_output_size):
    """The per-entry output shape(s) of `output_layer` applied to outputs of `cell_output_size`."""
    if output_layer is None:
        return cell_output_size
    with_batch = tf.nest.map_structure(lambda size: tf.TensorShape([None]).concatenate(size), cell_output_size)
    shapes = output_layer.compute_output_shape(with_batch)
    return tf.nest.map_structure(lambda shape: tf.TensorShape(shape)[1:], shapes)


class BasicDecoder(Decoder):
    """Each step runs `cell`, then `output_layer` (when given) on its output, and asks `helper` for the sample
    ids, the finished flags and the next inputs; outputs are `BasicDecoderOutput(rnn_output, sample_id)`."""

    def __init__(self, cell, helper: Helper, initial_state, output_layer=None) -> None:
        assert_like_rnncell("cell", cell)
        if not isinstance(helper, Helper):
            raise TypeError(f"helper must be a Helper, received: {type(helper)}")
        if output_layer is not None and not callable(output_layer):
            raise TypeError(f"output_layer must be a Layer, received: {type(output_layer)}")
        self._cell = cell
        self._helper = helper
        self._initial_state = initial_state
        self._output_layer = output_layer

    @property
    def batch_size(self):
        return self._helper.batch_size

    def _rnn_output_size(self):
        return output_layer_size(self._output_layer, self._cell.output_size)

    @property
    def output_size(self) -> BasicDecoderOutput:
        return BasicDecoderOutput(rnn_output=self._rnn_output_size(), sample_id=self._helper.sample_ids_shape)

    @property
    def output_dtype(self) -> BasicDecoderOutput:
        dtype = tf.nest.flatten(self._initial_state)[0].dtype
        return BasicDecoderOutput(
            tf.nest.map_structure(lambda _: dtype, self._rnn_output_size()), self._helper.sample_ids_dtype
        )

    def initialize(self, name=None):
        return (*self._helper.initialize(), self._initial_state)

    def step(self, time, inputs, state, name=None):
        with tf.name_scope(name or "BasicDecoderStep"):
            cell_outputs, cell_state = self._cell(inputs, state)
            if self._output_layer is not None:
                cell_outputs = self._output_layer(cell_outputs)
            sample_ids = self._helper.sample(time=time, outputs=cell_outputs, state=cell_state)
            finished, next_inputs, next_state = self._helper.next_inputs(
                time=time, outputs=cell_outputs, state=cell_state, sample_ids=sample_ids
            )
        return BasicDecoderOutput(cell_outputs, sample_ids), next_state, next_inputs, finished
