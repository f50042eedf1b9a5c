"""`tf.contrib.rnn`'s stacked bidirectional RNNs, on tf.compat.v1.nn's bidirectional RNNs.

Variables are named as TF 1.15 named them (`stack_bidirectional_rnn/cell_<i>/bidirectional_rnn/fw|bw/...`), so
TF 1.15 checkpoints restore.
"""

from __future__ import annotations

import tensorflow as tf

__all__ = [
    "Linear",
    "like_rnncell",
    "stack_bidirectional_dynamic_rnn",
    "stack_bidirectional_rnn",
]

v1 = tf.compat.v1


def _check(cells_fw, cells_bw, initial_states_fw, initial_states_bw) -> None:
    if not cells_fw:
        raise ValueError("Must specify at least one fw cell for BidirectionalRNN.")
    if not cells_bw:
        raise ValueError("Must specify at least one bw cell for BidirectionalRNN.")
    if not isinstance(cells_fw, list) or not isinstance(cells_bw, list):
        raise ValueError("cells_fw and cells_bw must be lists of RNN cells.")
    if len(cells_fw) != len(cells_bw):
        raise ValueError(f"Forward and Backward cells must have the same depth ({len(cells_fw)} != {len(cells_bw)}).")
    for states, cells in ((initial_states_fw, cells_fw), (initial_states_bw, cells_bw)):
        if states is not None and (not isinstance(states, list) or len(states) != len(cells)):
            raise ValueError("initial_states must be a list of state tensors (one per cell).")


def _stack(layer, cells_fw, cells_bw, inputs, initial_states_fw, initial_states_bw, scope):
    """Run `layer(cell_fw, cell_bw, inputs, initial_fw, initial_bw)` cell pair by cell pair, each on the last one's
    outputs; returns the last outputs and the forward and backward final states of every layer."""
    _check(cells_fw, cells_bw, initial_states_fw, initial_states_bw)
    states_fw, states_bw = [], []
    with v1.variable_scope(scope or "stack_bidirectional_rnn"):
        for index, (cell_fw, cell_bw) in enumerate(zip(cells_fw, cells_bw)):
            with v1.variable_scope(f"cell_{index}"):
                inputs, state_fw, state_bw = layer(
                    cell_fw,
                    cell_bw,
                    inputs,
                    initial_states_fw[index] if initial_states_fw else None,
                    initial_states_bw[index] if initial_states_bw else None,
                )
            states_fw.append(state_fw)
            states_bw.append(state_bw)
    return inputs, tuple(states_fw), tuple(states_bw)


def stack_bidirectional_dynamic_rnn(
    cells_fw,
    cells_bw,
    inputs,
    initial_states_fw=None,
    initial_states_bw=None,
    dtype=None,
    sequence_length=None,
    parallel_iterations=None,
    time_major=False,
    scope=None,
    swap_memory=False,
):
    """Bidirectional dynamic RNN layers stacked: each layer reads the concatenated outputs of the one below.

    Returns (outputs [batch, time, 2 * units] (time-major when `time_major`), forward states, backward states).
    """

    def layer(cell_fw, cell_bw, layer_inputs, initial_fw, initial_bw):
        (output_fw, output_bw), (state_fw, state_bw) = v1.nn.bidirectional_dynamic_rnn(
            cell_fw,
            cell_bw,
            layer_inputs,
            sequence_length=sequence_length,
            initial_state_fw=initial_fw,
            initial_state_bw=initial_bw,
            dtype=dtype,
            parallel_iterations=parallel_iterations,
            swap_memory=swap_memory,
            time_major=time_major,
        )
        return tf.concat([output_fw, output_bw], 2), state_fw, state_bw

    return _stack(layer, cells_fw, cells_bw, inputs, initial_states_fw, initial_states_bw, scope)


def stack_bidirectional_rnn(
    cells_fw,
    cells_bw,
    inputs,
    initial_states_fw=None,
    initial_states_bw=None,
    dtype=None,
    sequence_length=None,
    scope=None,
):
    """`stack_bidirectional_dynamic_rnn` over a list of per-timestep inputs (static RNNs)."""

    def layer(cell_fw, cell_bw, layer_inputs, initial_fw, initial_bw):
        outputs, state_fw, state_bw = v1.nn.static_bidirectional_rnn(
            cell_fw,
            cell_bw,
            layer_inputs,
            initial_state_fw=initial_fw,
            initial_state_bw=initial_bw,
            dtype=dtype,
            sequence_length=sequence_length,
        )
        return outputs, state_fw, state_bw

    if not inputs:
        raise ValueError("inputs must not be empty")
    return _stack(layer, cells_fw, cells_bw, inputs, initial_states_fw, initial_states_bw, scope)


def like_rnncell(cell) -> bool:
    """Whether `cell` has an RNN cell's interface (TF 1.15's private `rnn_cell_impl._like_rnncell`, which custom
    dynamic RNNs call; TensorFlow 2 keeps only `assert_like_rnncell`)."""
    return (
        hasattr(cell, "output_size")
        and hasattr(cell, "state_size")
        and (hasattr(cell, "get_initial_state") or hasattr(cell, "zero_state"))
        and callable(cell)
    )


class Linear:
    """TF 1.15's `_Linear` (rnn_cell_impl, re-exported by contrib's rnn_cell modules), which custom RNN cells of
    ported scripts build on: `Linear(args, output_size, build_bias)` makes a kernel [sum of the args' widths,
    output_size] and a bias in the current variable scope, named `kernel` and `bias` as TF 1.15 named them (its
    checkpoints restore); calling it maps the concatenated 2-D args."""

    def __init__(
        self, args, output_size: int, build_bias: bool, bias_initializer=None, kernel_initializer=None
    ) -> None:
        if args is None or (isinstance(args, (list, tuple)) and not args):
            raise ValueError("`args` must be specified")
        self._is_sequence = isinstance(args, (list, tuple))
        args = list(args) if self._is_sequence else [args]
        widths = []
        for arg in args:
            shape = arg.shape
            if shape.rank != 2:
                raise ValueError(f"linear is expecting 2D arguments: {[a.shape for a in args]}")
            if shape[1] is None:
                raise ValueError(f"linear expects shape[1] to be provided for shape {shape}, but saw None")
            widths.append(int(shape[1]))
        dtype = args[0].dtype
        self._build_bias = build_bias
        self._weights = v1.get_variable(
            "kernel", [sum(widths), output_size], dtype=dtype, initializer=kernel_initializer
        )
        if build_bias:
            initializer = bias_initializer or v1.constant_initializer(0.0, dtype=dtype)
            self._biases = v1.get_variable("bias", [output_size], dtype=dtype, initializer=initializer)

    def __call__(self, args):
        args = list(args) if self._is_sequence else [args]
        inputs = args[0] if len(args) == 1 else tf.concat(args, 1)
        result = tf.matmul(inputs, self._weights)
        return tf.nn.bias_add(result, self._biases) if self._build_bias else result
