"""The names ModelZoo's model folders import that TensorFlow 2 moved or removed, imported as a ported program imports
them under `run --tf1` (TF 1.15's own paths, tensorflow.contrib, the standalone Keras 2.2 package) and `run --tf2`
(TF 2.6's paths): each is the object this line has for it, or a stand-in whose NoCounterpartError names what
replaces it. One subprocess per world (tests/scripts/served_names_port.py)."""

import importlib.metadata
import importlib.util
import json
from pathlib import Path

import pytest
from test_legacy import run

pytestmark = pytest.mark.starts_processes

SCRIPT = Path(__file__).parent / "scripts" / "served_names_port.py"
KERAS_2 = "tf_keras" if importlib.util.find_spec("tf_keras") else "keras"


def served(world: str) -> dict:
    result = run(f"--{world}", str(SCRIPT), world)
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def tf1() -> dict:
    return served("tf1")


def test_standalone_keras_2_names_are_the_lines_keras_2(tf1):
    keras = tf1["standalone_keras"]
    assert keras["topology"] == [True, True] and keras["get_source_inputs"] and keras["engine"] == [True, True]
    assert keras["set_session"] == [True, True]  # from-import and `import keras.backend.tensorflow_backend`
    assert keras["batch_normalization"] and keras["deconvolution3d"]
    assert keras["to_categorical"] == [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    assert keras["custom_objects"] == [True, True] and keras["layer_from_config"] == 3
    assert keras["utils"] == ["print_summary", True, True]
    assert keras["adam_v2"] == f"{KERAS_2}.src.optimizers.legacy.adam"  # graph-mode OptimizerV2, as Keras 2.3's
    version = importlib.metadata.version("tf-keras" if KERAS_2 == "tf_keras" else "keras")
    assert keras["version"] == [version, version]


def test_keras_1_merge_raises_naming_the_merge_layers(tf1):
    called, subclassed = tf1["standalone_keras"]["merge"]
    assert called.startswith("keras.layers.merge (standalone Keras) has no counterpart")
    assert subclassed.startswith("keras.layers.Merge (standalone Keras) has no counterpart")
    assert "keras.layers.Add, Multiply, Average, Maximum, Concatenate and Dot" in called


def test_tf_1_15_private_paths_are_todays_objects(tf1):
    names = tf1["tf1"]
    assert names["graph_util"] == [True, True] and names["strategy_context"] == [True, True]
    assert names["impl_keras"] == [True, True, True]  # TensorFlow 1.4's tensorflow.python.keras._impl.keras
    leaky_relu, add, batch_normalization, sgd_module, layer_test = names["keras_modules"]
    assert leaky_relu and add and batch_normalization and layer_test
    assert sgd_module == f"{KERAS_2}.src.optimizers.legacy.gradient_descent"
    assert names["linear"] and names["estimator_export"] and names["layers_module"]
    assert names["like_rnncell"] == [True, False]  # DeepCTR's dynamic_rnn checks its cells with it
    assert names["is_sequence"] == [True, False, [1, 2]]  # TF 1.15's name of nest.is_nested (DeepCTR's RNNs)
    assert names["tracking"] == ["tensorflow.python.trackable.base", "tensorflow.python.trackable.autotrackable"]
    assert names["convert_collection_to_dict"] == "tf_slim.layers.utils"
    assert names["eager"] == [False, "OwnedIterator"]  # graph mode under run --tf1


def test_contrib_tensor_util_checks_shapes(tf1):
    shape, mismatch = tf1["tf1"]["tensor_util"]
    assert shape == [2, 3]
    assert "expected (2, 3), got (3, 2)" in mismatch


def test_removed_tf1_names_raise_naming_their_replacement(tf1):
    names = tf1["tf1"]
    assert "tf.distribute.MirroredStrategy replaces it" in names["multi_gpu_model"]
    assert names["graph_transforms"].startswith("tensorflow.tools.graph_transforms.TransformGraph has no counterpart")
    assert "tf.compat.v1.graph_util" in names["graph_transforms"]


def test_tf_2_6_paths_of_the_tf2_folders_resolve():
    names = served("tf2")["tf2"]
    assert names["serialization"] == ["Dense", 2, "dense_kept"]  # generic_utils' (de)serialize_keras_object
    assert names["dataset_utils"] == [f"{KERAS_2}.src.utils.dataset_utils", True]
    assert "tf.compat.v1.graph_util" in names["graph_transforms"]
