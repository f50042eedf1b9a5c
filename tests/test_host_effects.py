"""Host effects checked by what they produce: the dtypes grappler chose in the executed graph, process-wide
settings, environment ownership."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf
from helpers import config_with, dumped_steps, node_dtypes, reads_rounded_inputs
from tensorflow.python.framework import config as tf_config

from npu_bridge_compat import NpuOptionValueError
from npu_bridge_compat.compat import tf1_keras_api
from npu_bridge_compat.options import options_from_kwargs
from npu_bridge_compat.plan import HostFacts, build_plan, detect_host
from npu_bridge_compat.plan.platform import BFLOAT16_KERNELS, Support
from npu_bridge_compat.runtime.process import restore_environment
from npu_bridge_compat.session import NPUSession

v1 = tf.compat.v1
v1_layers = tf1_keras_api("layers")  # Keras 2: tf_keras with Keras 3


@pytest.fixture(autouse=True)
def clean_process_state():
    yield
    restore_environment()
    detect_host.cache_clear()
    tf_config.disable_op_determinism()


def executed_dtypes(config) -> dict[str, str]:
    """Run MatMul -> Relu -> Exp in an NPUSession; the dtype of each node in the executed partition graphs."""
    with tf.Graph().as_default():
        x = v1.placeholder(tf.float32, [4, 8], name="x")
        weights = v1.get_variable("w", [8, 8])
        y = tf.exp(tf.nn.relu(tf.matmul(x, weights, name="matmul"), name="relu"), name="exp")
        with NPUSession(config=config) as sess:
            sess.run(v1.global_variables_initializer())
            metadata = v1.RunMetadata()
            sess.run(
                y, {x: np.ones([4, 8])}, options=v1.RunOptions(output_partition_graphs=True), run_metadata=metadata
            )
    return node_dtypes(metadata.partition_graphs)


@pytest.mark.starts_processes
@pytest.mark.skipif(detect_host().cpu_bfloat16 not in BFLOAT16_KERNELS, reason="bfloat16 on a CPU needs AVX-512")
def test_mixed_precision_runs_bfloat16_on_this_cpu():
    dtypes = executed_dtypes(config_with(precision_mode="allow_mix_precision"))
    assert dtypes["matmul"] == "bfloat16" and dtypes["relu"] == "bfloat16"
    assert dtypes["exp"] == "float32"  # deny-listed by grappler, as the NPU keeps it in float32


@pytest.mark.starts_processes
def test_float32_modes_keep_float32():
    dtypes = executed_dtypes(config_with(precision_mode="must_keep_origin_dtype"))
    assert {dtypes[name] for name in ("matmul", "relu", "exp")} == {"float32"}
    assert not any("Cast" in name for name in dtypes)


@pytest.mark.starts_processes
def test_float16_emulation_on_request(monkeypatch):
    monkeypatch.setenv("NPU_BRIDGE_COMPAT_CPU_FLOAT16", "1")
    detect_host.cache_clear()
    dtypes = executed_dtypes(config_with(precision_mode_v2="mixed_float16"))
    assert dtypes["matmul-0-CastToFp16-0-AutoMixedPrecision"] == "float16"  # rounded as the NPU would
    assert dtypes["matmul"] == "float32"


@pytest.mark.starts_processes
def test_mixlist_keeps_a_black_listed_op_in_float32(tmp_path, monkeypatch):
    # The float16-emulation pass runs on any CPU: without the list MatMul's output is rounded through float16.
    monkeypatch.setenv("NPU_BRIDGE_COMPAT_CPU_FLOAT16", "1")
    detect_host.cache_clear()
    plain = executed_dtypes(config_with(precision_mode="allow_mix_precision"))
    assert "matmul-0-CastToFp16-0-AutoMixedPrecision" in plain
    restore_environment()  # the NPU's default lists, set for the first configuration
    mixlist = tmp_path / "ops_info.json"
    mixlist.write_text('{"black-list": {"to-add": ["MatMulV2"]}}  // Ascend name of MatMul')
    dtypes = executed_dtypes(config_with(precision_mode="allow_mix_precision", modify_mixlist=str(mixlist)))
    assert dtypes["matmul"] == "float32" and not any(name.startswith("matmul-0-CastToFp16") for name in dtypes)


def list_dtypes(config) -> dict[str, str]:
    """Run x -> MatMul -> BiasAdd -> Selu -> MatMul, and x -> BiasAdd (no converted op beside it), in an
    NPUSession; the dtype each node of the executed graphs computes in."""
    with tf.Graph().as_default():
        x = v1.placeholder(tf.float32, [4, 8], name="x")
        first, second, bias = (
            v1.get_variable(name, shape) for name, shape in (("w1", [8, 8]), ("w2", [8, 8]), ("b", [8]))
        )
        biased = tf.nn.bias_add(tf.matmul(x, first, name="matmul"), bias, name="bias_add")
        outputs = [  # through an Identity each: grappler leaves the fetched nodes themselves as they are
            tf.identity(tf.matmul(tf.nn.selu(biased, name="selu"), second, name="matmul_after_selu")),
            tf.identity(tf.nn.bias_add(x, bias, name="bias_add_alone")),
        ]
        with NPUSession(config=config) as sess:
            sess.run(v1.global_variables_initializer())
            metadata = v1.RunMetadata()
            run_options = v1.RunOptions(output_partition_graphs=True)
            sess.run(outputs, {x: np.ones([4, 8])}, options=run_options, run_metadata=metadata)
    restore_environment()  # the next configuration may carry other lists
    return node_dtypes(metadata.partition_graphs)


def mixlist_config(tmp_path, mixlist: str):
    path = tmp_path / "ops_info.json"
    path.write_text(mixlist, encoding="utf-8")
    return config_with(precision_mode="allow_mix_precision", modify_mixlist=str(path))


needs_bfloat16_kernels = pytest.mark.skipif(
    detect_host().cpu_bfloat16 not in BFLOAT16_KERNELS, reason="bfloat16 on a CPU needs AVX-512"
)


@needs_bfloat16_kernels
def test_black_list_op_stays_float32_unless_modify_mixlist_makes_it_gray(tmp_path):
    # Selu is black on the NPU (precision_reduce false) and on grappler's infer list: float32 by the NPU's list.
    dtypes = list_dtypes(config_with(precision_mode="allow_mix_precision"))
    assert dtypes["bias_add"] == "bfloat16" and dtypes["selu"] == "float32"
    gray = list_dtypes(mixlist_config(tmp_path, '{"black-list": {"to-remove": ["Selu"]}}'))
    assert gray["selu"] == "bfloat16"  # gray between converted ops: converted, as grappler's own list has it


@needs_bfloat16_kernels
def test_white_list_op_is_converted_and_leaves_the_allow_list_with_modify_mixlist(tmp_path):
    # MatMul (Ascend's MatMulV2 / MatMulV3) is white on the NPU and on grappler's allow list: always converted.
    dtypes = list_dtypes(config_with(precision_mode="allow_mix_precision"))
    assert dtypes["matmul"] == "bfloat16" and dtypes["matmul_after_selu"] == "bfloat16"
    gray = list_dtypes(mixlist_config(tmp_path, '{"white-list": {"to-remove": ["MatMulV2"]}}'))
    assert gray["matmul"] == "float32" and gray["matmul_after_selu"] == "float32"  # gray, no converted op beside


@needs_bfloat16_kernels
def test_infer_list_op_follows_its_neighbours_unless_modify_mixlist_makes_it_white(tmp_path):
    # BiasAdd is on grappler's infer list: converted between converted ops only.
    dtypes = list_dtypes(config_with(precision_mode="allow_mix_precision"))
    assert dtypes["bias_add"] == "bfloat16" and dtypes["bias_add_alone"] == "float32"
    white = list_dtypes(mixlist_config(tmp_path, '{"white-list": {"to-add": ["Bias"]}}'))  # Ascend's BiasAdd
    assert white["bias_add_alone"] == "bfloat16" and white["selu"] == "float32"


def test_two_configurations_with_different_lists_in_one_process_is_an_error(tmp_path, avx512_host):
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    first.write_text('{"black-list": {"to-add": ["Exp"]}}')
    second.write_text('{"white-list": {"to-add": ["Exp"]}}')
    with tf.Graph().as_default():
        NPUSession(config=config_with(precision_mode="allow_mix_precision", modify_mixlist=str(first))).close()
        with pytest.raises(
            NpuOptionValueError, match="needs the mixed-precision op lists .* already set .*DENYLIST_ADD"
        ):
            NPUSession(config=config_with(precision_mode="allow_mix_precision", modify_mixlist=str(second)))


def test_deterministic_turns_on_op_determinism():
    with tf.Graph().as_default():
        NPUSession(config=config_with(deterministic=1)).close()
    assert tf_config.is_op_determinism_enabled()


PLANNING_PROGRAM = """
import json, os, sys
before = dict(os.environ)
import tensorflow as tf
from tensorflow.python.eager import context
from tensorflow.python.framework import config as tf_config
from npu_bridge_compat import build_plan, changes, options_from_kwargs
from npu_bridge_compat.plan import HostFacts
from npu_bridge_compat.plan.platform import Support
from npu_bridge_compat.runtime.doors import enter_plan

mixlist, cache = sys.argv[1:]
options = options_from_kwargs(
    enable_graph_kernel=True, precision_mode="allow_mix_precision", modify_mixlist=mixlist, deterministic=1,
    op_compiler_cache_dir=cache, aicore_num="2|2",
)
float32 = options_from_kwargs(precision_mode="must_keep_origin_dtype")
plans = [
    build_plan(chosen, HostFacts(tf.__version__, gpu_count, cpu_bfloat16=support))
    for chosen in (options, float32) for gpu_count in (0, 1) for support in Support
]
def state():
    return {
        "environment unchanged": dict(os.environ) == before,
        "devices listed": context.context()._physical_devices is not None,
        "context started": context.context()._context_handle is not None,
        "changes": [change.target for change in changes.in_force()],
        "op determinism": tf_config.is_op_determinism_enabled(),
        "tf32": tf.config.experimental.tensor_float_32_execution_enabled(),
    }
planned = state()
enter_plan(plans[0])
entered = state()
changes.undo()
print(json.dumps([planned, entered, state()]))
"""


@pytest.mark.starts_processes
def test_a_plan_for_given_host_facts_changes_nothing_and_entering_it_goes_through_the_registry(tmp_path):
    """build_plan with host facts given (scan, explain --host) changes nothing: no environment variable, TensorFlow's
    devices not listed, nothing in the registry; a door entering the plan applies it, through the registry."""
    import subprocess
    import sys

    mixlist = tmp_path / "ops_info.json"
    mixlist.write_text('{"black-list": {"to-add": ["Exp"]}}')
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("TF_XLA", "TF_AUTO_MIXED"))}
    finished = subprocess.run(
        [sys.executable, "-c", PLANNING_PROGRAM, str(mixlist), str(tmp_path)],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
        check=False,
    )
    assert finished.returncode == 0, finished.stderr[-2000:]
    planned, entered, undone = json.loads(finished.stdout.splitlines()[-1])
    assert planned == {
        "environment unchanged": True,
        "devices listed": False,
        "context started": False,
        "changes": [],
        "op determinism": False,
        "tf32": True,
    }
    assert not entered["environment unchanged"] and entered["op determinism"]
    assert {
        "$TF_XLA_FLAGS",
        "$TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_DENYLIST_ADD",
        "$TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_ALLOWLIST_REMOVE",
        "$TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_INFERLIST_REMOVE",
        "$TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_CLEARLIST_REMOVE",
        "TensorFlow op determinism",
    } <= set(entered["changes"]), entered["changes"]
    assert undone == planned


def test_plan_without_avx512_never_claims_bfloat16():
    no_avx512 = HostFacts("2.15.1", 0, cpu_bfloat16=Support.NONE)
    plan = build_plan(options_from_kwargs(precision_mode="allow_mix_precision_bf16"), no_avx512)
    assert plan.mixed_precision is None
    assert "AVX-512" in plan.report.entry("precision_mode").how
    # float16 emulation is never a silent fallback: TensorFlow 2.15's pass can crash the process on training graphs.
    mixed = build_plan(options_from_kwargs(precision_mode="allow_mix_precision"), no_avx512)
    assert mixed.mixed_precision is None
    assert "float32 throughout" in mixed.report.entry("precision_mode").how


# --- dumps and profiling ------------------------------------------------------------------------------------


def linear_training_graph():
    features = tf.constant(np.arange(8, dtype=np.float32).reshape(4, 2), name="features")
    weights = v1.get_variable("weights", [2, 1], initializer=v1.ones_initializer())
    prediction = tf.matmul(features, weights, name="prediction")
    loss = tf.reduce_mean(tf.square(prediction), name="loss")
    step = v1.train.get_or_create_global_step()
    return v1.train.GradientDescentOptimizer(0.001).minimize(loss, global_step=step, name="train")


def read_index(directory):
    import json

    return json.loads((directory / "index.json").read_text())


@pytest.mark.starts_processes
def test_session_dumps_only_the_selected_steps(tmp_path):
    with tf.Graph().as_default():
        train_op = linear_training_graph()
        config = config_with(enable_dump=True, dump_path=str(tmp_path), dump_step="0|2", dump_mode="output")
        with NPUSession(config=config) as sess:
            sess.run(v1.global_variables_initializer())
            for _ in range(4):
                sess.run(train_op)
    steps = dumped_steps(tmp_path)
    assert list(steps) == ["step_0", "step_2"]
    index = {(e["op"], e["kind"], e["slot"]): e for e in read_index(steps["step_0"])}
    entry = index[("prediction", "output", 0)]
    assert entry["dtype"] == "float32" and entry["shape"] == [4, 1] and entry["step"] == 0
    np.testing.assert_allclose(
        np.load(steps["step_0"] / entry["file"]), np.arange(8).reshape(4, 2).sum(axis=1, keepdims=True)
    )
    assert not list(tmp_path.rglob("*.partial"))  # every file was renamed into place


@pytest.mark.starts_processes
def test_dump_modes_layers_and_stats(tmp_path):
    with tf.Graph().as_default():
        train_op = linear_training_graph()
        config = config_with(
            enable_dump=True, dump_path=str(tmp_path), dump_mode="input", dump_layer="prediction", dump_data="stats"
        )
        with NPUSession(config=config) as sess:
            sess.run(v1.global_variables_initializer())
            sess.run(train_op)
    index = read_index(dumped_steps(tmp_path)["step_0"])
    assert {(e["op"], e["kind"], e["slot"]) for e in index} == {("prediction", "input", 0), ("prediction", "input", 1)}
    features = next(e for e in index if e["slot"] == 0)
    assert (features["min"], features["max"]) == (0.0, 7.0) and "file" not in features


@pytest.mark.starts_processes
def test_session_dumps_and_checks_with_tf1_ref_variables(tmp_path):
    with tf.Graph().as_default():
        weight = v1.Variable(tf.ones([2, 1]), use_resource=False, name="weight")  # a TF1 (ref) variable
        loss = tf.reduce_sum(tf.matmul(tf.ones([4, 2]), weight), name="loss")
        train_op = v1.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
        config = config_with(enable_dump=True, dump_path=str(tmp_path), dump_mode="all", enable_dump_debug=True)
        with NPUSession(config=config) as sess:
            sess.run(v1.global_variables_initializer())  # nothing reads the variable before it is initialised
            sess.run(train_op)
    dumped = {e["op"] for e in read_index(dumped_steps(tmp_path)["step_0"])}
    assert "weight/read" in dumped and "weight" not in dumped  # the value, not the variable's own ref tensor


@pytest.mark.starts_processes
def test_session_dumps_and_checks_a_step_with_a_cond(tmp_path):
    with tf.Graph().as_default():
        x = tf.constant([1.0, -2.0])
        y = tf.cond(tf.reduce_sum(x) > 0, lambda: x * 2.0, lambda: x * 3.0, name="branch")
        total = tf.reduce_sum(y, name="total")
        config = config_with(enable_dump=True, dump_path=str(tmp_path), enable_dump_debug=True)
        with NPUSession(config=config) as sess:
            assert sess.run(total) == -3.0
    step = dumped_steps(tmp_path, "total")["step_0"]
    dumped = {e["op"]: e for e in read_index(step)}
    # The If op cannot be fetched; its value is dumped from the Identity that carries it out.
    assert "branch" not in dumped
    np.testing.assert_array_equal(np.load(step / dumped["branch/Identity"]["file"]), [3.0, -6.0])


@pytest.mark.starts_processes
def test_session_loop_dumps_and_checks_every_iteration(tmp_path):
    from npu_bridge_compat import util
    from npu_bridge_compat.errors import NonFiniteValueError

    with tf.Graph().as_default():
        batch = v1.data.make_one_shot_iterator(counting_input_fn()).get_next()[0]  # batch k holds k
        weight = v1.get_variable("weight", [], initializer=v1.constant_initializer(1.0), use_resource=True)
        root = tf.sqrt(3.5 - batch * weight, name="square_root")  # NaN from step 4 on
        step = v1.train.get_or_create_global_step()
        train_op = v1.train.GradientDescentOptimizer(0.0).minimize(tf.reduce_mean(root), global_step=step, name="train")
        config = config_with(
            iterations_per_loop=3,
            enable_dump=True,
            dump_path=str(tmp_path),
            dump_step="1|4",
            dump_layer="square_root",
            enable_dump_debug=True,
        )
        with NPUSession(config=config) as sess:
            sess.run(v1.global_variables_initializer())
            looped = util.set_iteration_per_loop(sess, train_op, 3)
            sess.run(looped)  # steps 0-2
            with pytest.raises(
                NonFiniteValueError,
                match="op 'square_root' produced NaN values in output 0, the first non-finite output of step 4",
            ):
                sess.run(looped)  # steps 3 and 4: the loop ends at the failing step
            assert sess.run(step) == 5
    steps = dumped_steps(tmp_path)
    assert list(steps) == ["step_1", "step_4"]  # named as the original op, not the loop's copy
    [entry] = read_index(steps["step_1"])
    assert (entry["op"], entry["step"]) == ("square_root", 1)
    np.testing.assert_allclose(np.load(steps["step_1"] / entry["file"]), np.sqrt([[2.5], [2.5]]))
    [saved] = tmp_path.glob("exception/*/square_root/input.0.npy")
    np.testing.assert_array_equal(np.load(saved), [[-0.5], [-0.5]])


@pytest.mark.starts_processes
def test_session_loop_says_keep_dtype_cannot_reach_inside_it():
    from npu_bridge_compat import scope, util
    from npu_bridge_compat.errors import NpuCompatWarning

    config = config_with(iterations_per_loop=2, precision_mode="allow_mix_precision")
    with tf.Graph().as_default():
        features = tf.ones([4, 3])
        with scope.keep_dtype_scope():
            kept = v1_layers.dense(features, 2, name="kept")
        loss = tf.reduce_mean(tf.square(v1_layers.dense(kept, 1, name="converted")))
        train_op = v1.train.GradientDescentOptimizer(0.1).minimize(loss)
        with NPUSession(config=config) as sess:
            if sess.npu_plan.mixed_precision is None:
                pytest.skip("this CPU runs no mixed-precision pass")
            sess.run(v1.global_variables_initializer())
            with pytest.warns(
                NpuCompatWarning,
                match=r"keep_dtype_scope cannot keep \['kept/MatMul'.*"
                "iterations_per_loop loop",
            ):
                sess.run(util.set_iteration_per_loop(sess, train_op, 2))


@pytest.mark.starts_processes
def test_overflow_detection_names_the_op_producing_inf(tmp_path):
    from npu_bridge_compat.errors import NonFiniteValueError

    with tf.Graph().as_default():
        x = v1.placeholder(tf.float32, [2])
        y = tf.math.log(x, name="log_of_x")
        total = tf.reduce_sum(y * 2.0, name="total")
        config = config_with(enable_dump_debug=True, dump_path=str(tmp_path))
        with NPUSession(config=config) as sess:
            assert sess.run(total, {x: [1.0, 1.0]}) == 0.0
            with pytest.raises(
                NonFiniteValueError, match="op 'log_of_x' produced Inf values in output 0.*its inputs are saved in"
            ):
                sess.run(total, {x: [0.0, 1.0]})
    [saved] = tmp_path.glob("exception/*/log_of_x/input.0.npy")
    np.testing.assert_array_equal(np.load(saved), [0.0, 1.0])  # the failing step's own input
    assert not list(tmp_path.rglob("*.partial"))


@pytest.mark.starts_processes
def test_keep_dtype_scope_keeps_its_ops_in_float32(monkeypatch):
    from npu_bridge_compat import scope

    monkeypatch.setenv("NPU_BRIDGE_COMPAT_CPU_FLOAT16", "1")  # a pass that converts on any CPU
    detect_host.cache_clear()
    with tf.Graph().as_default():
        x = v1.placeholder(tf.float32, [4, 8])
        weights = v1.get_variable("w", [8, 8])
        with scope.keep_dtype_scope():
            kept = tf.matmul(x, weights, name="kept_matmul")
        converted = tf.matmul(x, weights, name="converted_matmul")
        y = tf.exp(tf.nn.relu(kept + converted))
        with NPUSession(config=config_with(precision_mode="allow_mix_precision")) as sess:
            sess.run(v1.global_variables_initializer())
            sess.run(y, {x: np.ones([4, 8])})  # the first run of its structure finds the kept ops (the hooks)
            metadata = v1.RunMetadata()  # a later run adds them itself, outside the hook driver
            sess.run(
                y, {x: np.ones([4, 8])}, options=v1.RunOptions(output_partition_graphs=True), run_metadata=metadata
            )
    assert reads_rounded_inputs(metadata.partition_graphs, "converted_matmul")
    assert not reads_rounded_inputs(metadata.partition_graphs, "kept_matmul")


@pytest.mark.starts_processes
@pytest.mark.parametrize("iterations_per_loop", [1, 2])
@pytest.mark.needs_estimator
def test_numeric_checks_pass_a_finite_batch_norm_model(tmp_path, iterations_per_loop):
    """Batch norm's gradient declares empty reserve-space outputs that run with another rank: not checked."""
    from npu_bridge_compat.estimator import NPUEstimator, NPURunConfig

    def model_fn(features, labels, mode):
        normed = v1_layers.batch_normalization(tf.reshape(features, [-1, 1, 2, 2]), training=True, fused=True)
        loss = tf.reduce_mean(tf.square(v1_layers.dense(tf.reshape(normed, [-1, 4]), 1) - labels))
        train_op = v1.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=v1.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    data = np.random.RandomState(0).randn(16, 4).astype(np.float32)
    config = NPURunConfig(model_dir=str(tmp_path), enable_exception_dump=1, iterations_per_loop=iterations_per_loop)
    estimator = NPUEstimator(model_fn, config=config)
    estimator.train(lambda: tf.data.Dataset.from_tensor_slices((data, data[:, :1])).repeat().batch(4), max_steps=4)
    assert estimator.get_variable_value("global_step") == 4


def keep_dtype_model_fn(features, labels, mode):
    from npu_bridge_compat import scope

    with scope.keep_dtype_scope():
        kept = v1_layers.dense(features, 4, name="kept")
    loss = tf.reduce_mean(tf.square(v1_layers.dense(kept, 1, name="converted") - labels))
    train_op = v1.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def ones_input_fn():
    data = np.ones([8, 3], np.float32)
    return tf.data.Dataset.from_tensor_slices((data, data[:, :1])).repeat().batch(4)


@pytest.mark.starts_processes
@pytest.mark.needs_estimator
def test_estimator_keeps_keep_dtype_ops_in_float32(tmp_path, monkeypatch):
    from npu_bridge_compat.estimator import NPUEstimator, NPURunConfig

    monkeypatch.setenv("NPU_BRIDGE_COMPAT_CPU_FLOAT16", "1")
    detect_host.cache_clear()

    class PartitionGraphs(v1.train.SessionRunHook):
        names: set = set()

        def before_run(self, run_context):
            return v1.train.SessionRunArgs(None, options=v1.RunOptions(output_partition_graphs=True))

        def after_run(self, run_context, run_values):
            self.names |= {n.name for g in run_values.run_metadata.partition_graphs for n in g.node}

    recorder = PartitionGraphs()
    config = NPURunConfig(model_dir=str(tmp_path), precision_mode="allow_mix_precision")
    NPUEstimator(keep_dtype_model_fn, config=config).train(ones_input_fn, max_steps=1, hooks=[recorder])
    assert any(name.startswith("converted/MatMul-0-CastToFp16") for name in recorder.names)
    assert not any(name.startswith("kept/MatMul-0-CastToFp16") for name in recorder.names)


@pytest.mark.starts_processes
@pytest.mark.needs_estimator
def test_estimator_loop_says_keep_dtype_cannot_reach_inside_it(tmp_path):
    from npu_bridge_compat.errors import NpuCompatWarning
    from npu_bridge_compat.estimator import NPUEstimator, NPURunConfig

    config = NPURunConfig(model_dir=str(tmp_path), precision_mode="allow_mix_precision", iterations_per_loop=2)
    if config.npu_plan.mixed_precision is None:
        pytest.skip("this CPU runs no mixed-precision pass")
    with pytest.warns(
        NpuCompatWarning, match=r"keep_dtype_scope cannot keep \['kept/MatMul'.*iterations_per_loop loop"
    ):
        NPUEstimator(keep_dtype_model_fn, config=config).train(ones_input_fn, max_steps=2)


# --- dumps and checks inside an NPUEstimator loop (iterations_per_loop > 1) ----------------------------------


def counting_input_fn():
    """Batch k holds the value k, so a dumped batch tells which step it came from."""
    values = tf.data.Dataset.range(100).map(lambda k: tf.fill([2, 1], tf.cast(k, tf.float32)))
    return tf.data.Dataset.zip((values, values))


def loop_model_fn(features, labels, mode):
    weight = v1.get_variable("weight", [], initializer=v1.constant_initializer(1.0))
    root = tf.sqrt(3.5 - features * weight, name="square_root")  # NaN once a batch holds a value above 3.5
    loss = tf.reduce_mean(tf.square(root - labels), name="loss")
    train_op = v1.train.GradientDescentOptimizer(0.0).minimize(loss, global_step=v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


@pytest.mark.starts_processes
@pytest.mark.needs_estimator
def test_estimator_loop_dumps_the_selected_steps_from_inside_the_loop(tmp_path):
    from npu_bridge_compat.estimator import DumpConfig, NPUEstimator, NPURunConfig

    config = NPURunConfig(
        model_dir=str(tmp_path / "model"),
        iterations_per_loop=3,
        dump_config=DumpConfig(enable_dump=True, dump_path=str(tmp_path), dump_step="1|4-5"),
    )
    NPUEstimator(loop_model_fn, config=config).train(counting_input_fn, max_steps=3)  # steps 0-2: all finite
    NPUEstimator(loop_model_fn, config=config).train(counting_input_fn, max_steps=6)  # a second call, 0-2 again
    runs = sorted(tmp_path.glob("*/train"))
    assert len(runs) == 2  # the second call's dump did not overwrite the first's
    assert [p.name for p in sorted(runs[0].iterdir())] == ["step_1"]
    assert [p.name for p in sorted(runs[1].iterdir())] == ["step_1"]
    for run in runs:
        index = {(e["op"], e["kind"], e["slot"]): e for e in read_index(run / "step_1")}
        assert index[("IteratorGetNext", "output", 0)]["step"] == 1
        np.testing.assert_array_equal(
            np.load(run / "step_1" / index[("IteratorGetNext", "output", 0)]["file"]), [[1.0], [1.0]]
        )  # the batch of that iteration, not the loop's last
        assert ("loss", "output", 0) in index
    assert not list(tmp_path.rglob("*.partial"))


@pytest.mark.starts_processes
@pytest.mark.needs_estimator
def test_estimator_loop_stops_at_the_first_non_finite_step(tmp_path):
    from npu_bridge_compat.errors import NonFiniteValueError
    from npu_bridge_compat.estimator import DumpConfig, NPUEstimator, NPURunConfig

    (tmp_path / "dumps").mkdir()
    config = NPURunConfig(
        model_dir=str(tmp_path / "model"),
        iterations_per_loop=10,
        dump_config=DumpConfig(
            enable_dump_debug=True, enable_dump=True, dump_layer="loss", dump_path=str(tmp_path / "dumps")
        ),
    )
    with pytest.raises(
        NonFiniteValueError,
        match=r"op 'square_root' produced NaN values in output 0, the first "
        r"non-finite output of step 4; its inputs are saved in",
    ):
        NPUEstimator(loop_model_fn, config=config).train(counting_input_fn, max_steps=20)
    [saved] = (tmp_path / "dumps").glob("exception/*/square_root/input.0.npy")
    np.testing.assert_array_equal(np.load(saved), [[-0.5], [-0.5]])  # 3.5 - 4: step 4's own input
    # Every step's loss is dumped: the loop of 10 steps stopped after step 4, the failing one.
    assert list(dumped_steps(tmp_path / "dumps")) == [f"step_{k}" for k in range(5)]
