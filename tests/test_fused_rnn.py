"""The adapter's fused recurrent layers on a host (npu_bridge_compat.fused.rnn) against hand-unrolled NumPy
references of the Ascend formulas: values in eager and graph mode, masking, both directions, host-only options,
gradients, and the adapter's variable names, shapes and checkpoint layout."""

import fused_reference as ref
import numpy as np
import pytest
import tensorflow as tf

from npu_bridge_compat import NpuOptionValueError
from npu_bridge_compat.compat import tf1_keras_api
from npu_bridge_compat.fused.rnn import (
    DynamicAUGRU,
    DynamicGRUV2,
    DynamicRNN,
    basic_lstm_cell,
    gru_steps,
    npu_dynamic_rnn,
)

v1 = tf.compat.v1
T, B, I, H = 5, 3, 4, 6  # noqa: E741 - time, batch, input and hidden sizes, as the kernels name them
RNG = np.random.RandomState(7)
X = RNG.randn(T, B, I).astype(np.float32)
W = (RNG.randn(I + H, 4 * H) * 0.4).astype(np.float32)
BIAS = (RNG.randn(4 * H) * 0.4).astype(np.float32)
LSTM_NAMES = ("y", "output_h", "output_c", "i", "j", "f", "o", "tanhc")


def short_name(variable) -> str:
    """dynamic_rnn/dynamicrnn/w:0 -> dynamicrnn/w"""
    return variable.name.split("/", 1)[1].split(":")[0]


def run_layer(mode, make_layer, values, *args, **kwargs):
    """Calls the layer with its variables set to `values` (short name -> array), eagerly or in a TF1 graph and
    session; returns the layer and its outputs as NumPy arrays."""
    if mode == "eager":
        layer = make_layer()
        layer(*args, **kwargs)
        for variable in layer.variables:
            if short_name(variable) in values:
                variable.assign(values[short_name(variable)])
        return layer, [t.numpy() for t in layer(*args, **kwargs)]
    with tf.Graph().as_default():
        layer = make_layer()
        outputs = layer(*args, **kwargs)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            for variable in layer.variables:
                if short_name(variable) in values:
                    variable.load(values[short_name(variable)], sess)
            return layer, sess.run(list(outputs))


def assert_lstm(outputs, expected, gates_inside_only=False, atol=2e-5):
    for name, value in zip(LSTM_NAMES, outputs):
        want = expected[name]
        if gates_inside_only and name not in ("y", "output_h", "output_c"):
            inside = expected["inside"][..., None]
            value, want = value * inside, want * inside
        np.testing.assert_allclose(value, want, atol=atol, err_msg=name)


@pytest.mark.starts_processes
@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_dynamic_rnn_with_forget_bias_equals_a_hand_unrolled_lstm(mode):
    layer, outputs = run_layer(
        mode,
        lambda: DynamicRNN(hidden_size=H, dtype=tf.float32, forget_bias=1.0),
        {"dynamicrnn/w": W, "dynamicrnn/b": BIAS},
        X,
    )
    zeros = np.zeros((B, H))
    assert_lstm(outputs, ref.lstm(X, W, BIAS, zeros, zeros, forget_bias=1.0))
    assert [o.shape for o in outputs] == [(T, B, H)] * 8
    assert (layer.forget_bias, layer.cell_type, layer.direction) == (1.0, "LSTM", "UNIDIRECTIONAL")


@pytest.mark.starts_processes
@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_seq_length_zeroes_y_and_holds_the_state_like_the_ascend_kernel(mode):
    lengths = np.array([T, 2, 0], np.int32)
    init_h, init_c = (RNG.randn(1, B, H).astype(np.float32) for _ in range(2))
    _, outputs = run_layer(
        mode,
        lambda: DynamicRNN(H, tf.float32, forget_bias=0.5),
        {"dynamicrnn/w": W, "dynamicrnn/b": BIAS},
        X,
        seq_length=lengths,
        init_h=init_h,
        init_c=init_c,
    )
    expected = ref.lstm(X, W, BIAS, init_h[0], init_c[0], lengths, forget_bias=0.5)
    assert_lstm(outputs, expected, gates_inside_only=True)
    y, output_h = outputs[:2]
    assert not y[2:, 1].any() and not y[:, 2].any()
    np.testing.assert_allclose(output_h[-1, 2], init_h[0, 2])  # an empty sequence keeps its initial state


@pytest.mark.starts_processes
@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_bidirectional_runs_each_sequence_forward_and_from_its_end(mode):
    weights = np.stack([W, (RNG.randn(I + H, 4 * H) * 0.4).astype(np.float32)])
    biases = np.stack([BIAS, (RNG.randn(4 * H) * 0.4).astype(np.float32)])
    lengths = np.array([T, 3, 1], np.int32)
    init = RNG.randn(2, B, H).astype(np.float32)
    _, outputs = run_layer(
        mode,
        lambda: DynamicRNN(H, tf.float32, direction="BIDIRECTIONAL", forget_bias=1.0),
        {"dynamicrnn/w": weights, "dynamicrnn/b": biases},
        X,
        seq_length=lengths,
        init_h=init,
        init_c=init,
    )
    assert [o.shape for o in outputs] == [(2, T, B, H)] * 8
    for direction in (0, 1):
        expected = ref.lstm(
            X,
            weights[direction],
            biases[direction],
            init[direction],
            init[direction],
            lengths,
            forget_bias=1.0,
            reverse=direction == 1,
        )
        assert_lstm([o[direction] for o in outputs], expected, gates_inside_only=True)


def test_host_only_options_projection_peephole_clip_batch_major():
    layer = DynamicRNN(
        H, tf.float32, direction="BIDIRECTIONAL", use_peephole=True, cell_clip=0.3, num_proj=4, time_major=False
    )
    batch_major = np.transpose(X, [1, 0, 2])
    layer(batch_major)
    values = {short_name(v): RNG.randn(*v.shape).astype(np.float32) * 0.4 for v in layer.trainable_variables}
    for variable in layer.trainable_variables:
        variable.assign(values[short_name(variable)])
    outputs = [o.numpy() for o in layer(batch_major, seq_length=[T, 4, 2])]
    assert [o.shape for o in outputs] == [(2, B, T, 4)] + [(2, B, T, H)] * 7
    for direction in (0, 1):
        expected = ref.lstm(
            X,
            values["dynamicrnn/w"][direction],
            values["dynamicrnn/b"][direction],
            np.zeros((B, H)),
            np.zeros((B, H)),
            [T, 4, 2],
            cell_clip=0.3,
            reverse=direction == 1,
            peephole=[values[f"dynamicrnn/{n}"][direction] for n in ("wci", "wcf", "wco")],
        )
        expected["y"] = expected["y"] @ values["dynamicrnn/project"][direction]
        time_major = [np.transpose(o[direction], [1, 0, 2]) for o in outputs]
        assert_lstm(time_major, expected, gates_inside_only=True)
    assert np.abs(outputs[2]).max() <= 0.3 + 1e-6


def test_dynamic_rnn_gradients_match_finite_differences():
    layer = DynamicRNN(3, tf.float32, forget_bias=1.0)
    x = tf.constant(RNG.randn(3, 2, 2).astype(np.float32))
    weight = tf.constant(RNG.randn(5, 12).astype(np.float32) * 0.5)
    bias = tf.constant(RNG.randn(12).astype(np.float32) * 0.5)
    projection = tf.constant(RNG.randn(3, 2, 3).astype(np.float32))

    def loss(x, weight, bias):
        out = layer(x, seq_length=[3, 2], weight=weight, bias=bias)
        return tf.reduce_sum(out.y * projection) + tf.reduce_sum(out.output_c[-1] * projection[0])

    theoretical, numerical = tf.test.compute_gradient(loss, [x, weight, bias], delta=1e-2)
    for analytic, finite in zip(theoretical, numerical):
        np.testing.assert_allclose(analytic, finite, atol=2e-2)
        assert np.abs(analytic).max() > 1e-3


@pytest.mark.starts_processes
def test_checkpoints_move_between_the_npu_layout_and_the_host(tmp_path):
    expected_layout = {
        "dynamic_rnn/dynamicrnn/w": [I + H, 4 * H],
        "dynamic_rnn/dynamicrnn/b": [4 * H],
        "dynamic_rnn/dynamicbase/seq_length": [B],
    }
    npu_checkpoint = str(tmp_path / "npu" / "model.ckpt")
    with tf.Graph().as_default():  # what the adapter's layer writes: plain variables under its names
        for name, value in (
            ("dynamic_rnn/dynamicrnn/w", W),
            ("dynamic_rnn/dynamicrnn/b", BIAS),
            ("dynamic_rnn/dynamicbase/seq_length", np.full(B, T, np.int32)),
        ):
            v1.get_variable(name, initializer=value)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            v1.train.Saver().save(sess, npu_checkpoint)
    host_checkpoint = str(tmp_path / "host" / "model.ckpt")
    with tf.Graph().as_default():
        layer = DynamicRNN(H, tf.float32, forget_bias=1.0)
        outputs = layer(tf.constant(X))
        assert {v.name[:-2]: v.shape.as_list() for v in layer.variables} == expected_layout
        saver = v1.train.Saver()
        with v1.Session() as sess:
            saver.restore(sess, npu_checkpoint)
            restored = sess.run(list(outputs))
            saver.save(sess, host_checkpoint)
    zeros = np.zeros((B, H))
    assert_lstm(restored, ref.lstm(X, W, BIAS, zeros, zeros, forget_bias=1.0))
    reader = tf.train.load_checkpoint(host_checkpoint)
    assert reader.get_variable_to_shape_map() == expected_layout
    np.testing.assert_array_equal(reader.get_tensor("dynamic_rnn/dynamicrnn/w"), W)


def test_variable_layouts_of_every_layer():
    with tf.Graph().as_default():
        x = tf.constant(X)
        layers = [
            DynamicRNN(H, tf.float32, direction="BIDIRECTIONAL"),
            DynamicGRUV2(H, tf.float32),
            DynamicAUGRU(H, tf.float16),
        ]
        layers[0](x)
        layers[1](x)
        layers[2](x, tf.zeros([T, B]))
        layout = {
            v.name[:-2]: (v.shape.as_list(), v.dtype.base_dtype.name, v.trainable)
            for layer in layers
            for v in layer.variables
        }
    assert layout == {
        "dynamic_rnn/dynamicrnn/w": ([2, I + H, 4 * H], "float32", True),
        "dynamic_rnn/dynamicrnn/b": ([2, 4 * H], "float32", True),
        "dynamic_rnn/dynamicbase/seq_length": ([B], "int32", False),
        "dynamic_gruv2/dynamicgruv2/weight_input": ([I, 3 * H], "float32", True),
        "dynamic_gruv2/dynamicgruv2/weight_hidden": ([H, 3 * H], "float32", True),
        "dynamic_gruv2/dynamicgruv2/bias_input": ([3 * H], "float32", True),
        "dynamic_gruv2/dynamicgruv2/bias_hidden": ([3 * H], "float32", True),
        "dynamic_gruv2/dynamicbase/seq_length": ([B], "int32", False),
        "dynamic_augru/dynamicaugru/weight_input": ([I, 3 * H], "float16", True),
        "dynamic_augru/dynamicaugru/weight_hidden": ([H, 3 * H], "float16", True),
        "dynamic_augru/dynamicaugru/bias_input": ([3 * H], "float16", True),
        "dynamic_augru/dynamicaugru/bias_hidden": ([3 * H], "float16", True),
        "dynamic_augru/dynamicbase/seq_length": ([B], "int32", False),
    }


def gru_values():
    return {
        "weight_input": (RNG.randn(I, 3 * H) * 0.4).astype(np.float32),
        "weight_hidden": (RNG.randn(H, 3 * H) * 0.4).astype(np.float32),
        "bias_input": (RNG.randn(3 * H) * 0.4).astype(np.float32),
        "bias_hidden": (RNG.randn(3 * H) * 0.4).astype(np.float32),
    }


@pytest.mark.starts_processes
@pytest.mark.parametrize(
    "mode,gate_order,reset_after", [("eager", "zrh", True), ("eager", "rzh", False), ("graph", "rzh", True)]
)
def test_dynamic_gru_v2_equals_a_hand_unrolled_gru(mode, gate_order, reset_after):
    values = gru_values()
    lengths = np.array([T, 2, 4], np.int32)
    init_h = RNG.randn(B, H).astype(np.float32)
    _, outputs = run_layer(
        mode,
        lambda: DynamicGRUV2(H, tf.float32, gate_order=gate_order, reset_after=reset_after),
        {f"dynamicgruv2/{k}": v for k, v in values.items()},
        X,
        seq_length=lengths,
        init_h=init_h,
    )
    expected = ref.gru(X, *values.values(), init_h, lengths, gate_order=gate_order, reset_after=reset_after)
    for name, value in zip(("y", "output_h", "update", "reset", "new", "hidden_new"), outputs):
        inside = 1 if name in ("y", "output_h") else expected["inside"][..., None]
        np.testing.assert_allclose(value * inside, expected[name] * inside, atol=2e-5, err_msg=name)


def test_dynamic_augru_scales_the_update_gate_by_attention_batch_major():
    values = gru_values()
    attention = RNG.uniform(size=(T, B)).astype(np.float32)
    layer = DynamicAUGRU(H, tf.float32, time_major=False)
    batch_major = np.transpose(X, [1, 0, 2])
    layer(batch_major, attention.T)
    for variable in layer.variables:
        if short_name(variable) != "dynamicbase/seq_length":
            variable.assign(values[short_name(variable).split("/")[1]])
    outputs = [np.transpose(o.numpy(), [1, 0, 2]) for o in layer(batch_major, attention.T, seq_length=[T, 3, 1])]
    expected = ref.gru(X, *values.values(), np.zeros((B, H)), [T, 3, 1], attention)
    for name, value in zip(("y", "output_h", "update", "update_att", "reset", "new", "hidden_new"), outputs):
        inside = 1 if name in ("y", "output_h") else expected["inside"][..., None]
        np.testing.assert_allclose(value * inside, expected[name] * inside, atol=2e-5, err_msg=name)


@pytest.mark.parametrize("reset_after", [True, False])
def test_gru_and_augru_gradients_match_finite_differences(reset_after):
    rng = np.random.RandomState(3)
    x, wi, wh = rng.randn(3, 2, 2), rng.randn(2, 6) * 0.5, rng.randn(2, 6) * 0.5
    bi, bh, att, h0 = rng.randn(6) * 0.5, rng.randn(6) * 0.5, rng.uniform(size=(3, 2)), rng.randn(2, 2)
    projection = tf.constant(rng.randn(3, 2, 2))

    def loss(x, wi, wh, bi, bh, att, h0):
        out = gru_steps(x, wi, wh, bi, bh, h0, tf.constant([3, 2]), att, reset_after=reset_after)
        return tf.reduce_sum(out.y * projection) + tf.reduce_sum(out.output_h[-1])

    arguments = [tf.constant(a) for a in (x, wi, wh, bi, bh, att, h0)]
    theoretical, numerical = tf.test.compute_gradient(loss, arguments)
    for analytic, finite in zip(theoretical, numerical):
        np.testing.assert_allclose(analytic, finite, atol=1e-6)


@pytest.mark.starts_processes
def test_basic_lstm_cell_is_one_step_of_the_lstm_in_graphs_only():
    h0, c0 = RNG.randn(B, H).astype(np.float32), RNG.randn(B, H).astype(np.float32)
    with pytest.raises(RuntimeError, match=r"tf.basic_lstm_cell\(\) is not compatible with eager execution"):
        basic_lstm_cell(X[0], h0, c0, W, BIAS, 1.0, 1.0, True, "tanh")
    with tf.Graph().as_default(), v1.Session() as sess:
        outputs = sess.run(
            basic_lstm_cell(
                X[0], h0, c0, W, BIAS, keep_prob=1.0, forget_bias=1.0, state_is_tuple=True, activation="tanh"
            )
        )
    expected = ref.lstm(X[:1], W, BIAS, h0, c0, forget_bias=1.0)
    for name, value in zip(("output_c", "output_h", "i", "j", "f", "o", "tanhc"), outputs):
        np.testing.assert_allclose(value, expected[name][0], atol=2e-5, err_msg=name)

    step = tf.function(lambda x, h: basic_lstm_cell(x, h, c0, W, BIAS, 1.0, 1.0, True, "tanh")[1])
    theoretical, numerical = tf.test.compute_gradient(step, [tf.constant(X[0]), tf.constant(h0)], delta=1e-2)
    for analytic, finite in zip(theoretical, numerical):
        np.testing.assert_allclose(analytic, finite, atol=1e-2)


@pytest.mark.starts_processes
@pytest.mark.filterwarnings("ignore:`tf.nn.rnn_cell.BasicLSTMCell` is deprecated")
def test_npu_dynamic_rnn_is_tensorflows_rnn_over_time_major_inputs():
    with tf.Graph().as_default(), v1.Session() as sess:
        cell = tf1_keras_api("nn.rnn_cell").BasicLSTMCell(H)
        outputs, state = npu_dynamic_rnn(cell, tf.constant(X), dtype=tf.float32, sequence_length=[T, 2, 4])
        reference, reference_state = v1.nn.dynamic_rnn(
            cell, tf.constant(X), dtype=tf.float32, time_major=True, sequence_length=[T, 2, 4], scope="rnn"
        )
        names = sorted(v.name for v in v1.global_variables())
        sess.run(v1.global_variables_initializer())
        ours, theirs = sess.run([(outputs, state), (reference, reference_state)])
    assert names == ["rnn/basic_lstm_cell/bias:0", "rnn/basic_lstm_cell/kernel:0"] and ours[0].shape == (T, B, H)
    for mine, expected in zip(tf.nest.flatten(ours), tf.nest.flatten(theirs)):
        np.testing.assert_allclose(mine, expected, atol=1e-5)


@pytest.mark.parametrize(
    "make,message",
    [
        (
            lambda: DynamicRNN(H, tf.float32, direction="BACKWARD"),
            "Invalid direction: BACKWARD, expecting UNIDIRECTIONAL or BIDIRECTIONAL",
        ),
        (lambda: DynamicGRUV2(H, tf.float32, direction="BIDIRECTIONAL"), "DynamicGRUV2 runs in one direction"),
        (lambda: DynamicRNN(H, tf.float32, cell_type="GRU"), "cell_type must be 'LSTM'"),
        (lambda: DynamicRNN(H, tf.float32, cell_depth=2), "cell_depth must be 1: the Ascend kernel computes one layer"),
        (lambda: DynamicAUGRU(H, tf.float32, keep_prob=0.5), "keep_prob must be 1.0: the Ascend kernel has no dropout"),
        (lambda: DynamicRNN(H, tf.float32, activation="relu"), "activation must be 'tanh'"),
        (lambda: DynamicGRUV2(H, tf.float32, gate_order="hzr"), "gate_order must be 'zrh' or 'rzh', got 'hzr'"),
        (lambda: DynamicRNN(0, tf.float32), "hidden_size must be an integer >= 1, got 0"),
        (lambda: DynamicRNN(H, tf.int32), "dtype must be tf.float16 or tf.float32"),
    ],
)
def test_bad_arguments_are_named_when_the_layer_is_created(make, message):
    with pytest.raises(NpuOptionValueError, match=message):
        make()


def test_unknown_input_size_is_refused_as_in_the_adapter():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"Expected input_shape\[2\] to be known"):
            DynamicRNN(H, tf.float32)(v1.placeholder(tf.float32, [T, B, None]))
