"""The Keras door: NPUCallback's steps per call, batch-norm workaround, precision and restored state; helpers."""

import gc
import json
import re
import weakref

import numpy as np
import pytest
import tensorflow as tf
from helpers import dumped_steps, keras_executed_dtypes
from tensorflow.python.eager import context

from npu_bridge_compat import NpuOptionValueError, changes, compat, scope
from npu_bridge_compat import keras as npu_keras
from npu_bridge_compat.compat import keras_steps_per_execution
from npu_bridge_compat.errors import NonFiniteValueError, NpuCompatWarning
from npu_bridge_compat.estimator import NPURunConfig
from npu_bridge_compat.keras import NPUCallback
from npu_bridge_compat.legacy import keras_helpers
from npu_bridge_compat.plan import detect_host
from npu_bridge_compat.plan.platform import BFLOAT16_KERNELS, Support
from npu_bridge_compat.runtime import keras_calls
from npu_bridge_compat.runtime.keras_calls import kept_functions
from npu_bridge_compat.runtime.precision import precision_decisions

FEATURES = np.random.RandomState(0).randn(320, 6).astype(np.float32)
TARGETS = FEATURES[:, :1] * 0.5
V3_OPS = {"FusedBatchNormV3", "FusedBatchNormGradV3"}


def dataset():
    return tf.data.Dataset.from_tensor_slices((FEATURES, TARGETS)).batch(16).repeat()


def model(batch_norm=False, steps_per_execution=None):
    layers = [tf.keras.layers.Dense(4, activation="relu", kernel_initializer=tf.keras.initializers.GlorotUniform(1))]
    if batch_norm:  # fused batch norm needs 4-D inputs
        layers += [tf.keras.layers.Reshape([1, 2, 2]), tf.keras.layers.BatchNormalization(), tf.keras.layers.Flatten()]
    layers.append(tf.keras.layers.Dense(1, kernel_initializer=tf.keras.initializers.GlorotUniform(2)))
    net = tf.keras.Sequential(layers)
    net.compile(tf.keras.optimizers.SGD(0.05), "mse", steps_per_execution=steps_per_execution or 1)
    return net


class Recorder(tf.keras.callbacks.Callback):
    """Counts train-function calls per epoch; keeps the train function the fit called and the grappler options
    its calls carried."""

    def on_epoch_begin(self, epoch, logs=None):
        self.calls = 0

    def on_train_batch_end(self, batch, logs=None):
        self.calls += 1

    def on_train_end(self, logs=None):
        self.train_function = self.model.train_function
        self.rewrite_options = function_rewrite_options()

    @property
    def op_types(self) -> set:
        """The op types of the traced train function (Keras 2, whose train function is a tf.function)."""
        types = set()
        for concrete in self.train_function._list_all_concrete_functions():
            types |= {op.type for op in concrete.graph.get_operations()}
            types |= {node.op for f in concrete.graph._functions.values() for node in f.definition.node_def}
        return types


def fit(net, *callbacks, steps=20, epochs=1):
    recorder = Recorder()
    net.fit(dataset(), steps_per_epoch=steps, epochs=epochs, callbacks=[recorder, *callbacks], verbose=0)
    return recorder


def test_iterations_per_loop_runs_n_steps_per_train_function_call():
    net = model()
    recorder = fit(net, NPUCallback(iterations_per_loop=10), steps=30)
    assert recorder.calls == 3 and net.optimizer.iterations.numpy() == 30
    assert keras_steps_per_execution(net) == 1  # restored
    assert fit(net, steps=30).calls == 30  # a later fit without the callback is back to one step per call


def test_n_steps_per_call_trains_like_single_steps():
    looped, single = model(), model()
    fit(looped, NPUCallback(iterations_per_loop=5), steps=20)
    fit(single, steps=20)
    for a, b in zip(looped.get_weights(), single.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_checkpoints_written_during_the_fit_hold_its_weights_and_the_model_gets_its_own_function_back(tmp_path):
    net = model()
    fit(net, steps=5)  # Keras makes its own train function
    own = net.train_function
    every_epoch = [
        tf.keras.callbacks.ModelCheckpoint(str(tmp_path / "weights-{epoch}.weights.h5"), save_weights_only=True),
        tf.keras.callbacks.ModelCheckpoint(str(tmp_path / "model-{epoch}.keras")),
    ]
    recorder = fit(net, NPUCallback(iterations_per_loop=5), *every_epoch, steps=10, epochs=2)
    assert recorder.calls == 2 and net.train_function is own
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "model-1.keras",
        "model-2.keras",
        "weights-1.weights.h5",
        "weights-2.weights.h5",
    ]
    from_weights = model()
    from_weights(FEATURES[:1])  # built, as loading h5 weights needs
    from_weights.load_weights(str(tmp_path / "weights-2.weights.h5"))
    for loaded in (from_weights, tf.keras.models.load_model(str(tmp_path / "model-2.keras"))):
        for saved, trained in zip(loaded.get_weights(), net.get_weights()):
            np.testing.assert_array_equal(saved, trained)


def test_conflicting_steps_per_execution_is_an_error_naming_both():
    with pytest.raises(
        NpuOptionValueError, match="compiled with steps_per_execution=4 but the NPU options set iterations_per_loop=10"
    ):
        fit(model(steps_per_execution=4), NPUCallback(iterations_per_loop=10))
    assert fit(model(steps_per_execution=10), NPUCallback(iterations_per_loop=10), steps=20).calls == 2


def test_options_are_validated_at_construction():
    with pytest.raises(NpuOptionValueError, match='"iterations_per_loop" must be 1 with "mix_compile_mode" is True'):
        NPUCallback(mix_compile_mode=True, iterations_per_loop=10)
    from helpers import npu_config

    assert NPUCallback(npu_config({"iterations_per_loop": 3})).steps_per_execution == 3


@pytest.mark.needs_keras_2  # Keras 3's BatchNormalization builds no fused batch norm
def test_mixed_compute_traces_pre_v3_batch_norm():
    mixed = fit(model(batch_norm=True), NPUCallback(mix_compile_mode=True), steps=3)
    assert {"FusedBatchNorm", "FusedBatchNormGrad"} <= mixed.op_types and not mixed.op_types & V3_OPS
    plain = fit(model(batch_norm=True), steps=3)
    assert V3_OPS <= plain.op_types


def function_rewrite_options():
    """The grappler options the function calls of this thread carry."""
    from tensorflow.core.protobuf import config_pb2

    serialized = context.context().function_call_options.config_proto_serialized
    return config_pb2.ConfigProto.FromString(serialized).graph_options.rewrite_options


def test_precision_sets_grappler_and_restores_it(avx512_host):
    on = 1  # RewriterConfig.ON
    recorder = fit(model(), NPUCallback(precision_mode="allow_mix_precision_bf16"), steps=2)
    assert recorder.rewrite_options.auto_mixed_precision_onednn_bfloat16 == on
    assert function_rewrite_options().auto_mixed_precision_onednn_bfloat16 != on


def test_keras_mixed_precision_policy_conflicts_with_npu_mixed_precision(avx512_host):
    tf.keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        with pytest.raises(NpuOptionValueError, match="Keras mixed-precision policy is 'mixed_bfloat16'"):
            NPUCallback(precision_mode="allow_mix_precision")
    finally:
        tf.keras.mixed_precision.set_global_policy("float32")


def test_profiling_writes_a_trace_for_tensorboard(tmp_path):
    output = tmp_path / "profile"
    fit(model(), NPUCallback(profiling_mode=True, profiling_options=f'{{"output": "{output}"}}'), steps=3)
    traces = list(output.glob("plugins/profile/*/*.xplane.pb"))
    assert traces and traces[0].stat().st_size > 0


def test_evaluate_and_predict_work_with_the_callback():
    net = model(batch_norm=True)
    callback = NPUCallback(mix_compile_mode=True)
    fit(net, callback, steps=2)
    assert np.isfinite(net.evaluate(dataset(), steps=2, callbacks=[callback], verbose=0))
    assert net.predict(FEATURES[:8], callbacks=[callback], verbose=0).shape == (8, 1)


def test_helpers_single_process():
    optimizer = tf.keras.optimizers.SGD()
    assert npu_keras.npu_keras_optimizer(optimizer) is optimizer
    assert npu_keras.KerasDistributeOptimizer(optimizer) is optimizer
    callbacks = npu_keras.npu_callbacks_append([])
    assert isinstance(callbacks[0], npu_keras.NPUBroadcastGlobalVariablesCallback) and callbacks[0].root_rank == 0


def test_graph_mode_keras_is_pointed_to_the_session_helper():
    with tf.Graph().as_default():  # Keras built in a graph trains through a session, not traced functions
        net = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        net.compile("sgd", "mse")
        with pytest.raises(NpuOptionValueError, match="graph mode .* set_keras_session_npu_config"):
            net.fit(FEATURES, TARGETS, batch_size=16, verbose=0, callbacks=[NPUCallback(iterations_per_loop=1)])


@pytest.mark.needs_keras_2
def test_graph_mode_keras_session_helpers():
    from helpers import npu_config

    session = keras_helpers.set_keras_session_npu_config(npu_config({"precision_mode": "allow_mix_precision"}))
    assert tf.compat.v1.keras.backend.get_session() is session
    assert session._config.graph_options.rewrite_options.custom_optimizers == []
    cleared = keras_helpers.npu_clear_session(npu_config({}))
    assert cleared is not session and tf.compat.v1.keras.backend.get_session() is cleared
    cleared.close()
    session.close()
    tf.keras.backend.clear_session()


@pytest.mark.starts_processes
@pytest.mark.needs_estimator
def test_model_to_npu_estimator_runs_n_steps_per_run(tmp_path):
    keras_2 = tf.keras if not compat.tf_keras_is_keras_3() else pytest.importorskip("tf_keras")  # graph-mode Keras
    inputs = keras_2.Input([6])
    net = keras_2.Model(inputs, keras_2.layers.Dense(1)(inputs))
    net.compile(keras_2.optimizers.SGD(0.05), "mse")
    estimator = keras_helpers.model_to_npu_estimator(
        keras_model=net, config=NPURunConfig(model_dir=str(tmp_path), iterations_per_loop=5)
    )
    estimator.train(lambda: dataset(), max_steps=10)
    assert estimator.get_variable_value("global_step") == 10


def test_session_settings_the_callback_cannot_apply_are_reported():
    from npu_bridge_compat.errors import NpuCompatWarning

    with pytest.warns(
        NpuCompatWarning,
        match=r"NPUCallback does not carry out InterOpThreads\(count=4\).*"
        "Session settings cannot change once TensorFlow runs",
    ):
        NPUCallback(stream_max_parallel_num="DNN_VM_AICPU:4")


@pytest.mark.starts_processes
def test_overflow_detection_stops_fit_at_the_op_producing_nan_and_saves_its_inputs(tmp_path):
    inputs = tf.keras.Input([6])
    outputs = tf.keras.layers.Lambda(lambda x: tf.math.log(x - 10.0, name="shifted_log"))(inputs)  # NaN
    net = tf.keras.Model(inputs, tf.keras.layers.Dense(1)(outputs))
    net.compile("sgd", "mse")
    grappler = tf.config.optimizer.get_experimental_options()
    with pytest.raises(
        NonFiniteValueError,
        match="op '.*shifted_log' produced NaN values in output 0, the first "
        "non-finite output of step 0; its inputs are saved in",
    ):
        fit(net, NPUCallback(enable_exception_dump=1, dump_path=str(tmp_path), precision_mode="force_fp32"), steps=3)
    [saved] = (tmp_path / "exception").glob("*/*shifted_log/input.0.npy")
    np.testing.assert_allclose(np.load(saved), FEATURES[:16] - 10.0)  # the failing step's own input
    # Keras calls no end hook after a failure: the callback undid its changes itself.
    assert "train_step" not in net.__dict__ and keras_steps_per_execution(net) == 1
    assert tf.config.optimizer.get_experimental_options() == grappler
    fit(net, steps=1)  # without the callback, nothing checks
    for run in (net.evaluate, net.predict):  # evaluate and predict are checked too
        with pytest.raises(NonFiniteValueError, match="op '.*shifted_log' produced NaN values"):
            run(dataset(), steps=2, verbose=0, callbacks=[NPUCallback(enable_exception_dump=1)])


@pytest.mark.starts_processes
def test_numeric_checks_pass_a_finite_batch_norm_model():
    net = model(batch_norm=True)  # batch norm's gradient has empty outputs of another runtime rank
    fit(net, NPUCallback(iterations_per_loop=2, enable_exception_dump=1), steps=4)
    assert net.optimizer.iterations.numpy() == 4


def test_dumps_the_selected_steps_from_inside_the_train_function(tmp_path):
    def batch_inputs(step_directory):
        index = json.loads((step_directory / "index.json").read_text())
        entry = next(
            e
            for e in index
            if re.fullmatch(r"(while/)?sequential(_\d+)*/dense(_\d+)*/MatMul", e["op"])
            and e["kind"] == "input"
            and e["slot"] == 0
            and e["shape"] == [16, 6]
        )
        return np.load(step_directory / entry["file"])

    callback = NPUCallback(
        iterations_per_loop=2, enable_dump=True, dump_path=str(tmp_path), dump_step="1|4", dump_mode="input"
    )
    fit(model(), callback, steps=6)
    steps = dumped_steps(tmp_path)
    assert list(steps) == ["step_1", "step_4"]
    for name, k in (("step_1", 1), ("step_4", 4)):  # each step's own batch, from inside the 2-step loop
        np.testing.assert_array_equal(batch_inputs(steps[name]), FEATURES[16 * k : 16 * (k + 1)])
    fit(model(), callback, steps=2)
    assert len(list(tmp_path.glob("*/train"))) == 2  # a second fit dumps beside the first, never over it
    assert not list(tmp_path.rglob("*.partial"))


def test_dumps_turn_xla_off_for_the_callbacks_functions(tmp_path):
    """Keras 3 compiles with XLA by default on GPUs; XLA cannot compile the host callbacks that write dumps."""
    net = tf.keras.Sequential([tf.keras.Input([6]), tf.keras.layers.Dense(1)])
    net.compile(tf.keras.optimizers.SGD(0.05), "mse", jit_compile=True)
    with pytest.warns(NpuCompatWarning, match="jit_compile=True; XLA cannot compile the dumps"):
        fit(net, NPUCallback(enable_dump=True, dump_path=str(tmp_path), dump_step="1"), steps=2)
    assert list(dumped_steps(tmp_path)) == ["step_1"] and net.jit_compile  # the model's own setting is back


class KeptMatMul(tf.keras.layers.Layer):
    def build(self, shape):
        self.kernel = self.add_weight(name="kernel", shape=[shape[-1], 4])

    def call(self, x):
        with scope.keep_dtype_scope():
            return tf.matmul(x, self.kernel, name="kept_matmul")


def executed_dtypes(net, callback) -> dict[str, str]:
    """The dtype of each node of the functions fit executed."""
    return keras_executed_dtypes(lambda: fit(net, callback, steps=2))


@pytest.mark.starts_processes
@pytest.mark.needs_keras_2  # Keras 3 traces its step as a function its train function calls: see the next test
@pytest.mark.skipif(detect_host().cpu_bfloat16 not in BFLOAT16_KERNELS, reason="bfloat16 on a CPU needs AVX-512")
def test_keep_dtype_scope_keeps_its_ops_in_float32():
    inputs = tf.keras.Input([6])
    net = tf.keras.Model(inputs, tf.keras.layers.Dense(1, name="plain")(KeptMatMul()(inputs)))
    net.compile(tf.keras.optimizers.SGD(0.01), "mse")
    dtypes = executed_dtypes(net, NPUCallback(precision_mode="allow_mix_precision"))
    forward = {
        re.sub(r"^model(_\d+)?/", "", name): dtype for name, dtype in dtypes.items() if re.match(r"model(_\d+)?/", name)
    }
    assert forward["plain/BiasAdd"] == "bfloat16"  # the unmarked layer (matmul fused into BiasAdd) converted
    assert forward["kept_mat_mul/kept_matmul"] == "float32"  # the marked matmul not
    with pytest.warns(NpuCompatWarning, match=r"keep_dtype_scope cannot keep \[.*kept_matmul.*steps_per_execution"):
        fit(net, NPUCallback(precision_mode="allow_mix_precision", iterations_per_loop=2), steps=2)


@pytest.mark.starts_processes
@pytest.mark.needs_keras_3
@pytest.mark.skipif(detect_host().cpu_bfloat16 not in BFLOAT16_KERNELS, reason="bfloat16 on a CPU needs AVX-512")
def test_keras_3_says_keep_dtype_scope_cannot_reach_its_nested_step():
    inputs = tf.keras.Input([6])
    net = tf.keras.Model(inputs, tf.keras.layers.Dense(1, name="plain")(KeptMatMul()(inputs)))
    net.compile(tf.keras.optimizers.SGD(0.01), "mse")
    with pytest.warns(NpuCompatWarning, match=r"cannot keep \[.*kept_matmul.*Keras 3's step function.*tf_keras"):
        dtypes = executed_dtypes(net, NPUCallback(precision_mode="allow_mix_precision"))
    [kept] = [dtype for name, dtype in dtypes.items() if name.endswith("/kept_matmul")]
    assert kept == "bfloat16"  # as the warning says


# --- decisions kept per model and function across calls --------------------------------------------------------


@pytest.fixture
def measured_here(assume_host, single_call_runs):
    """Doors plan as on a CPU with native bfloat16, where mixed precision is decided by each function's runs."""
    return assume_host(cpu_bfloat16=Support.NATIVE, reduced_precision="auto")


def precision_trials_of(net) -> int:
    """The mixed-precision trials the model's train functions started under any plan, over all their tracings."""
    return sum(kept.trials for kept in kept_functions(net) if kept.mode == "train")


def fit_until_decided(net, callback_for, fits: int) -> list[int]:
    """`fits` fits of 25 steps (more than a trial takes), each with `callback_for()` (if any); the decisions made
    so far after each."""
    decided = len(precision_decisions())
    made = []
    for _ in range(fits):
        callbacks = [callback for callback in [callback_for()] if callback is not None]
        net.fit(dataset(), steps_per_epoch=25, epochs=1, callbacks=callbacks, verbose=0)
        made.append(len(precision_decisions()) - decided)
    return made


@pytest.mark.parametrize("fresh_callback", [True, False], ids=["a-callback-per-fit", "one-callback"])
def test_a_functions_precision_trial_runs_once_over_several_fits_and_again_after_compile(measured_here, fresh_callback):
    net = model()
    reused = NPUCallback(precision_mode="allow_mix_precision")
    callback_for = (lambda: NPUCallback(precision_mode="allow_mix_precision")) if fresh_callback else lambda: reused
    assert fit_until_decided(net, callback_for, 3) == [1, 1, 1]  # decided in the first fit, kept after
    assert precision_trials_of(net) == 1
    net.evaluate(dataset(), steps=2, callbacks=[callback_for()], verbose=0)
    net.predict(FEATURES[:32], callbacks=[callback_for()], verbose=0)
    assert precision_trials_of(net) == 1  # evaluate and predict have functions (and trials) of their own
    net.compile(tf.keras.optimizers.SGD(0.05), "mse")  # traced anew: a new trial
    assert fit_until_decided(net, callback_for, 2) == [1, 1]
    assert precision_trials_of(net) == 2


def test_a_changed_plan_or_keras_policy_is_a_function_of_its_own(measured_here):
    net = model()
    fit_until_decided(net, lambda: NPUCallback(precision_mode="allow_mix_precision"), 1)
    net.fit(dataset(), steps_per_epoch=2, epochs=1, callbacks=[NPUCallback(precision_mode="force_fp32")], verbose=0)
    plans = {kept.plan.mixed_precision is not None for kept in kept_functions(net) if kept.mode == "train"}
    assert plans == {True, False}


def test_what_is_kept_for_a_model_is_freed_with_it(measured_here):
    net = model()
    callback = NPUCallback(precision_mode="allow_mix_precision")
    fit_until_decided(net, lambda: callback, 1)
    net.predict(FEATURES[:16], callbacks=[callback], verbose=0)
    assert len(kept_functions(net)) == 2
    freed, key = weakref.ref(net), id(net)
    del net
    callback.set_model(None)  # Keras leaves the last model in its callbacks
    gc.collect()
    assert freed() is None and key not in changes.state(keras_calls.KEPT_FUNCTIONS)
