"""The Keras door: NPUCallback's steps per call, batch-norm workaround, precision and restored state; helpers."""

import numpy as np
import pytest
import tensorflow as tf

from npu_bridge_compat import NpuOptionValueError
from npu_bridge_compat import keras as npu_keras
from npu_bridge_compat.estimator import NPURunConfig
from npu_bridge_compat.keras import NPUCallback

FEATURES = np.random.RandomState(0).randn(320, 6).astype(np.float32)
TARGETS = FEATURES[:, :1] * 0.5
V3_OPS = {"FusedBatchNormV3", "FusedBatchNormGradV3"}


def dataset():
    return tf.data.Dataset.from_tensor_slices((FEATURES, TARGETS)).batch(16).repeat()


def model(batch_norm=False, steps_per_execution=None):
    layers = [tf.keras.layers.Dense(4, activation="relu", kernel_initializer=tf.keras.initializers.GlorotUniform(1))]
    if batch_norm:  # fused batch norm needs 4-D inputs
        layers += [tf.keras.layers.Reshape([1, 2, 2]), tf.keras.layers.BatchNormalization(),
                   tf.keras.layers.Flatten()]
    layers.append(tf.keras.layers.Dense(1, kernel_initializer=tf.keras.initializers.GlorotUniform(2)))
    net = tf.keras.Sequential(layers)
    net.compile(tf.keras.optimizers.SGD(0.05), "mse", steps_per_execution=steps_per_execution)
    return net


class Recorder(tf.keras.callbacks.Callback):
    """Counts train-function calls per epoch and collects the op types of the traced train function."""

    def on_epoch_begin(self, epoch, logs=None):
        self.calls = 0

    def on_train_batch_end(self, batch, logs=None):
        self.calls += 1

    def on_train_end(self, logs=None):
        self.op_types = set()
        for concrete in self.model.train_function._list_all_concrete_functions():
            self.op_types |= {op.type for op in concrete.graph.get_operations()}
            self.op_types |= {node.op for f in concrete.graph._functions.values()
                              for node in f.definition.node_def}
        self.grappler = tf.config.optimizer.get_experimental_options()


def fit(net, *callbacks, steps=20, epochs=1):
    recorder = Recorder()
    net.fit(dataset(), steps_per_epoch=steps, epochs=epochs, callbacks=[recorder, *callbacks], verbose=0)
    return recorder


def test_iterations_per_loop_runs_n_steps_per_train_function_call():
    net = model()
    recorder = fit(net, NPUCallback(iterations_per_loop=10), steps=30)
    assert recorder.calls == 3 and net._train_counter.numpy() == 30
    assert net._steps_per_execution.numpy() == 1  # restored
    assert fit(net, steps=30).calls == 30  # a later fit without the callback is back to one step per call


def test_n_steps_per_call_trains_like_single_steps():
    looped, single = model(), model()
    fit(looped, NPUCallback(iterations_per_loop=5), steps=20)
    fit(single, steps=20)
    for a, b in zip(looped.get_weights(), single.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_conflicting_steps_per_execution_is_an_error_naming_both():
    with pytest.raises(NpuOptionValueError, match="compiled with steps_per_execution=4 but the NPU options set "
                                                  "iterations_per_loop=10"):
        fit(model(steps_per_execution=4), NPUCallback(iterations_per_loop=10))
    assert fit(model(steps_per_execution=10), NPUCallback(iterations_per_loop=10), steps=20).calls == 2


def test_options_are_validated_at_construction():
    with pytest.raises(NpuOptionValueError, match='"iterations_per_loop" must be 1 with "mix_compile_mode" is True'):
        NPUCallback(mix_compile_mode=True, iterations_per_loop=10)
    from helpers import npu_config

    assert NPUCallback(npu_config({"iterations_per_loop": 3})).steps_per_execution == 3


def test_mixed_compute_traces_pre_v3_batch_norm():
    mixed = fit(model(batch_norm=True), NPUCallback(mix_compile_mode=True), steps=3)
    assert {"FusedBatchNorm", "FusedBatchNormGrad"} <= mixed.op_types and not mixed.op_types & V3_OPS
    plain = fit(model(batch_norm=True), steps=3)
    assert V3_OPS <= plain.op_types


def test_precision_sets_grappler_and_restores_it():
    before = tf.config.optimizer.get_experimental_options()
    recorder = fit(model(), NPUCallback(precision_mode="allow_mix_precision_bf16"), steps=2)
    assert recorder.grappler["auto_mixed_precision_onednn_bfloat16"] is True
    assert tf.config.optimizer.get_experimental_options().get("auto_mixed_precision_onednn_bfloat16", False) == \
        before.get("auto_mixed_precision_onednn_bfloat16", False)


def test_keras_mixed_precision_policy_conflicts_with_npu_mixed_precision():
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


def test_graph_mode_keras_session_helpers():
    from helpers import npu_config

    session = npu_keras.set_keras_session_npu_config(npu_config({"precision_mode": "allow_mix_precision"}))
    assert tf.compat.v1.keras.backend.get_session() is session
    assert session._config.graph_options.rewrite_options.custom_optimizers == []
    cleared = npu_keras.npu_clear_session(npu_config({}))
    assert cleared is not session and tf.compat.v1.keras.backend.get_session() is cleared
    cleared.close()
    session.close()
    tf.keras.backend.clear_session()


def test_model_to_npu_estimator_runs_n_steps_per_run(tmp_path):
    inputs = tf.keras.Input([6])
    net = tf.keras.Model(inputs, tf.keras.layers.Dense(1)(inputs))
    net.compile(tf.keras.optimizers.SGD(0.05), "mse")
    estimator = npu_keras.model_to_npu_estimator(
        keras_model=net, config=NPURunConfig(model_dir=str(tmp_path), iterations_per_loop=5))
    estimator.train(lambda: dataset(), max_steps=10)
    assert estimator.get_variable_value("global_step") == 10


def test_session_settings_the_callback_cannot_apply_are_reported():
    from npu_bridge_compat.errors import NpuCompatWarning

    with pytest.warns(NpuCompatWarning, match="cannot apply session settings .*inter_op_parallelism_threads"):
        NPUCallback(stream_max_parallel_num="DNN_VM_AICPU:4")


def test_overflow_detection_stops_fit_at_the_op_producing_nan():
    inputs = tf.keras.Input([6])
    outputs = tf.keras.layers.Lambda(lambda x: tf.math.log(x - 10.0, name="shifted_log"))(inputs)  # NaN
    net = tf.keras.Model(inputs, tf.keras.layers.Dense(1)(outputs))
    net.compile("sgd", "mse")
    with pytest.raises(tf.errors.InvalidArgumentError, match="(?s)Detected Infinity or NaN.*shifted_log"):
        fit(net, NPUCallback(enable_exception_dump=1), steps=1)
    fit(model(), steps=1)  # the checks are off again after the callback's fit
