"""The two TensorFlow lines (compat.py): the Estimator door where tensorflow-estimator is missing, the Keras a
ported script gets, Keras 2 and Keras 3 trainers, the TF1 layers that Keras 2 implements."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from npu_bridge_compat import compat, estimator_library
from npu_bridge_compat.errors import TensorFlowVersionError
from npu_bridge_compat.keras import NPUCallback

ROOT = Path(__file__).parent.parent
NEEDS_PACKAGE = (
    r"needs tf\.estimator, which TensorFlow 2\.\d+\.\d+ lacks \(removed in 2\.16\): npu_bridge_compat serves "
    r"tensorflow-estimator 2\.15 on it, and it is not installed\. pip install \"tensorflow-estimator==2\.15\.0\""
)


@pytest.mark.without_estimator
def test_the_estimator_door_names_the_tensorflow_it_needs_when_used():
    from npu_bridge_compat.estimator import DumpConfig, NPUEstimator, NPUEstimatorSpec, NPURunConfig
    from npu_bridge_compat.legacy.keras_helpers import model_to_npu_estimator
    from npu_bridge_compat.session import npu_run_config_init

    assert DumpConfig(enable_dump=False).npu_options() == {}  # the holders are plain values, usable anywhere
    for use, name in (
        (lambda: NPURunConfig(iterations_per_loop=10), "NPURunConfig"),
        (lambda: NPUEstimator(lambda features, labels, mode: None), "NPUEstimator"),
        (lambda: NPUEstimatorSpec("train"), "NPUEstimatorSpec"),
        (lambda: npu_run_config_init(), "RunConfig"),
        (lambda: model_to_npu_estimator(keras_model=object()), "NPURunConfig"),
    ):
        with pytest.raises(TensorFlowVersionError, match=f"^{name} {NEEDS_PACKAGE}"):
            use()


def test_stand_in_classes_import_and_refuse_construction(monkeypatch):
    """What the Estimator door derives from where tf.estimator is gone, on any line."""
    monkeypatch.setattr(estimator_library, "estimator_api", lambda: None)
    monkeypatch.setattr(estimator_library, "tensorflow_version", lambda: "2.21.0")
    monkeypatch.setattr(estimator_library, "package_version", lambda: None)
    base = estimator_library.estimator_class("Estimator")

    class Derived(base):
        def __init__(self, *args):
            raise AssertionError("never reached: construction stops first")

    with pytest.raises(TensorFlowVersionError, match=f"^Derived {NEEDS_PACKAGE}"):
        Derived(1, 2)
    monkeypatch.setattr(estimator_library, "tensorflow_version", lambda: "2.15.1")
    with pytest.raises(
        TensorFlowVersionError,
        match=r"takes from the tensorflow-estimator package: pip install "
        r"\"tensorflow-estimator==2\.15\.\*\"",
    ):
        Derived()


@pytest.mark.parametrize(
    "version, expected", [("2.15.1", (2, 15)), ("2.21.0", (2, 21)), ("2.16.0rc1", (2, 16)), ("3", (3, 0))]
)
def test_version_tuple(version, expected):
    assert compat.version_tuple(version) == expected


def run_python(code: str, **environment: str) -> str:
    env = {key: value for key, value in os.environ.items() if key != compat.LEGACY_KERAS_ENV}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT, env={**env, **environment}
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip().splitlines()[-1]


CHOSEN_KERAS = (
    "from npu_bridge_compat.compat import select_keras_2, tf_keras_is_keras_3; select_keras_2(); "
    "import os; print(os.environ.get('TF_USE_LEGACY_KERAS'), tf_keras_is_keras_3())"
)


@pytest.mark.starts_processes
def test_ported_scripts_get_keras_2_on_every_line():
    newer = compat.version_tuple(tf.__version__) > compat.version_tuple(compat.ESTIMATOR_TENSORFLOW)
    assert run_python(CHOSEN_KERAS) == ("1 False" if newer else "None False")
    if newer:  # the user's own choice stands
        assert run_python(CHOSEN_KERAS, TF_USE_LEGACY_KERAS="0") == "0 True"


@pytest.mark.starts_processes
def test_run_tf1_gives_graph_mode_keras_2(tmp_path):
    script = tmp_path / "keras_tf1.py"
    script.write_text(
        "import numpy as np\nimport tensorflow as tf\n"
        "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
        "model.compile(tf.train.GradientDescentOptimizer(0.1), 'mse')\n"
        "model.fit(np.ones([8, 2]), np.ones([8, 1]), epochs=1, verbose=0)\n"
        "print(tf.executing_eagerly(), type(tf.keras.backend.get_session()).__name__)\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "npu_bridge_compat", "run", "--tf1", str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "False Session"  # a graph-mode Keras 2 session


def test_tf1_layers_build_their_variables_by_scope_on_every_line():
    layers = compat.tf1_keras_api("layers")
    with tf.Graph().as_default() as graph:
        with tf.compat.v1.variable_scope("tower"):
            layers.dense(tf.ones([2, 3]), 4)
        assert {v.name for v in tf.compat.v1.global_variables()} == {"tower/dense/kernel:0", "tower/dense/bias:0"}
        assert "MatMul" in {op.type for op in graph.get_operations()}


def test_protobuf_fields_repeated_or_not():
    fields = tf.compat.v1.ConfigProto.DESCRIPTOR.fields_by_name
    assert compat.is_repeated(fields["device_filters"]) and not compat.is_repeated(fields["allow_soft_placement"])


def keras_model(steps_per_execution: int = 1):
    model = tf.keras.Sequential([tf.keras.Input([2]), tf.keras.layers.Dense(1)])
    model.compile(tf.keras.optimizers.SGD(0.1), "mse", steps_per_execution=steps_per_execution)
    return model


class BatchEnds(tf.keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        self.ends = []

    def on_train_batch_end(self, batch, logs=None):
        self.ends.append(batch)


def test_steps_per_execution_in_a_running_fit_on_every_keras():
    """Keras 2 reads a variable per call; Keras 3 reads numbers when fit starts, and is told in on_train_begin."""
    model, ends = keras_model(), BatchEnds()
    data = tf.data.Dataset.from_tensor_slices((np.ones([64, 2], np.float32), np.ones([64, 1], np.float32)))
    model.fit(
        data.batch(4).repeat(),
        steps_per_epoch=8,
        epochs=2,
        callbacks=[NPUCallback(iterations_per_loop=4), ends],
        verbose=0,
    )
    assert ends.ends == [3, 7, 3, 7] and model.optimizer.iterations.numpy() == 16
    assert compat.keras_steps_per_execution(model) == 1


@pytest.mark.needs_keras_3
def test_keras_3_outside_a_fit_says_what_to_compile_with():
    with pytest.raises(TensorFlowVersionError, match="compile the model with steps_per_execution=4 instead"):
        with compat.steps_per_execution_in_fit(keras_model(), 4):
            pass
