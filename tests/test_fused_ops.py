"""The adapter's fused optimizer and layer kernels and its Profiler on a host (npu_bridge_compat.fused) against
NumPy references of the Ascend formulas, through the adapter's import paths."""

import contextlib
import glob
import os
import subprocess
import sys
from pathlib import Path

import fused_reference as ref
import numpy as np
import pytest
import tensorflow as tf

from npu_bridge_compat import NpuOptionValueError
from npu_bridge_compat.errors import DeviceOnlyFeatureError, NpuCompatWarning, NpuOptionTypeError
from npu_bridge_compat.legacy import install_aliases

install_aliases()
from npu_bridge.estimator import npu_aicore_ops, npu_ops  # noqa: E402
from npu_bridge.estimator.npu import npu_plugin  # noqa: E402
from npu_bridge.npu_cpu import npu_cpu_ops  # noqa: E402
from npu_bridge.profiler import profiler  # noqa: E402
from npu_bridge.tbe import npu_cube_ops, npu_vector_ops  # noqa: E402

v1 = tf.compat.v1
HERE = Path(__file__).parent
RNG = np.random.RandomState(11)


@contextlib.contextmanager
def in_graph(build):
    """build() in a fresh TF1 graph: yields a session, its variables initialised, and what build returned."""
    with tf.Graph().as_default(), v1.Session() as sess:
        result = build()
        sess.run(v1.global_variables_initializer())
        yield sess, result


# --- optimizers ----------------------------------------------------------------------------------------------


@pytest.mark.starts_processes
def test_lars_and_larsv2_scale_gradients_by_the_trust_ratio():
    weights = [RNG.randn(3, 4).astype(np.float32), RNG.randn(5).astype(np.float32)]
    grads = [RNG.randn(3, 4).astype(np.float32), RNG.randn(5).astype(np.float32)]
    with pytest.raises(RuntimeError, match=r"tf.LARS\(\) is not compatible with eager execution"):
        npu_ops.LARS(weights, grads, 0.01)
    with in_graph(
        lambda: (
            npu_ops.LARS(weights, grads, tf.constant(0.01), hyperpara=0.02),
            npu_ops.LARSV2(weights[0], grads[0], tf.constant(0.01), tf.constant(0.001), use_clip=True),
            npu_ops.LARSV2(weights[0], grads[0], tf.constant(0.01), tf.constant(0.001)),
        )
    ) as (sess, ops):
        lars, clipped, unclipped = sess.run(ops)
    for w, g, got in zip(weights, grads, lars):
        np.testing.assert_allclose(got, ref.lars(w, g, 0.01, hyperpara=0.02), rtol=1e-5)
    np.testing.assert_allclose(unclipped, ref.lars(weights[0], grads[0], 0.01), rtol=1e-5)
    np.testing.assert_allclose(
        clipped, ref.lars(weights[0], grads[0], 0.01, learning_rate=0.001, use_clip=True), rtol=1e-5
    )


@pytest.mark.starts_processes
@pytest.mark.parametrize("decay", [None, 0.01])
def test_fused_adam_updates_the_variables_in_place_over_several_steps(decay):
    grads = RNG.randn(4, 3, 2).astype(np.float32)
    start = RNG.randn(3, 2).astype(np.float32)
    feed = {}

    def build():
        grad = v1.placeholder(tf.float32, [3, 2])
        feed["grad"] = grad
        v, m = (
            v1.get_variable("v", initializer=np.zeros((3, 2), np.float32)),
            v1.get_variable("m", initializer=np.zeros((3, 2), np.float32)),
        )
        var = v1.get_variable("var", initializer=start)
        common = (grad, v, m, var, 0.1, 0.9, 0.1, 0.999, 0.001)
        if decay is None:
            step = npu_ops.adam_apply_one_assign(*common, 1e-6)
        else:
            step = npu_ops.adam_apply_one_with_decay_assign(*common, decay, 1e-6)
        return step, (v, m, var)

    expected = (np.zeros((3, 2)), np.zeros((3, 2)), start)
    with in_graph(build) as (sess, (step, variables)):
        for grad in grads:
            sess.run(step, {feed["grad"]: grad})
            expected = ref.adam_apply_one(grad, *expected, 0.1, 0.9, 0.999, 1e-6, decay or 0.0)
        trained = sess.run(variables)
    for got, want in zip(trained, expected):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_the_assign_kernels_need_variables_and_graphs():
    with pytest.raises(RuntimeError, match=r"tf.adam_apply_one_assign\(\) is not compatible with eager"):
        npu_ops.adam_apply_one_assign(*[tf.ones(2)] * 10)
    with tf.Graph().as_default():
        v = v1.get_variable("v", [2])
        with pytest.raises(
            NpuOptionTypeError,
            match=r"lamb_apply_optimizer_assign writes its results into "
            r"input1, input2: pass the variables themselves.*input2 \(",
        ):
            npu_vector_ops.lamb_apply_optimizer_assign(tf.ones(2), v, tf.ones(2), tf.ones(2), *[0.5] * 8)


def lamb_training(steps_of_grads, start, graph_kind):
    """BERT's LAMB written with the two fused stages, in a TF1 graph or a tf.function; returns (v, m, param)."""
    lr, beta1, beta2, eps, decay = 0.05, 0.9, 0.999, 1e-6, 0.01

    def one_step(grad, v, m, param, step):
        update, _, _ = npu_vector_ops.lamb_apply_optimizer_assign(
            grad, v, m, param, beta1, 1 - beta1, beta2, 1 - beta2, eps, step, 1.0, decay
        )
        return npu_vector_ops.lamb_apply_weight_assign(tf.norm(param), tf.norm(update), lr, update, param)

    if graph_kind == "tf.function":
        v, m = tf.Variable(tf.zeros_like(start)), tf.Variable(tf.zeros_like(start))
        param = tf.Variable(start)
        step_fn = tf.function(lambda grad, step: one_step(grad, v, m, param, step))
        for step, grad in enumerate(steps_of_grads, 1):
            step_fn(tf.constant(grad), tf.constant(float(step)))
        return v.numpy(), m.numpy(), param.numpy()
    feed = {}

    def build():
        feed["grad"], feed["step"] = v1.placeholder(tf.float32, start.shape), v1.placeholder(tf.float32, [])
        variables = [
            v1.get_variable(n, initializer=value)
            for n, value in (("v", np.zeros_like(start)), ("m", np.zeros_like(start)), ("param", start))
        ]
        return one_step(feed["grad"], *variables, feed["step"]), variables

    with in_graph(build) as (sess, (new_param, variables)):
        for step, grad in enumerate(steps_of_grads, 1):
            sess.run(new_param, {feed["grad"]: grad, feed["step"]: float(step)})
        return sess.run(variables)


@pytest.mark.starts_processes
@pytest.mark.parametrize("graph_kind", ["tf1-graph", "tf.function"])
def test_lamb_stages_train_like_the_reference_over_several_steps(graph_kind):
    grads = RNG.randn(4, 5).astype(np.float32)
    start = RNG.randn(5).astype(np.float32)
    expected = (np.zeros(5), np.zeros(5), start)
    for step, grad in enumerate(grads, 1):
        expected = ref.lamb_step(grad, *expected, 0.05, 0.9, 0.999, 1e-6, step, 0.01)
    for got, want in zip(lamb_training(grads, start, graph_kind), expected):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


# --- dropout_v3, deformable_conv2d, randomchoicewithmask ------------------------------------------------------


@pytest.mark.starts_processes
def test_dropout_v3_keeps_and_scales_in_eager_and_graph_mode():
    values = RNG.uniform(1, 2, size=(200, 50)).astype(np.float32)
    x = tf.constant(values)
    eager = npu_aicore_ops.dropout_v3(x, 0.8, seed=3).numpy()
    with in_graph(lambda: npu_aicore_ops.dropout_v3(values, tf.constant(0.8), seed=3)) as (sess, dropped):
        in_a_graph = sess.run(dropped)
    for y in (eager, in_a_graph):
        kept = y != 0
        np.testing.assert_allclose(y[kept], values[kept] / 0.8, rtol=1e-6)
        assert 0.77 < kept.mean() < 0.83
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = npu_aicore_ops.dropout_v3(x, 0.5, noise_shape=[200, 1])
    grad = tape.gradient(y, x).numpy()
    np.testing.assert_allclose(grad, (y.numpy() != 0) / 0.5)
    assert set(np.unique(grad.std(axis=1))) == {0.0}  # one mask value per row
    assert npu_aicore_ops.dropout_v3(x, 1.0) is x


@pytest.mark.parametrize(
    "call,error,message",
    [
        (
            lambda: npu_aicore_ops.dropout_v3(tf.ones(3), 1.5),
            NpuOptionValueError,
            r"keep_prob must be a float value or a scalar tensor in the range \(0, 1\], got 1.5",
        ),
        (
            lambda: npu_ops.dropout(tf.ones(3, tf.int32), 0.5),
            NpuOptionValueError,
            "x must be a floating point tensor. Got a int32 tensor instead.",
        ),
    ],
)
def test_dropout_arguments_are_checked_with_the_adapters_wording(call, error, message):
    with pytest.raises(error, match=message):
        call()


DEFORMABLE_CASES = {
    # name: (x shape NHWC, filter shape, strides, pads, dilations, groups, deformable_groups, modulated)
    "dcnv2": ((1, 5, 6, 2), (2, 2, 2, 3), (1, 1), (0, 1, 1, 0), (1, 1), 1, 1, True),
    "strided-dilated-groups": ((2, 6, 5, 4), (2, 2, 2, 4), (2, 1), (1, 1, 0, 1), (2, 1), 2, 2, True),
    "dcnv1": ((1, 4, 4, 2), (3, 3, 2, 2), (1, 1), (1, 1, 1, 1), (1, 1), 1, 1, False),
}


def deformable_case(name):
    x_shape, f_shape, strides, pads, dilations, groups, dgroups, modulated = DEFORMABLE_CASES[name]
    kh, kw = f_shape[:2]
    out_h = (x_shape[1] + pads[0] + pads[1] - dilations[0] * (kh - 1) - 1) // strides[0] + 1
    out_w = (x_shape[2] + pads[2] + pads[3] - dilations[1] * (kw - 1) - 1) // strides[1] + 1
    x = RNG.randn(*x_shape)
    filters = RNG.randn(*f_shape)
    blocks = 3 if modulated else 2
    offsets = RNG.uniform(-1.3, 1.3, size=(x_shape[0], out_h, out_w, blocks * dgroups * kh * kw))
    near_integer = np.abs(offsets - np.round(offsets)) < 0.05
    offsets[near_integer] += 0.1  # bilinear sampling has kinks at whole pixels: keep finite differences off them
    if modulated:
        offsets[..., 2 * dgroups * kh * kw :] = RNG.uniform(0, 1, size=offsets[..., 2 * dgroups * kh * kw :].shape)
    attrs = dict(
        strides=[1, *strides, 1],
        pads=list(pads),
        dilations=[1, *dilations, 1],
        groups=groups,
        deformable_groups=dgroups,
        modulated=modulated,
    )
    expected = ref.deformable_conv2d(x, filters, offsets, strides, pads, dilations, groups, dgroups, modulated)
    return x, filters, offsets, attrs, expected


@pytest.mark.parametrize("name", sorted(DEFORMABLE_CASES))
def test_deformable_conv2d_equals_its_definition(name):
    x, filters, offsets, attrs, expected = deformable_case(name)
    with pytest.raises(RuntimeError, match=r"tf.deformable_conv2d\(\) is not compatible with eager execution"):
        npu_cube_ops.deformable_conv2d(x, filters, offsets, **attrs)
    nhwc = tf.function(lambda x, f, o: npu_cube_ops.deformable_conv2d(x, f, o, **attrs))
    np.testing.assert_allclose(nhwc(x, filters, offsets).numpy(), expected, atol=1e-8)
    nchw_attrs = {**attrs, "strides": [1, 1, *attrs["strides"][1:3]], "dilations": [1, 1, *attrs["dilations"][1:3]]}
    nchw = tf.function(lambda x, f, o: npu_cube_ops.deformable_conv2d(x, f, o, data_format="NCHW", **nchw_attrs))
    to_nchw = [0, 3, 1, 2]
    np.testing.assert_allclose(
        nchw(x.transpose(to_nchw), filters, offsets.transpose(to_nchw)).numpy(), expected.transpose(to_nchw), atol=1e-8
    )


def test_deformable_conv2d_gradients_match_finite_differences():
    x, filters, offsets, attrs, _ = deformable_case("strided-dilated-groups")
    conv = tf.function(lambda x, f, o: npu_cube_ops.deformable_conv2d(x, f, o, **attrs))
    theoretical, numerical = tf.test.compute_gradient(
        conv, [tf.constant(x), tf.constant(filters), tf.constant(offsets)], delta=1e-6
    )
    for analytic, finite in zip(theoretical, numerical):
        np.testing.assert_allclose(analytic, finite, atol=1e-5)
        assert np.abs(analytic).max() > 0.1


@pytest.mark.parametrize(
    "change,message",
    [
        ({"strides": [2, 1, 1, 1]}, r"strides must be 1 in the N and C dimensions, got \[2, 1, 1, 1\]"),
        ({"pads": [0, 0, 0]}, r"pads must be a list of 4 integers, got \[0, 0, 0\]"),
        ({"data_format": "NDHWC"}, "data_format must be 'NHWC' or 'NCHW', got 'NDHWC'"),
        ({"deformable_groups": 3}, r"x has 4 channels: .* divide by deformable_groups \(3\)"),
        (
            {"modulated": False},
            r"offsets must have 16 or 24 channels \(dx and dy \(and an ignored mask\), each "
            r"deformable_groups x kh x kw\), got 20",
        ),
    ],
)
def test_deformable_conv2d_names_bad_arguments(change, message):
    x, filters, offsets, attrs, _ = deformable_case("strided-dilated-groups")
    with tf.Graph().as_default(), pytest.raises(NpuOptionValueError, match=message):
        npu_cube_ops.deformable_conv2d(x, filters, offsets[..., :20], **{**attrs, **change})


@pytest.mark.starts_processes
def test_randomchoicewithmask_draws_true_coordinates():
    x = RNG.uniform(size=(6, 7)) > 0.6
    truth = {tuple(c) for c in np.argwhere(x)}
    y, mask = npu_cpu_ops.randomchoicewithmask(x, count=len(truth) + 4, seed=1, seed2=2)
    assert y.dtype == tf.int32 and y.shape == (len(truth) + 4, 2)
    assert mask.numpy().tolist() == [True] * len(truth) + [False] * 4
    assert {tuple(c) for c in y.numpy()[: len(truth)]} == truth and not y.numpy()[len(truth) :].any()
    few, few_mask = npu_cpu_ops.randomchoicewithmask(x, count=3, seed=1, seed2=2)
    assert few_mask.numpy().all() and len({tuple(c) for c in few.numpy()} & truth) == 3
    with in_graph(lambda: npu_cpu_ops.randomchoicewithmask(x, count=0, seed=5, seed2=1)) as (sess, every):
        everything, every_mask = sess.run(every)
    assert sorted(map(tuple, everything)) == sorted(truth) and every_mask.all()
    with pytest.raises(NpuOptionValueError, match="count must be an integer >= 0, got -1"):
        npu_cpu_ops.randomchoicewithmask(x, count=-1)
    with pytest.raises(NpuOptionTypeError, match="x must be a bool tensor"):
        npu_cpu_ops.randomchoicewithmask(np.ones(3), count=1)


# --- Profiler and what stays device-only ---------------------------------------------------------------------


@pytest.mark.starts_processes
def test_profiler_writes_a_tensorboard_trace_and_refuses_nesting(tmp_path):
    output = tmp_path / "prof"
    with profiler.Profiler(level="L1", output_path=str(output)) as active:
        tf.reduce_sum(tf.matmul(tf.ones([8, 8]), tf.ones([8, 8]))).numpy()
        with pytest.raises(RuntimeError, match="Profiler blocks do not nest"):
            active.start()
    assert glob.glob(str(output / "plugins" / "profile" / "*" / "*.xplane.pb"))
    with pytest.raises(NpuOptionValueError, match="Option level must be one of L0, L1, L2, got 'L3'"):
        profiler.Profiler(level="L3")
    with pytest.raises(NpuOptionValueError, match="Option output_path should be str"):
        profiler.Profiler(output_path=3)
    with pytest.raises(NpuOptionValueError, match="did you mean 'PipeUtilization'"):
        profiler.Profiler(aic_metrics="PipeUtilisation")
    with pytest.warns(NpuCompatWarning, match="counts AI Core events"):
        with profiler.Profiler(aic_metrics="Memory", output_path=str(output)):
            pass


def test_only_device_runtime_features_stay_device_only_and_name_the_host_way():
    with pytest.raises(
        DeviceOnlyFeatureError,
        match="set_device_sat_mode needs Ascend hardware and its runtime; a "
        "host cannot run it. On a host, floats always overflow",
    ):
        npu_plugin.set_device_sat_mode(1)
    with pytest.raises(DeviceOnlyFeatureError, match="tf.nn.embedding_lookup"):
        npu_cpu_ops.embeddingrankid(None, None)


@pytest.mark.starts_processes
def test_ported_dynamic_rnn_script_trains_with_dumps_under_run_tf1(tmp_path):
    script = HERE / "scripts" / "fused_dynamic_rnn_port.py"
    result = subprocess.run(
        [sys.executable, "-m", "npu_bridge_compat", "run", "--tf1", str(script), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    losses = [float(line.split()[-1]) for line in result.stdout.splitlines() if line.startswith("loss")]
    assert len(losses) == 5 and losses[-1] < 0.1 * losses[0], result.stdout
    dumped = {os.path.basename(root) for root, _, files in os.walk(tmp_path) if "index.json" in files}
    assert dumped == {"step_1", "step_3"}
    for step in dumped:
        assert f"{step} BlockLSTM True w [18, 64]" in result.stdout
