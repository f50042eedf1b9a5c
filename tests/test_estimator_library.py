"""tf.estimator on every line: tensorflow-estimator 2.15 served on TensorFlow 2.16 and later (compat/
estimator_library.py), checkpoints that cross the lines, and an NPURunConfig that changes nothing until an
Estimator takes it."""

import importlib
import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from npu_bridge_compat import changes
from npu_bridge_compat.errors import NpuCompatWarning, TensorFlowVersionError
from npu_bridge_compat.estimator import NPUEstimator, NPURunConfig

ROOT = Path(__file__).parent.parent
CHECKPOINTS = Path(__file__).parent / "data" / "estimator_checkpoints"


def checkpoint_model():
    """The model whose checkpoints tests/data holds (tests/scripts/estimator_checkpoint.py writes them)."""
    path = ROOT / "tests" / "scripts" / "estimator_checkpoint.py"
    spec = importlib.util.spec_from_file_location("estimator_checkpoint", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.starts_processes
@pytest.mark.needs_estimator
@pytest.mark.parametrize("written_on", ["tf2.15", "tf2.21"])
def test_a_checkpoint_written_on_either_line_restores_and_trains_on(tmp_path, written_on):
    model = checkpoint_model()
    model_dir = tmp_path / written_on
    shutil.copytree(CHECKPOINTS / written_on, model_dir)
    kernel = tf.train.load_variable(str(model_dir), "linear/kernel")
    bias = tf.train.load_variable(str(model_dir), "linear/bias")
    estimator = NPUEstimator(model.model_fn, config=NPURunConfig(model_dir=str(model_dir), iterations_per_loop=5))

    def features():
        return tf.data.Dataset.from_tensor_slices(model.FEATURES[:8]).batch(8)

    [*predicted] = estimator.predict(features)
    np.testing.assert_allclose([p["outputs"] for p in predicted], model.FEATURES[:8] @ kernel + bias, rtol=1e-5)
    estimator.train(model.input_fn, steps=5)
    assert estimator.get_variable_value("global_step") == model.STEPS + 5  # resumed at the checkpoint's step
    assert not np.allclose(estimator.get_variable_value("linear/kernel"), kernel)


@pytest.mark.needs_estimator
def test_npurunconfig_changes_nothing_until_a_plain_estimator_takes_it(tmp_path):
    run_config, estimator = tf.estimator.RunConfig, tf.estimator.Estimator
    before = changes.in_force()
    config = NPURunConfig(model_dir=str(tmp_path), iterations_per_loop=4)
    config.replace(save_summary_steps=5)
    run_config.replace(config, model_dir=str(tmp_path / "other"))  # RunConfig's own checks read device_fn too
    assert changes.in_force() == before
    with pytest.warns(NpuCompatWarning, match=r"tf\.estimator\.Estimator does not carry out StepLoop\(iterations=4\)"):
        estimator(lambda features, labels, mode: None, config=config)
    assert not changes.is_replaced(estimator, "__init__")  # the Estimator class is as it was


@pytest.mark.serves_estimator
def test_tpu_only_and_coordinator_paths_raise_naming_the_feature(monkeypatch):
    with pytest.raises(TensorFlowVersionError, match=r"^TPU embeddings \(TPUEstimator's embedding_config_spec\) need"):
        importlib.import_module("tensorflow_estimator.python.estimator.tpu.tpu_estimator").AdagradParameters(0.1)
    monkeypatch.setenv("TF_CONFIG", '{"cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"]}, "task": {}}')
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    with pytest.raises(TensorFlowVersionError, match="distribute coordinator.*npu_bridge_compat launch"):
        tf.estimator.RunConfig(train_distribute=strategy)
    monkeypatch.delenv("TF_CONFIG")
    assert tf.estimator.RunConfig(train_distribute=strategy).train_distribute is strategy  # one machine: as 2.15


@pytest.mark.serves_estimator
def test_an_api_module_that_lost_its_estimator_gets_it_again_when_the_api_is_asked_for():
    # A copy of tensorflow.compat.v1 loaded after the world's install (tf_keras imports it) gets its tf.estimator
    # through a change made at its loading; once that change is undone (a test's end), the world still stands.
    from npu_bridge_compat.estimator_library import estimator_api

    estimator_api()
    given = changes.attribute_change(tf.compat.v1, "estimator")
    if given is not None:
        changes.undo(changes=[given])
    assert not hasattr(tf.compat.v1, "estimator")
    estimator_api()
    assert tf.compat.v1.estimator.tpu.TPUEstimator.__name__ == "TPUEstimator"  # what tf.contrib.tpu derives from


PROGRAM = """
import sys
assert "tensorflow_estimator" not in sys.modules, "served before the program asked"
import numpy as np
import tensorflow as tf
from tensorflow.python.estimator import estimator as estimator_module
from tensorflow.python.estimator.run_config import RunConfig
import tensorflow_estimator

FEATURES = np.random.RandomState(0).randn(64, 3).astype("float32")

def input_fn():
    return tf.data.Dataset.from_tensor_slices((FEATURES, FEATURES.sum(1, keepdims=True))).repeat().batch(8)

def model_fn(features, labels, mode, params):
    outputs = tf.layers.dense(features, 1)
    loss = tf.reduce_mean(tf.square(outputs - labels))
    step = tf.train.get_global_step()
    train_op = tf.train.GradientDescentOptimizer(0.05).minimize(loss, global_step=step)
    return tf.estimator.tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)

model_dir = sys.argv[1]
estimator = tf.estimator.tpu.TPUEstimator(
    model_fn, config=tf.estimator.tpu.RunConfig(model_dir=model_dir), use_tpu=False, train_batch_size=8,
    eval_batch_size=8)
assert isinstance(estimator, estimator_module.Estimator)
assert tensorflow_estimator.estimator.Estimator is tf.estimator.Estimator
tf.estimator.train_and_evaluate(
    estimator,
    tf.estimator.TrainSpec(lambda params: input_fn(), max_steps=6),
    tf.estimator.EvalSpec(lambda params: input_fn(), steps=2, throttle_secs=0),
)
print("global_step", estimator.get_variable_value("global_step"), type(RunConfig()).__name__)
"""


@pytest.mark.starts_processes
@pytest.mark.serves_estimator
def test_a_tf1_estimator_program_runs_under_run_tf1(tmp_path):
    script = tmp_path / "tpu_estimator_port.py"
    script.write_text(textwrap.dedent(PROGRAM))
    result = subprocess.run(
        [sys.executable, "-m", "npu_bridge_compat", "run", "--tf1", str(script), str(tmp_path / "model")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "global_step 6 RunConfig"
