"""contrib.cudnn_rnn's layers on canonical weights, contrib.rnn.LayerNormBasicLSTMCell, contrib.metrics'
confusion_matrix and tensorflow.python.keras.utils.multi_gpu_model as TF 1.15 had them."""

import numpy as np
import pytest
import tensorflow as tf

from npu_bridge_compat import compat
from npu_bridge_compat.legacy import install_aliases
from npu_bridge_compat.legacy.tf1 import keras_utils
from npu_bridge_compat.legacy.tf1.contrib import cudnn_rnn
from npu_bridge_compat.legacy.tf1.contrib.rnn_cells import LayerNormBasicLSTMCell

v1 = tf.compat.v1
rnn_cell = compat.tf1_keras_api("nn.rnn_cell")
INPUTS = np.random.RandomState(0).randn(4, 2, 3).astype(np.float32)  # [time, batch, depth]


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def numpy_lstm(inputs, kernel, bias, forget_bias=0.0):
    """The canonical LSTM: gates i, j, f, o from [x, h] · kernel + bias."""
    units = kernel.shape[1] // 4
    h = c = np.zeros((inputs.shape[1], units), np.float32)
    outputs = []
    for x in inputs:
        i, j, f, o = np.split(np.concatenate([x, h], 1) @ kernel + bias, 4, axis=1)
        c = c * sigmoid(f + forget_bias) + sigmoid(i) * np.tanh(j)
        h = np.tanh(c) * sigmoid(o)
        outputs.append(h)
    return np.stack(outputs), h, c


def run_graph(build):
    with tf.Graph().as_default():
        results = build()
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            return session.run(results), {v.op.name: session.run(v) for v in v1.global_variables()}


def test_cudnn_lstm_keeps_tf115_canonical_names_and_computes_the_lstm():
    (outputs, (h, c)), variables = run_graph(lambda: cudnn_rnn.CudnnLSTM(2, 5)(INPUTS))
    assert sorted(variables) == [
        f"cudnn_lstm/rnn/multi_rnn_cell/cell_{layer}/cudnn_compatible_lstm_cell/{name}"
        for layer in (0, 1)
        for name in ("bias", "kernel")
    ]
    prefix = "cudnn_lstm/rnn/multi_rnn_cell/cell_{}/cudnn_compatible_lstm_cell/"
    first, _, _ = numpy_lstm(INPUTS, variables[prefix.format(0) + "kernel"], variables[prefix.format(0) + "bias"])
    expected, last_h, last_c = numpy_lstm(
        first, variables[prefix.format(1) + "kernel"], variables[prefix.format(1) + "bias"]
    )
    np.testing.assert_allclose(outputs, expected, rtol=1e-5, atol=1e-6)
    assert h.shape == c.shape == (2, 2, 5)  # [num_layers * num_dirs, batch, units]
    np.testing.assert_allclose(h[1], last_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c[1], last_c, rtol=1e-5, atol=1e-6)


def test_a_cudnn_checkpoint_restores_into_the_compatible_cells(tmp_path):
    """TF 1.15's documented way to run a CudnnLSTM checkpoint without cuDNN: CudnnCompatibleLSTMCells under the
    layer's scope."""
    with tf.Graph().as_default():
        outputs, _ = cudnn_rnn.CudnnLSTM(1, 4, direction=cudnn_rnn.CUDNN_RNN_BIDIRECTION)(INPUTS)
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            written = session.run(outputs)
            path = v1.train.Saver().save(session, str(tmp_path / "cudnn.ckpt"))
    assert written.shape == (4, 2, 8)
    with tf.Graph().as_default():
        with v1.variable_scope("cudnn_lstm/stack_bidirectional_rnn/cell_0"):
            (forward, backward), _ = v1.nn.bidirectional_dynamic_rnn(
                cudnn_rnn.CudnnCompatibleLSTMCell(4),
                cudnn_rnn.CudnnCompatibleLSTMCell(4),
                tf.constant(INPUTS),
                dtype=tf.float32,
                time_major=True,
            )
        with v1.Session() as session:
            v1.train.Saver().restore(session, path)
            restored = session.run(tf.concat([forward, backward], 2))
    np.testing.assert_allclose(restored, written, rtol=1e-6)


def test_cudnn_gru_computes_cudnns_gru():
    (outputs, (h,)), variables = run_graph(lambda: cudnn_rnn.CudnnGRU(1, 3)(INPUTS))
    prefix = "cudnn_gru/rnn/multi_rnn_cell/cell_0/cudnn_compatible_gru_cell/"
    state = np.zeros((2, 3), np.float32)
    for x, output in zip(INPUTS, outputs):
        gates = sigmoid(
            np.concatenate([x, state], 1) @ variables[prefix + "gates/kernel"] + variables[prefix + "gates/bias"]
        )
        reset, update = np.split(gates, 2, axis=1)
        candidate = np.tanh(
            x @ variables[prefix + "candidate/input_projection/kernel"]
            + variables[prefix + "candidate/input_projection/bias"]
            + reset
            * (
                state @ variables[prefix + "candidate/hidden_projection/kernel"]
                + variables[prefix + "candidate/hidden_projection/bias"]
            )
        )
        state = update * state + (1 - update) * candidate
        np.testing.assert_allclose(output, state, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h[0], state, rtol=1e-5, atol=1e-6)


def test_cudnn_layers_check_their_arguments():
    with pytest.raises(ValueError, match="Invalid direction: sideways"):
        cudnn_rnn.CudnnLSTM(1, 4, direction="sideways")
    with pytest.raises(ValueError, match="expecting 2 tensors"):
        cudnn_rnn.CudnnLSTM(1, 4)(INPUTS, initial_state=(tf.zeros([1, 2, 4]),))
    outputs, (h,) = cudnn_rnn.CudnnRNNTanh(1, 2)(INPUTS.transpose(1, 0, 2), time_major=False)
    assert outputs.shape == (2, 4, 2) and h.shape == (1, 2, 2)


def test_layer_norm_basic_lstm_cell_normalizes_each_gate():
    def build():
        cell = LayerNormBasicLSTMCell(4, forget_bias=1.0)
        return v1.nn.dynamic_rnn(cell, tf.constant(INPUTS), dtype=tf.float32, time_major=True)

    (outputs, state), variables = run_graph(build)
    prefix = "rnn/layer_norm_basic_lstm_cell/"
    assert sorted(variables) == sorted(
        [prefix + "kernel"]
        + [
            prefix + f"{scope}/{name}"
            for scope in ("input", "transform", "forget", "output", "state")
            for name in ("gamma", "beta")
        ]
    )

    def norm(x):
        return (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-12)

    h = c = np.zeros((2, 4), np.float32)
    for x in INPUTS:
        i, j, f, o = (norm(g) for g in np.split(np.concatenate([x, h], 1) @ variables[prefix + "kernel"], 4, axis=1))
        c = norm(c * sigmoid(f + 1.0) + sigmoid(i) * np.tanh(j))
        h = np.tanh(c) * sigmoid(o)
    np.testing.assert_allclose(outputs[-1], h, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(state.c, c, rtol=1e-4, atol=1e-5)


def test_tf1_world_serves_the_cells_and_confusion_matrix():
    install_aliases(tf1=True)
    from tensorflow.contrib import cudnn_rnn as served_cudnn_rnn
    from tensorflow.contrib import metrics, rnn
    from tensorflow.contrib.cudnn_rnn.python.layers import cudnn_rnn as layers_module

    assert rnn.LayerNormBasicLSTMCell is LayerNormBasicLSTMCell
    assert (
        served_cudnn_rnn.CudnnLSTM is cudnn_rnn.CudnnLSTM and layers_module.CUDNN_RNN_UNIDIRECTION == "unidirectional"
    )
    matrix = metrics.confusion_matrix([1, 2, 4], [2, 2, 4], num_classes=5)  # TF 1.15's argument order
    np.testing.assert_array_equal(matrix[1:3, 2], [1, 1])
    assert int(tf.reduce_sum(matrix)) == 3


def test_multi_gpu_model_raises_tf115s_errors():
    with pytest.raises(
        ValueError, match=r"^For multi-gpu usage to be effective, call `multi_gpu_model` with `len\(gpus\) >= 2`"
    ):
        keras_utils.multi_gpu_model(None, gpus=[0])
    gpus = max(2, len(tf.config.list_logical_devices("GPU")) + 1)
    with pytest.raises(
        ValueError, match=rf"^To call `multi_gpu_model` with `gpus={gpus}`, we expect .* Try reducing `gpus`\.$"
    ):
        keras_utils.multi_gpu_model(None, gpus=gpus)
