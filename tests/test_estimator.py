"""The Estimator door: NPURunConfig, NPUEstimator's N steps per run, mixed compute's batch-norm workaround."""

import os
import warnings

import numpy as np
import pytest
import tensorflow as tf
from helpers import npu_config
from tensorflow.core.protobuf import rewriter_config_pb2

from npu_bridge_compat import NpuOptionTypeError, NpuOptionValueError, compat, scope
from npu_bridge_compat.errors import NpuCompatWarning
from npu_bridge_compat.estimator import (
    DumpConfig,
    ExperimentalConfig,
    GraphMemoryOptimizeConfig,
    NPUEstimator,
    NPUEstimatorSpec,
    NPURunConfig,
    ProfilingConfig,
)
from npu_bridge_compat.plan.features import NumericChecks

pytestmark = pytest.mark.needs_estimator  # the whole door is tf.estimator

# Estimator programs build Keras 2 (graph-mode) layers: on TensorFlow 2.16 and later, tf_keras's
v1_layers = compat.tf1_keras_api("layers")
keras_2 = tf.keras if not compat.tf_keras_is_keras_3() else pytest.importorskip("tf_keras")

FEATURES = np.random.RandomState(0).randn(512, 6).astype("float32")
LABELS = (FEATURES[:, :3].sum(axis=1, keepdims=True) > 0).astype("float32")
V3_OPS = {"FusedBatchNormV3", "FusedBatchNormGradV3"}


def input_fn():
    return tf.data.Dataset.from_tensor_slices((FEATURES, LABELS)).repeat().batch(8)


def dense_model_fn(features, labels, mode):
    hidden = v1_layers.dense(
        features,
        4,
        activation=tf.nn.relu,
        name="hidden",
        kernel_initializer=tf.compat.v1.glorot_uniform_initializer(seed=1),
    )
    logits = v1_layers.dense(
        hidden, 1, name="logits", kernel_initializer=tf.compat.v1.glorot_uniform_initializer(seed=2)
    )
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={"logits": logits})
    loss = tf.compat.v1.losses.sigmoid_cross_entropy(labels, logits)
    tf.compat.v1.summary.scalar("step_loss", loss)
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.05)
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(
        mode, loss=loss, train_op=train_op, eval_metric_ops={"mean_loss": tf.compat.v1.metrics.mean(loss)}
    )


def batchnorm_model_fn(features, labels, mode, params):
    x = tf.reshape(tf.cast(features, params.get("dtype", tf.float32)), [-1, 1, 2, 3])
    if params.get("keras"):
        x = keras_2.layers.BatchNormalization(dtype=params.get("dtype", tf.float32))(x, training=True)
    else:
        x = v1_layers.batch_normalization(x, fused=True, training=True)
    logits = v1_layers.dense(
        tf.reshape(tf.cast(x, tf.float32), [-1, 6]), 1, kernel_initializer=tf.compat.v1.constant_initializer(0.1)
    )
    loss = tf.compat.v1.losses.sigmoid_cross_entropy(labels, logits)
    update_ops = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)
    with tf.control_dependencies(update_ops):
        train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
            loss, global_step=tf.compat.v1.train.get_global_step()
        )
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


class StepRecorder(tf.compat.v1.train.SessionRunHook):
    """Records global_step after every session run, and the op types of the training graph."""

    def __init__(self):
        self.steps, self.graph_op_types, self.function_op_types = [], set(), set()

    @property
    def op_types(self):
        return self.graph_op_types | self.function_op_types

    def begin(self):
        graph = tf.compat.v1.get_default_graph()
        self._global_step = tf.compat.v1.train.get_global_step()
        self.graph_op_types = {op.type for op in graph.get_operations()}
        for function in graph._functions.values():
            self.function_op_types |= {node.op for node in function.definition.node_def}

    def after_run(self, run_context, run_values):
        self.steps.append(run_context.session.run(self._global_step))


def train(tmp_path, model_fn=dense_model_fn, max_steps=20, params=None, **config):
    recorder = StepRecorder()
    estimator = NPUEstimator(model_fn, config=NPURunConfig(model_dir=str(tmp_path), **config), params=params)
    estimator.train(input_fn, max_steps=max_steps, hooks=[recorder])
    return estimator, recorder


# --- NPURunConfig ------------------------------------------------------------------------------------------


def test_npurunconfig_has_the_adapter_defaults():
    config = NPURunConfig()
    assert config.save_summary_steps == 0
    assert config.save_checkpoints_steps == 100 and config.save_checkpoints_secs is None
    assert config.keep_checkpoint_max == 5 and config.log_step_count_steps == 100
    assert config.iterations_per_loop == 1 and config.npu_options.explicit == frozenset()


def test_npurunconfig_translates_its_arguments_and_holders(tmp_path):
    config = NPURunConfig(
        iterations_per_loop=10,
        precision_mode="allow_mix_precision",
        hcom_parallel=False,
        dump_config=DumpConfig(enable_dump=True, dump_path=str(tmp_path), dump_step="0|5"),
        profiling_config=ProfilingConfig(True, f'{{"output": "{tmp_path}"}}'),
    )
    assert config.npu_options.set_options() == {
        "iterations_per_loop": 10,
        "precision_mode": "allow_mix_precision",
        "enable_dump": True,
        "dump_path": str(tmp_path),
        "dump_step": "0|5",
        "profiling_mode": True,
        "profiling_options": f'{{"output": "{tmp_path}"}}',
        "hcom_parallel": False,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error", NpuCompatWarning)  # reading a config has no side effect
        assert config.session_config.graph_options.rewrite_options.custom_optimizers == []


def test_npurunconfig_arguments_override_session_config_entries(avx512_host):
    session_config = npu_config(
        {"precision_mode": "force_fp32", "iterations_per_loop": 4}, optimizers=("GradFusionOptimizer",)
    )
    config = NPURunConfig(session_config=session_config, precision_mode="allow_mix_precision")
    assert config.npu_options.precision_mode == "allow_mix_precision"
    assert config.npu_options.iterations_per_loop == 4
    rewrite = config.session_config.graph_options.rewrite_options
    assert list(rewrite.optimizers) == [] and rewrite.auto_mixed_precision_onednn_bfloat16 == 1


@pytest.mark.parametrize(
    "arguments, error, message",
    [
        (
            {"mix_compile_mode": True, "iterations_per_loop": 10},
            NpuOptionValueError,
            '"iterations_per_loop" must be 1 with "mix_compile_mode" is True',
        ),
        ({"iterations_per_loop": 0}, NpuOptionValueError, '"iterations_per_loop" .* invalid value 0'),
        ({"iterations_per_loop": "10"}, NpuOptionTypeError, '"iterations_per_loop" .* must be int'),
        ({"mix_compile_mode": "True"}, NpuOptionTypeError, '"mix_compile_mode" type must be bool'),
        ({"jit_compile": True}, NpuOptionTypeError, "jit_compile: Expected str, got bool"),
        ({"graph_run_mode": 2}, NpuOptionValueError, '"graph_run_mode" .* invalid value 2'),
        (
            {"dump_config": {"enable_dump": True}},
            NpuOptionValueError,
            "dump_config must be provided with type DumpConfig",
        ),
        ({"dump_config": DumpConfig(enable_dump=True)}, NpuOptionValueError, "dump_path must be set"),
        ({"precision_mode": "mixed"}, NpuOptionValueError, '"precision_mode" .* invalid value'),
    ],
)
def test_npurunconfig_errors_surface_at_construction(arguments, error, message):
    with pytest.raises(error, match=message):
        NPURunConfig(**arguments)


def test_replace_reads_and_plans_a_new_session_config_without_warning():
    config = NPURunConfig(precision_mode="allow_mix_precision", iterations_per_loop=5)
    new_entries = npu_config({"enable_exception_dump": 1, "precision_mode": "force_fp32"})
    with warnings.catch_warnings():
        warnings.simplefilter("error", NpuCompatWarning)  # replacing never warns
        replaced = config.replace(session_config=new_entries)
        rerooted = tf.estimator.RunConfig.replace(replaced, model_dir="elsewhere")  # as Estimator calls it
    for result in (replaced, rerooted):
        assert result.npu_options.enable_exception_dump == 1  # read from the new session config
        assert result.npu_options.precision_mode == "allow_mix_precision"  # NPURunConfig's own argument wins
        assert result.npu_plan.feature(NumericChecks) is not None
        assert result.npu_plan.mixed_precision == config.npu_plan.mixed_precision
        rewrite = result._session_config.graph_options.rewrite_options
        assert list(rewrite.custom_optimizers) == []  # the NpuOptimizer entry is gone from the host config
        mixed = config.npu_plan.mixed_precision
        if mixed is not None:
            assert getattr(rewrite, mixed.grappler_pass) == 1  # ON
    assert rerooted.model_dir == "elsewhere" and not config.npu_options.is_set("enable_exception_dump")
    with pytest.warns(NpuCompatWarning, match="StepLoop.*take effect only with NPUEstimator"):
        tf.estimator.Estimator(dense_model_fn, config=replaced)  # a plain Estimator given it is still told


def test_recompute_becomes_grapplers_memory_optimizer():
    experimental = ExperimentalConfig(graph_memory_optimize_config=GraphMemoryOptimizeConfig(recompute="manual"))
    config = NPURunConfig(experimental_config=experimental)
    assert (
        config._session_config.graph_options.rewrite_options.memory_optimization
        == rewriter_config_pb2.RewriterConfig.MANUAL
    )
    assert any("recompute='manual'" in note and "_recompute_hint" in note for note in config.npu_plan.report.notes)
    with tf.Graph().as_default():
        with scope.npu_recompute_scope():
            marked = tf.square(tf.ones([2]), name="square")
        assert marked.op.name == "NpuRecompute/square" and marked.op.get_attr("_recompute_hint") == 1
    auto = NPURunConfig(
        experimental_config=ExperimentalConfig(graph_memory_optimize_config=GraphMemoryOptimizeConfig(recompute="auto"))
    )
    assert (
        auto._session_config.graph_options.rewrite_options.memory_optimization
        == rewriter_config_pb2.RewriterConfig.RECOMPUTATION_HEURISTICS
    )


@pytest.mark.starts_processes
def test_plain_estimator_trains_with_the_host_config_and_warns_once_about_iterations(tmp_path):
    config = NPURunConfig(model_dir=str(tmp_path), iterations_per_loop=5)
    with pytest.warns(NpuCompatWarning, match="take effect only with NPUEstimator") as record:
        estimator = tf.estimator.Estimator(dense_model_fn, config=config)
        estimator.train(input_fn, max_steps=6)
    assert len([w for w in record if "only with NPUEstimator" in str(w.message)]) == 1
    assert estimator.get_variable_value("global_step") == 6


# --- NPUEstimator: N steps per run -------------------------------------------------------------------------


@pytest.mark.starts_processes
def test_each_run_advances_global_step_by_n_and_the_last_loop_is_shortened(tmp_path):
    with pytest.warns(
        NpuCompatWarning,
        match="training for 25 steps, which is not a multiple of iterations_per_loop=10.*ends exactly at step 25",
    ):
        estimator, recorder = train(tmp_path, iterations_per_loop=10, max_steps=25)
    assert recorder.steps == [10, 20, 25]
    assert estimator.get_variable_value("global_step") == 25


def named_tensors_model_fn(features, labels, mode, params):
    """The official-models layout: learning_rate, cross_entropy and train_accuracy named in model_fn (the
    accuracy is not needed by the train op), with resource or TF1 reference variables (`params["resource"]`)."""
    global_step = tf.compat.v1.train.get_global_step()
    kernel = tf.compat.v1.get_variable(
        "kernel", [6, 1], initializer=tf.compat.v1.constant_initializer(0.1), use_resource=params["resource"]
    )
    logits = tf.matmul(features, kernel)
    cross_entropy = tf.identity(tf.compat.v1.losses.sigmoid_cross_entropy(labels, logits), name="cross_entropy")
    learning_rate = tf.identity(tf.compat.v1.train.exponential_decay(0.5, global_step, 1, 0.9), name="learning_rate")
    accuracy = tf.reduce_mean(
        tf.cast(tf.equal(tf.cast(logits > 0, tf.float32), labels), tf.float32), name="train_accuracy"
    )
    del accuracy  # fetched by name only, as the official models' logging hooks do
    train_op = tf.compat.v1.train.GradientDescentOptimizer(learning_rate).minimize(
        cross_entropy, global_step=global_step
    )
    return tf.estimator.EstimatorSpec(mode, loss=cross_entropy, train_op=train_op)


class ByNameHook(tf.compat.v1.train.SessionRunHook):
    """A train(hooks=[...]) hook that fetches a tensor by its name every run."""

    def __init__(self, name):
        self.name, self.values = name, []

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs(self.name)

    def after_run(self, run_context, run_values):
        self.values.append(run_values.results)


def train_with_named_hooks(model_dir, iterations_per_loop, resource):
    seen = []
    logging_hook = tf.compat.v1.train.LoggingTensorHook(
        {"lr": "learning_rate", "ce": "cross_entropy", "acc": "train_accuracy"},
        every_n_iter=1,
        formatter=lambda values: seen.append(dict(values)) or "",
    )
    by_name = ByNameHook("cross_entropy:0")
    estimator = NPUEstimator(
        named_tensors_model_fn,
        params={"resource": resource},
        config=NPURunConfig(model_dir=str(model_dir), iterations_per_loop=iterations_per_loop),
    )
    estimator.train(input_fn, max_steps=8, hooks=[by_name], saving_listeners=None)
    estimator.train(input_fn, max_steps=16, hooks=[logging_hook])
    return estimator, seen, by_name.values


@pytest.mark.starts_processes
@pytest.mark.parametrize("resource", [True, False], ids=["resource variables", "TF1 reference variables"])
def test_hooks_fetching_tensors_named_in_model_fn_see_the_last_iteration(tmp_path, resource):
    single, single_seen, single_by_name = train_with_named_hooks(tmp_path / "single", 1, resource)
    looped, looped_seen, looped_by_name = train_with_named_hooks(tmp_path / "looped", 2, resource)
    assert looped.get_variable_value("global_step") == 16
    assert len(single_seen) == 8 and len(looped_seen) == 4  # one log per run
    for run, values in enumerate(looped_seen):
        last = single_seen[2 * run + 1]  # the second of the run's two steps
        for name in ("lr", "ce", "acc"):
            np.testing.assert_allclose(values[name], last[name], rtol=1e-6, err_msg=f"{name}, run {run}")
    assert looped_seen[0]["lr"] != looped_seen[1]["lr"]  # each run's own last step, not a constant
    np.testing.assert_allclose(looped_by_name, single_by_name[1::2], rtol=1e-6)
    np.testing.assert_allclose(looped.get_variable_value("kernel"), single.get_variable_value("kernel"), rtol=1e-6)


@pytest.mark.starts_processes
def test_loop_graph_runs_copies_of_the_built_step(tmp_path):
    _, recorder = train(tmp_path, iterations_per_loop=4, max_steps=8)
    assert {"Enter", "Exit", "NextIteration", "IteratorGetNext"} <= recorder.graph_op_types
    assert "While" not in recorder.graph_op_types  # a v1 loop over an imported copy of the step


@pytest.mark.starts_processes
def test_n_step_training_matches_single_step_training(tmp_path):
    single, single_steps = train(tmp_path / "single", iterations_per_loop=1, max_steps=40)
    looped, looped_steps = train(tmp_path / "looped", iterations_per_loop=8, max_steps=40)
    assert single_steps.steps == list(range(1, 41)) and looped_steps.steps == [8, 16, 24, 32, 40]
    for name in single.get_variable_names():
        if name.startswith(("hidden", "logits")):
            np.testing.assert_allclose(
                single.get_variable_value(name), looped.get_variable_value(name), rtol=1e-6, atol=1e-6, err_msg=name
            )


@pytest.mark.starts_processes
def test_train_steps_are_incremental_across_calls(tmp_path):
    estimator = NPUEstimator(dense_model_fn, config=NPURunConfig(model_dir=str(tmp_path), iterations_per_loop=5))
    estimator.train(input_fn, steps=10)
    recorder = StepRecorder()
    estimator.train(input_fn, steps=10, hooks=[recorder])
    assert recorder.steps == [15, 20]


@pytest.mark.starts_processes
def test_checkpoints_and_summaries_land_on_run_boundaries(tmp_path):
    train(tmp_path, iterations_per_loop=5, max_steps=20, save_checkpoints_steps=10, save_summary_steps=10)
    state = tf.train.get_checkpoint_state(str(tmp_path))
    saved = sorted(int(path.rsplit("-", 1)[1]) for path in state.all_model_checkpoint_paths)
    assert saved == [0, 10, 20]  # Estimator also saves when the session starts
    events = [os.path.join(tmp_path, name) for name in os.listdir(tmp_path) if name.startswith("events")]
    summary_steps = {
        event.step
        for path in events
        for event in tf.compat.v1.train.summary_iterator(path)
        if any(value.tag == "step_loss" for value in event.summary.value)
    }
    # Summaries are written at run boundaries, with the step the run ended at; as on Ascend, Estimator's summary
    # hook predicts one step per run, so its interval stretches (the adapter's docs say the same).
    assert summary_steps and all(step % 5 == 0 for step in summary_steps), summary_steps


def test_interval_not_multiple_of_n_warns(tmp_path):
    with pytest.warns(NpuCompatWarning, match="save_checkpoints_steps=7 is not a multiple of iterations_per_loop=5"):
        NPUEstimator(
            dense_model_fn,
            config=NPURunConfig(model_dir=str(tmp_path), iterations_per_loop=5, save_checkpoints_steps=7),
        )


@pytest.mark.starts_processes
def test_evaluate_and_predict_run_one_step_per_run(tmp_path):
    estimator, _ = train(tmp_path, iterations_per_loop=5, max_steps=10)
    metrics = estimator.evaluate(input_fn, steps=3)
    assert metrics["global_step"] == 10 and np.isfinite(metrics["mean_loss"])
    predictions = estimator.predict(lambda: tf.data.Dataset.from_tensor_slices(FEATURES[:4]).batch(2))
    assert len(list(predictions)) == 4


@pytest.mark.starts_processes
def test_looping_needs_a_dataset(tmp_path):
    def tensors_input_fn():
        return tf.compat.v1.data.make_one_shot_iterator(input_fn()).get_next()

    estimator = NPUEstimator(dense_model_fn, config=NPURunConfig(model_dir=str(tmp_path), iterations_per_loop=5))
    with pytest.raises(
        NpuOptionValueError, match="iterations_per_loop=5 needs an input_fn that returns a tf.data.Dataset"
    ):
        estimator.train(tensors_input_fn, max_steps=10)


def host_call_model_fn(record):
    def model_fn(features, labels, mode):
        spec = dense_model_fn(features, labels, mode)
        step = tf.compat.v1.train.get_global_step()
        host_call = (lambda gs: tf.numpy_function(lambda v: record.append(int(v)) or v, [gs], tf.int64), [step])
        return NPUEstimatorSpec(mode, loss=spec.loss, train_op=spec.train_op, host_call=host_call)

    return model_fn


@pytest.mark.starts_processes
def test_host_call_runs_every_step_with_one_step_per_run(tmp_path):
    record = []
    train(tmp_path, model_fn=host_call_model_fn(record), max_steps=4)
    assert len(record) == 4


@pytest.mark.starts_processes
def test_host_call_is_refused_with_several_steps_per_run(tmp_path):
    with pytest.raises(NpuOptionValueError, match="host_call is not supported with iterations_per_loop=2"):
        train(tmp_path, model_fn=host_call_model_fn([]), iterations_per_loop=2, max_steps=4)


def test_host_call_is_validated():
    with pytest.raises(NpuOptionValueError, match="host_call function takes 1 arguments but 2 tensors"):
        NPUEstimatorSpec(
            "train",
            loss=tf.constant(1.0),
            train_op=tf.no_op(),
            host_call=(lambda a: a, [tf.constant(1), tf.constant(2)]),
        )


def test_npuestimator_checks_its_config(tmp_path):
    with pytest.raises(NpuOptionValueError, match="`config` must be provided with type `NPUConfigs`"):
        NPUEstimator(dense_model_fn, config=tf.estimator.RunConfig())
    with pytest.raises(NpuOptionValueError, match="model_dir are set both in NPUEstimator and NPURunConfig"):
        NPUEstimator(dense_model_fn, model_dir=str(tmp_path / "a"), config=NPURunConfig(model_dir=str(tmp_path)))


# --- mixed compute: the FusedBatchNormV3 workaround --------------------------------------------------------


@pytest.mark.starts_processes
@pytest.mark.parametrize("keras", [False, True])
def test_mixed_compute_builds_pre_v3_batch_norm(tmp_path, keras):
    _, mixed = train(
        tmp_path / "mixed", model_fn=batchnorm_model_fn, max_steps=3, params={"keras": keras}, mix_compile_mode=True
    )
    assert {"FusedBatchNorm", "FusedBatchNormGrad"} <= mixed.op_types and not mixed.op_types & V3_OPS
    _, plain = train(tmp_path / "plain", model_fn=batchnorm_model_fn, max_steps=3, params={"keras": keras})
    assert V3_OPS <= plain.op_types and "FusedBatchNorm" not in plain.op_types


@pytest.mark.starts_processes
def test_mixed_compute_float16_batch_norm_is_v2(tmp_path):
    _, mixed = train(
        tmp_path, model_fn=batchnorm_model_fn, max_steps=2, params={"dtype": tf.float16}, mix_compile_mode=True
    )
    assert {"FusedBatchNormV2", "FusedBatchNormGradV2"} <= mixed.op_types and not mixed.op_types & V3_OPS


@pytest.mark.starts_processes
def test_training_with_and_without_the_workaround_agrees(tmp_path):
    mixed, _ = train(tmp_path / "mixed", model_fn=batchnorm_model_fn, max_steps=15, params={}, mix_compile_mode=True)
    plain, _ = train(tmp_path / "plain", model_fn=batchnorm_model_fn, max_steps=15, params={})
    for name in mixed.get_variable_names():
        if "batch_normalization" in name or name.startswith("dense"):
            np.testing.assert_allclose(
                mixed.get_variable_value(name), plain.get_variable_value(name), rtol=1e-5, atol=1e-6, err_msg=name
            )


@pytest.mark.starts_processes
def test_the_scripts_own_horizon_works_again(tmp_path):
    def horizon_model_fn(features, labels, mode, params):
        with tf.compat.forward_compatibility_horizon(2019, 5, 1):
            return batchnorm_model_fn(features, labels, mode, params)

    _, recorder = train(tmp_path, model_fn=horizon_model_fn, max_steps=2, params={})
    assert "FusedBatchNorm" in recorder.op_types and not recorder.op_types & V3_OPS


@pytest.mark.starts_processes
def test_npu_scopes_work_inside_model_fn(tmp_path):
    def scoped_model_fn(features, labels, mode):
        with scope.without_npu_compile_scope():
            features = tf.identity(features, name="host_kept")
        with scope.keep_dtype_scope(), scope.npu_stage_scope(0), scope.npu_variable_scope():
            return dense_model_fn(features, labels, mode)

    class AttributeRecorder(tf.compat.v1.train.SessionRunHook):
        def begin(self):
            graph = tf.compat.v1.get_default_graph()
            self.host_kept = graph.get_operation_by_name("host_kept").get_attr("_without_npu_compile")

    recorder = AttributeRecorder()
    estimator = NPUEstimator(scoped_model_fn, config=NPURunConfig(model_dir=str(tmp_path)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", NpuCompatWarning)
        estimator.train(input_fn, max_steps=2, hooks=[recorder])
    assert recorder.host_kept is True and estimator.get_variable_value("global_step") == 2


def test_configuration_holders_map_to_npu_options():
    from npu_bridge_compat.estimator import (
        DynamicInputConfig,
        ExperimentalConfig,
        GraphMemoryOptimizeConfig,
        MemoryConfig,
    )

    config = NPURunConfig(
        memory_config=MemoryConfig(atomic_clean_policy=1, memory_optimization_policy="MemoryPriority"),
        experimental_config=ExperimentalConfig(
            graph_memory_optimize_config=GraphMemoryOptimizeConfig(graph_slice="auto")
        ),
        dynamic_input_config=DynamicInputConfig("data:1,-1", "20;40", 0),
    )
    assert config.npu_options.set_options() == {
        "atomic_clean_policy": 1,
        "memory_optimization_policy": "MemoryPriority",
        "graph_slice": "auto",
        "input_shape": "data:1,-1",
        "dynamic_dims": "20;40",
        "dynamic_node_type": 0,
    }
    assert DynamicInputConfig("data:1,-1", None, 0).npu_options() == {}  # written only with all three
    with pytest.raises(NpuOptionValueError, match=r"recompute should be in \['auto', 'manual'\]"):
        GraphMemoryOptimizeConfig(recompute="always")
    with pytest.raises(NpuOptionValueError, match="graph_memory_optimize_config type must be"):
        ExperimentalConfig(graph_memory_optimize_config="auto")


@pytest.mark.starts_processes
def test_in_out_pair_regions_are_kept_on_the_host_in_the_training_graph(tmp_path):
    class Attributes(tf.compat.v1.train.SessionRunHook):
        def after_create_session(self, session, coord):
            op = session.graph.get_operation_by_name("hidden/MatMul")
            self.kept = op.get_attr("_without_npu_compile")

    pairs = str([[["hidden/MatMul"], ["hidden/BiasAdd"]]])
    recorder = Attributes()
    session_config = npu_config({"in_out_pair": pairs, "in_out_pair_flag": False})  # NPURunConfig has no argument
    estimator = NPUEstimator(
        dense_model_fn,
        config=NPURunConfig(model_dir=str(tmp_path), mix_compile_mode=True, session_config=session_config),
    )
    estimator.train(input_fn, max_steps=2, hooks=[recorder])
    assert recorder.kept is True


def test_npurunconfig_takes_the_older_adapters_auto_tune_mode():
    config = NPURunConfig(auto_tune_mode="RL,GA")  # scripts written for adapter 1.x pass it
    entry = config.npu_plan.report.entry("auto_tune_mode")
    assert entry.value == "RL,GA" and "use aoe_mode" in entry.how
    with pytest.raises(NpuOptionValueError, match='"auto_tune_mode"'):
        NPURunConfig(auto_tune_mode="fastest")
