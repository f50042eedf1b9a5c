"""Graph-kernel fusion (enable_graph_kernel): XLA auto-clustering of the fusible ops, planned once and applied by
every door; MatMul, host-kept ops and the probes stay out; values equal unfused ones."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from helpers import loopback_port_block, npu_config

from npu_bridge_compat import (
    NpuOptionTypeError,
    NpuOptionValueError,
    build_plan,
    options_from_config_proto,
    options_from_kwargs,
    scope,
)
from npu_bridge_compat.compat.xla import FUSION_FLAGS, fusion_flags_problem
from npu_bridge_compat.errors import NonFiniteValueError
from npu_bridge_compat.keras import NPUCallback
from npu_bridge_compat.options import OPTIONS
from npu_bridge_compat.plan import HostFacts
from npu_bridge_compat.plan.features import GraphKernelFusion
from npu_bridge_compat.plan.platform import graph_kernel_mode
from npu_bridge_compat.runtime.fusion import observed_fusion
from npu_bridge_compat.session import NPUSession

CLUSTER_OPS = {"_XlaCompile", "_XlaRun", "XlaLaunch"}
ALL_OFF = {"Switch": {"GraphFusion": {"ALL": "off"}, "UBFusion": {"ALL": "off"}}}
INPUT = np.random.RandomState(0).randn(16, 32).astype("float32")


def switch_file(tmp_path, document=ALL_OFF) -> str:
    path = tmp_path / "fusion_switch.cfg"
    path.write_text(json.dumps(document))
    return str(path)


# --- the option and the plan ---------------------------------------------------------------------------------


def test_the_option_is_a_host_extension_off_by_default():
    spec = OPTIONS["enable_graph_kernel"]
    assert spec.host_extension and spec.default is False and spec.kind.value == "b"
    assert [key for key, spec in OPTIONS.items() if spec.host_extension] == ["enable_graph_kernel"]


def test_every_reader_accepts_it():
    from_proto = options_from_config_proto(npu_config({"enable_graph_kernel": True}))
    assert from_proto.enable_graph_kernel is True
    assert options_from_kwargs(enable_graph_kernel=True).enable_graph_kernel is True
    assert NPUCallback(enable_graph_kernel=True).npu_plan.feature(GraphKernelFusion) is not None


@pytest.mark.parametrize("value", ["yes", 1])
def test_a_bad_value_is_rejected_with_the_options_name(value):
    with pytest.raises(NpuOptionTypeError, match='"enable_graph_kernel"'):
        options_from_kwargs(enable_graph_kernel=value)
    with pytest.raises(NpuOptionTypeError, match='"enable_graph_kernel"'):
        options_from_config_proto(npu_config({"enable_graph_kernel": str(value)}))
    with pytest.raises(NpuOptionTypeError, match='"enable_graph_kernel"'):
        NPUCallback(enable_graph_kernel=value)


def jit_level_of_function_calls(plan) -> int:
    config = tf.compat.v1.ConfigProto()
    plan.configure_function_calls(config)
    return config.graph_options.optimizer_options.global_jit_level


def test_planned_once_as_a_session_setting_true_meaning_auto(cpu_host):
    plan = build_plan(options_from_kwargs(enable_graph_kernel=True), cpu_host)
    assert plan.features_of(GraphKernelFusion) == (GraphKernelFusion("auto"),)
    # auto: the session's config leaves the level to the run-time unit (DEFAULT); functions run unfused until
    # their own runs decide (OFF)
    assert plan.host_config().graph_options.optimizer_options.global_jit_level == 0
    assert jit_level_of_function_calls(plan) == -1
    how = plan.report.entry("enable_graph_kernel").how
    assert "XLA auto-clustering of fusible ops" in how and "keep the faster" in how
    assert build_plan(options_from_kwargs(), cpu_host).feature(GraphKernelFusion) is None
    off = build_plan(options_from_kwargs(enable_graph_kernel=False), cpu_host)
    assert off.feature(GraphKernelFusion) is None and "no fusion" in off.report.entry("enable_graph_kernel").how


def test_the_environment_asks_for_it_and_an_explicit_false_wins():
    host = HostFacts(tf_version="2.15.1", gpu_count=0, graph_kernel="auto")
    plan = build_plan(options_from_kwargs(), host)
    assert plan.feature(GraphKernelFusion) == GraphKernelFusion("auto")
    assert any("NPU_BRIDGE_COMPAT_GRAPH_KERNEL=auto" in note for note in plan.report.notes)
    assert build_plan(options_from_kwargs(enable_graph_kernel=False), host).feature(GraphKernelFusion) is None


def test_on_forces_the_fused_form_everywhere(cpu_host):
    forced = HostFacts(tf_version="2.15.1", gpu_count=0, graph_kernel="on")
    for plan in (
        build_plan(options_from_kwargs(), forced),
        build_plan(options_from_kwargs(enable_graph_kernel=True), forced),
    ):
        assert plan.feature(GraphKernelFusion) == GraphKernelFusion("on")
        assert plan.host_config().graph_options.optimizer_options.global_jit_level == 1  # ON_1
        assert jit_level_of_function_calls(plan) == 1
        assert "every function runs fused" in str(plan.report)
    assert build_plan(options_from_kwargs(enable_graph_kernel=False), forced).feature(GraphKernelFusion) is None


@pytest.mark.parametrize(
    "value, mode",
    [
        ("", "off"),
        ("0", "off"),
        ("off", "off"),
        ("false", "off"),
        ("1", "auto"),
        ("auto", "auto"),
        ("TRUE", "auto"),
        ("on", "on"),
    ],
)
def test_the_environment_values_name_a_mode(value, mode):
    assert graph_kernel_mode(value) == mode


def test_a_bad_environment_value_is_refused_naming_the_variable_and_the_modes():
    with pytest.raises(NpuOptionValueError, match="NPU_BRIDGE_COMPAT_GRAPH_KERNEL='fast'.*auto.*on.*off"):
        graph_kernel_mode("fast")


def test_a_switch_file_with_every_fusion_off_wins_and_the_report_says_why(tmp_path, cpu_host):
    plan = build_plan(options_from_kwargs(enable_graph_kernel=True, fusion_switch_file=switch_file(tmp_path)), cpu_host)
    assert plan.feature(GraphKernelFusion) is None
    assert "fusion_switch_file turns GraphFusion and UBFusion ALL off" in plan.report.entry("enable_graph_kernel").how
    some_off = switch_file(tmp_path, {"Switch": {"GraphFusion": {"ALL": "off"}}})
    partly = build_plan(options_from_kwargs(enable_graph_kernel=True, fusion_switch_file=some_off), cpu_host)
    assert partly.feature(GraphKernelFusion) is not None


def test_the_process_flags_were_set_before_tensorflow_read_them():
    import os

    flags = os.environ["TF_XLA_FLAGS"].split()
    assert all(flag in flags for flag in FUSION_FLAGS) and fusion_flags_problem() is None


# --- the session door ----------------------------------------------------------------------------------------


def chain_graph(optimizer=True):
    """A MatMul, then MindSpore's examples (mul + add; sub, mul and pow), a GELU and a normalisation; one op kept
    on the host by without_npu_compile_scope."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [16, 32], name="x")
        w = tf.compat.v1.get_variable(
            "w", initializer=tf.compat.v1.random_normal_initializer(seed=1, stddev=0.2), shape=[32, 32]
        )
        h = tf.matmul(x, w, name="project")
        h = h * 1.5 + 0.5
        h = tf.pow((h - 0.1) * h, 2.0) * 0.01 + tf.nn.gelu(h)
        mean, variance = tf.nn.moments(h, axes=[1], keepdims=True)
        normed = (h - mean) * tf.math.rsqrt(variance + 1e-5)
        with scope.without_npu_compile_scope():
            kept = tf.math.softplus(normed, name="kept_on_host")
        loss = tf.reduce_mean(tf.tanh(kept) * normed)
        gradients = tf.gradients(loss, [w, x])
        train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss) if optimizer else None
        init = tf.compat.v1.global_variables_initializer()
    return graph, {"x": x, "loss": loss, "gradients": gradients, "train": train, "init": init, "w": w}


def executed_nodes(config, fetch="loss"):
    """The nodes the second run of `fetch` executed: in mode auto, the fused form's first run (the unfused form,
    the run as asked, runs first)."""
    graph, t = chain_graph()
    with NPUSession(graph=graph, config=config) as session:
        session.run(t["init"])
        session.run(t[fetch], {t["x"]: INPUT})
        metadata = tf.compat.v1.RunMetadata()
        session.run(
            t[fetch],
            {t["x"]: INPUT},
            options=tf.compat.v1.RunOptions(output_partition_graphs=True),
            run_metadata=metadata,
        )
    return [node for partition in metadata.partition_graphs for node in partition.node]


@pytest.mark.starts_processes
def test_session_partition_graphs_hold_clusters_matmul_and_the_scoped_op_stay_out():
    nodes = executed_nodes(npu_config({"enable_graph_kernel": True}), fetch="gradients")
    ops = {node.op for node in nodes}
    assert "_XlaCompile" in ops and "_XlaRun" in ops
    assert any("MatMul" in op for op in ops), ops  # oneDNN's (or Eigen's) MatMul, its own node
    assert "kept_on_host" in {node.name for node in nodes}  # not absorbed into a cluster
    assert not {"Erf", "Erfc", "Pow", "Rsqrt"} & ops  # absorbed


@pytest.mark.starts_processes
def test_no_cluster_without_the_request_or_with_every_fusion_switched_off(tmp_path):
    switched_off = {"enable_graph_kernel": True, "fusion_switch_file": switch_file(tmp_path)}
    for config in (npu_config({}), npu_config(switched_off)):
        ops = {node.op for node in executed_nodes(config)}
        assert not CLUSTER_OPS & ops and {"Erf", "Erfc"} & ops


def run_session(config, steps=0):
    graph, t = chain_graph()
    with NPUSession(graph=graph, config=config) as session:
        session.run(t["init"])
        values = session.run([t["loss"], t["gradients"]], {t["x"]: INPUT})
        for _ in range(steps):
            session.run(t["train"], {t["x"]: INPUT})
        return values, session.run(t["w"])


@pytest.mark.starts_processes
def test_session_values_and_gradients_fused_equal_unfused():
    (fused, fused_gradients), _ = run_session(npu_config({"enable_graph_kernel": True}))
    (plain, plain_gradients), _ = run_session(npu_config({}))
    np.testing.assert_allclose(fused, plain, rtol=1e-5)
    for a, b in zip(fused_gradients, plain_gradients):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


@pytest.mark.starts_processes
def test_twenty_session_steps_end_with_the_same_weights_and_the_report_says_what_fused():
    before = len(observed_fusion())
    _, fused = run_session(npu_config({"enable_graph_kernel": True}), steps=20)
    _, plain = run_session(npu_config({}), steps=20)
    np.testing.assert_allclose(fused, plain, atol=1e-4)
    reported = observed_fusion()[before:]
    assert reported and all(summary.clusters >= 1 for summary in reported)
    absorbed = {kind for summary in reported for kind in summary.absorbed}
    assert "Pow" in absorbed and {"Erf", "Erfc"} & absorbed and not any("MatMul" in kind for kind in absorbed)
    assert not {"Enter", "IteratorGetNext", "ResourceApplyGradientDescent"} & absorbed
    assert "XLA cluster" in str(reported[0])


@pytest.mark.starts_processes
def test_numeric_checks_and_dumps_work_with_fusion_on(tmp_path):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [4], name="x")
        y = tf.math.log(x * 2.0 - 1.0, name="bad_log") * 3.0 + 1.0
        out = tf.reduce_sum(tf.tanh(y), name="out")
    config = npu_config({"enable_graph_kernel": True, "enable_dump_debug": True, "dump_path": str(tmp_path)})
    with NPUSession(graph=graph, config=config) as session:
        assert np.isfinite(session.run(out, {x: np.ones(4, np.float32)}))
        with pytest.raises(NonFiniteValueError, match="bad_log"):
            session.run(out, {x: np.zeros(4, np.float32)})
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    config = npu_config({"enable_graph_kernel": True, "enable_dump": True, "dump_path": str(dumps), "dump_step": "0"})
    with NPUSession(graph=graph, config=config) as session:
        session.run(out, {x: np.ones(4, np.float32)})
    assert list(dumps.rglob("*.npy"))


# --- the Keras door ------------------------------------------------------------------------------------------


def keras_model(seed=3):
    initializer = tf.keras.initializers.GlorotUniform(seed=seed)
    inputs = tf.keras.Input([32])
    hidden = tf.keras.layers.Dense(32, kernel_initializer=initializer)(inputs)
    hidden = tf.keras.layers.Lambda(lambda t: tf.nn.gelu(t) * 1.5 + tf.tanh(t) * (t - 0.1))(hidden)
    hidden = tf.keras.layers.LayerNormalization()(hidden)
    outputs = tf.keras.layers.Dense(1, kernel_initializer=initializer)(hidden)
    model = tf.keras.Model(inputs, outputs)
    model.compile(tf.keras.optimizers.SGD(0.05), "mse")
    return model


def keras_fit(**options):
    model = keras_model()
    data = np.random.RandomState(1)
    features, labels = data.randn(160, 32).astype("float32"), data.randn(160, 1).astype("float32")
    model.fit(features, labels, batch_size=8, epochs=1, shuffle=False, verbose=0, callbacks=[NPUCallback(**options)])
    return model, features


def test_keras_twenty_steps_fused_equal_unfused_and_the_report_says_what_fused():
    before = len(observed_fusion())
    fused, features = keras_fit(enable_graph_kernel=True)
    reported = observed_fusion()[before:]
    plain, _ = keras_fit()
    for a, b in zip(fused.get_weights(), plain.get_weights()):
        np.testing.assert_allclose(a, b, atol=1e-4)
    assert [summary.where for summary in reported] == ["Keras train function"]
    assert reported[0].clusters >= 1 and {"Erf", "Erfc", "Tanh"} & set(reported[0].absorbed)
    np.testing.assert_allclose(  # 4 predict calls: the unfused form's warm-up, the fused one's, then a pair
        fused.predict(features[:32], batch_size=8, verbose=0, callbacks=[NPUCallback(enable_graph_kernel=True)]),
        fused.predict(features[:32], batch_size=8, verbose=0),
        rtol=1e-5,
        atol=1e-6,
    )
    assert "Keras predict function" in [summary.where for summary in observed_fusion()]


def test_keras_n_steps_per_call_fused_equal_unfused():
    fused, _ = keras_fit(enable_graph_kernel=True, iterations_per_loop=5)
    plain, _ = keras_fit(iterations_per_loop=5)
    for a, b in zip(fused.get_weights(), plain.get_weights()):
        np.testing.assert_allclose(a, b, atol=1e-4)


def test_keras_settings_are_restored_after_the_call():
    from npu_bridge_compat.compat.eager import function_calls_configured

    captured = []
    with function_calls_configured(captured.append):
        pass
    keras_fit(enable_graph_kernel=True)
    with function_calls_configured(captured.append):
        pass
    assert captured[0] == captured[1]
    assert captured[1].graph_options.optimizer_options.global_jit_level != 1


def test_keras_dumps_and_numeric_checks_built_into_the_fused_steps_still_work(tmp_path):
    from helpers import dumped_steps

    model, _ = keras_fit(
        enable_graph_kernel=True, iterations_per_loop=2, enable_dump=True, dump_path=str(tmp_path), dump_step="3"
    )
    assert list(dumped_steps(tmp_path)) == ["step_3"]
    inputs = tf.keras.Input([4])
    shifted = tf.keras.layers.Lambda(lambda t: tf.tanh(tf.math.log(t * 2.0 - 10.0, name="shifted_log") * 3.0))(inputs)
    net = tf.keras.Model(inputs, tf.keras.layers.Dense(1)(shifted))
    net.compile("sgd", "mse")
    with pytest.raises(NonFiniteValueError, match="shifted_log"):
        net.fit(
            np.ones([16, 4], np.float32),
            np.ones([16, 1], np.float32),
            batch_size=8,
            verbose=0,
            callbacks=[NPUCallback(enable_graph_kernel=True, enable_exception_dump=1)],
        )


# --- the Estimator door --------------------------------------------------------------------------------------

FEATURES = np.random.RandomState(2).randn(512, 8).astype("float32")
LABELS = FEATURES[:, :1] * 0.5


def estimator_input_fn():
    return tf.data.Dataset.from_tensor_slices((FEATURES, LABELS)).repeat().batch(8)


def chain_model_fn(features, labels, mode):
    from npu_bridge_compat.compat import tf1_keras_api

    layers = tf1_keras_api("layers")  # Keras 2's: tf_keras from TensorFlow 2.16
    hidden = layers.dense(
        features, 16, name="hidden", kernel_initializer=tf.compat.v1.glorot_uniform_initializer(seed=1)
    )
    hidden = tf.nn.gelu(hidden) * 1.5 + tf.tanh(hidden) * (hidden - 0.1)
    mean, variance = tf.nn.moments(hidden, axes=[1], keepdims=True)
    hidden = (hidden - mean) * tf.math.rsqrt(variance + 1e-5)
    logits = layers.dense(hidden, 1, name="logits", kernel_initializer=tf.compat.v1.glorot_uniform_initializer(seed=2))
    loss = tf.compat.v1.losses.mean_squared_error(labels, logits)
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.05).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step()
    )
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def estimator_weights(model_dir, **config):
    from npu_bridge_compat.estimator import NPUEstimator, NPURunConfig

    estimator = NPUEstimator(chain_model_fn, config=NPURunConfig(model_dir=str(model_dir), **config))
    estimator.train(estimator_input_fn, max_steps=20)
    return {name: estimator.get_variable_value(name) for name in estimator.get_variable_names() if "/" in name}


@pytest.mark.starts_processes
@pytest.mark.needs_estimator
@pytest.mark.parametrize("iterations", [1, 5], ids=["one step per run", "N-step loop"])
def test_estimator_twenty_steps_fused_equal_unfused(tmp_path, iterations):
    before = len(observed_fusion())
    fused = estimator_weights(tmp_path / "fused", enable_graph_kernel=True, iterations_per_loop=iterations)
    assert any(summary.clusters for summary in observed_fusion()[before:])
    plain = estimator_weights(tmp_path / "plain", iterations_per_loop=iterations)
    assert fused.keys() == plain.keys() and fused
    for name in fused:
        np.testing.assert_allclose(fused[name], plain[name], atol=1e-4, err_msg=name)


@pytest.mark.needs_estimator
def test_npurunconfig_takes_the_keyword_and_rejects_a_bad_value():
    from npu_bridge_compat.estimator import NPURunConfig

    config = NPURunConfig(enable_graph_kernel=True)
    assert config.session_config.graph_options.optimizer_options.global_jit_level == 0  # auto: the unit decides
    with pytest.raises(NpuOptionTypeError, match='"enable_graph_kernel"'):
        NPURunConfig(enable_graph_kernel="yes")


# --- unmodified scripts: run / launch --graph-kernel ------------------------------------------------------------

SCRIPT = Path(__file__).parent / "scripts" / "graph_kernel_port.py"


def script_reports(*command, **environment) -> list[dict]:
    result = subprocess.run(
        [sys.executable, "-m", "npu_bridge_compat", *command, str(SCRIPT)],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, **environment},
    )
    assert result.returncode == 0, result.stderr[-4000:]
    lines = [line.split("] ", 1)[-1] for line in result.stdout.splitlines()]
    return sorted((json.loads(line) for line in lines if line.startswith('{"rank"')), key=lambda r: r["rank"])


@pytest.mark.starts_processes
def test_run_graph_kernel_fuses_an_unmodified_script_and_plain_run_does_not():
    assert [report["clusters"] for report in script_reports("run", "--graph-kernel")] != [0]
    assert script_reports("run", "--tf2") == [{"rank": 0, "clusters": 0}]  # either world
    assert script_reports("run", NPU_BRIDGE_COMPAT_GRAPH_KERNEL="1")[0]["clusters"] >= 1


@pytest.mark.starts_processes
def test_launch_graph_kernel_fuses_in_every_rank():
    port = str(loopback_port_block(2))
    reports = script_reports("launch", "-n", "2", "--graph-kernel", NPU_BRIDGE_COMPAT_PORT=port)
    assert [report["rank"] for report in reports] == [0, 1]
    assert all(report["clusters"] >= 1 for report in reports)


def test_explain_shows_the_plan(capsys):
    from npu_bridge_compat.cli import main

    assert main(["explain", "enable_graph_kernel=true"]) == 0
    out = capsys.readouterr().out
    assert "enable_graph_kernel=True" in out and "GraphKernelFusion(mode='auto')" in out
    assert "--tf_xla_ops_to_cluster=FUSIBLE" in out


def run_without_xla_flags(program: str) -> subprocess.CompletedProcess:
    """`program` in a new Python whose environment has no TF_XLA_FLAGS (the package must set them itself)."""
    result = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        timeout=120,
        env={name: value for name, value in os.environ.items() if name != "TF_XLA_FLAGS"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result


@pytest.mark.starts_processes
def test_a_program_that_imported_tensorflow_first_still_fuses_through_its_session_config():
    """Planning detects the host by listing TensorFlow's devices, which makes TensorFlow read XLA's flags: the
    fusion flags must be in place before that, or the session silently runs unfused."""
    program = textwrap.dedent(
        """
        import tensorflow as tf
        from npu_bridge_compat.runtime.fusion import observed_fusion
        from npu_bridge_compat.session import NPUSession, npu_config_proto

        config = tf.compat.v1.ConfigProto()
        custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
        custom_op.name = "NpuOptimizer"
        custom_op.parameter_map["enable_graph_kernel"].b = True
        graph = tf.Graph()
        with graph.as_default():
            x = tf.compat.v1.placeholder(tf.float32, [1000])
            y = tf.nn.gelu(x * 2.0 + 1.0) * 3.0
        with NPUSession(graph=graph, config=npu_config_proto(config)) as session:
            for _ in range(2):  # the unfused form's warm-up, then the fused one's
                session.run(y, {x: [0.5] * 1000})
        print("clusters", sum(summary.clusters for summary in observed_fusion()))
        """
    )
    result = run_without_xla_flags(program)
    assert "clusters 1" in result.stdout, result.stdout + result.stderr[-2000:]


@pytest.mark.starts_processes
def test_the_report_warns_when_tensorflow_ran_before_the_flags_could_be_set():
    program = (
        "import tensorflow as tf; tf.constant(1.0) + 1.0\n"
        "from npu_bridge_compat import build_plan, options_from_kwargs\n"
        "print(build_plan(options_from_kwargs(enable_graph_kernel=True)).report)\n"
    )
    result = run_without_xla_flags(program)
    assert "TensorFlow started before graph-kernel fusion was asked for" in result.stdout
