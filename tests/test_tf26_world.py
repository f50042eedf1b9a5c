"""The TF 2.6 world of TF2 programs (`run` without --tf1), and tf_slim under `run --tf1`, on both lines."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_legacy import run

from npu_bridge_compat.legacy.tf26 import TF26
from npu_bridge_compat.legacy.tf26.table import MODULES
from npu_bridge_compat.scan import scan
from npu_bridge_compat.scan.report import Category

HERE = Path(__file__).parent


def last_json(result: subprocess.CompletedProcess) -> dict:
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.starts_processes
def test_importing_the_world_installs_nothing():
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, npu_bridge_compat.legacy.tf26; "
            "print(any(type(f).__name__ == 'WorldFinder' for f in sys.meta_path), 'tensorflow' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.stdout.split() == ["False", "False"], result.stderr


@pytest.fixture(scope="module")
def tf26_port(tmp_path_factory):
    result = run(str(HERE / "scripts" / "tf26_port.py"), str(tmp_path_factory.mktemp("tf26")))
    return last_json(result), result.stderr


@pytest.mark.starts_processes
def test_a_tf26_program_gets_keras_2_and_its_moved_modules(tf26_port):
    report, _ = tf26_port
    assert report["keras_is_tf_keras"]  # `import keras` is the Keras of tf.keras (tf_keras from TensorFlow 2.16)
    assert report["keras_version"].startswith("2.")
    assert report["epsilon"] == pytest.approx(1e-7)
    assert report["cifar"] == [[2, 3, 32, 32], [3, 7]]
    assert report["one_hot"] == [[0.0, 1.0, 0.0]]
    assert report["lstm"] and report["in_scope"] and report["trackable"]
    assert report["strategy"] == "_DefaultDistributionStrategy"
    assert report["converted"] == [1.5]  # ops.convert_to_tensor_v2_with_dispatch, moved out of ops in 2.13


@pytest.mark.starts_processes
def test_ported_dropout_patch_and_optimizer_v2_subclass_train(tf26_port):
    report, _ = tf26_port
    assert report["dropout_calls"] >= 1  # keras.layers.core.Dropout.call, patched by the script, ran in fit
    assert report["optimizer_v2"]  # tf.keras.optimizers.Adam is an OptimizerV2, as in TF 2.6
    # the subclass' _prepare_local halves _decayed_lr: one step of 0.2 / 2 on a gradient of 8 per weight
    assert report["step_change"] == pytest.approx(0.8, abs=0.05)
    assert report["loss_finite"]


@pytest.mark.starts_processes
def test_experimental_mixed_precision_maps_and_says_what_differs(tf26_port):
    report, stderr = tf26_port
    assert report["policy"] == ["mixed_float16", "float16"]
    assert report["loss_scale"] == [128.0, False]
    assert stderr.count("Tf26DifferenceWarning: keras.mixed_precision.experimental.LossScaleOptimizer") == 1


@pytest.mark.starts_processes
def test_a_name_without_counterpart_imports_and_says_why_when_used(tf26_port):
    report, _ = tf26_port
    assert report["no_counterpart"] == (
        f"tensorflow.python.keras.utils.multi_gpu_model (TF 2.6) has no counterpart on TensorFlow "
        f"{__import__('tensorflow').__version__}: removed in TensorFlow 2.4; tf.distribute.MirroredStrategy "
        "replaces it."
    )


@pytest.mark.parametrize(
    "name, status, detail",
    [
        ("keras.utils.control_flow_util.smart_cond", "works", ".src.utils.control_flow_util.smart_cond"),
        ("keras.layers.core.Dropout", "works", ".src.layers.core.Dropout"),
        ("keras.optimizer_v2.optimizer_v2.OptimizerV2", "works", ".src.optimizers.legacy.optimizer_v2.OptimizerV2"),
        ("tensorflow.python.training.tracking.tracking.AutoTrackable", "works", "autotrackable.AutoTrackable"),
        ("tensorflow.keras.mixed_precision.experimental.Policy", "differs", "takes no loss_scale"),
        ("tensorflow.python.keras.utils.multi_gpu_model", "missing", "removed in TensorFlow 2.4"),
        ("keras.wrappers.scikit_learn.KerasClassifier", "missing", "scikeras"),
        ("tensorflow.nn.relu", "current", "same name"),
    ],
)
def test_name_status(name, status, detail):
    found = TF26.status(name)
    assert (found.status, detail in found.detail) == (status, True), found


def test_every_module_of_the_table_resolves_or_says_why():
    """Each is this line's own module (where it kept it), a counterpart, or gone with a reason where it is gone."""
    expected = {True: ("missing", "current"), False: ("works", "current")}
    broken = [path for path, spec in MODULES.items() if TF26.status(path).status not in expected[bool(spec.gone)]]
    assert broken == []


def test_scan_reports_tf26_names(tmp_path):
    script = tmp_path / "npu_convert_dropout.py"
    script.write_text(
        "from keras.utils import control_flow_util\nimport tensorflow as tf\n"
        "tf.keras.mixed_precision.experimental.set_policy('mixed_float16')\n"
    )
    findings = {f.name: f for f in scan([str(script)], workers=1).scripts[0].findings if f.category is Category.TF26}
    assert findings["keras.utils.control_flow_util"].outcome == "works under run"
    assert findings["tensorflow.keras.mixed_precision.experimental.set_policy"].line == 3


@pytest.mark.starts_processes
def test_tf_slim_batch_norm_with_a_tensor_is_training():
    report = last_json(run("--tf1", str(HERE / "scripts" / "tf1_slim_tensor_training_port.py")))
    assert report["training_mean"] < 1e-5  # normalized with the batch's statistics
    assert report["training_std"] == pytest.approx([1.0] * 3, abs=1e-2)
    # inference reads the moving statistics after one update of decay 0.5 from mean 0 / variance 1: the batch's
    # mean is 4.5 + j in column j and its unbiased variance 15, so mean 2.25 + j / 2 and variance 8
    expected = [(j - (2.25 + j / 2)) / (8 + 0.001) ** 0.5 for j in range(3)]
    assert report["inference_first_row"] == pytest.approx(expected, abs=1e-4)
