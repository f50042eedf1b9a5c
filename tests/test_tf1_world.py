"""The TF 1.15 world around the adapter: tensorflow.contrib, tensorflow.python.keras, tensorflow.examples, and
`run --tf1` over a whole program."""

import gzip
import importlib
import json
import math
import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from test_legacy import resolve, run

from npu_bridge_compat.imports.program import is_program_file as sees_tf1
from npu_bridge_compat.legacy import install_aliases
from npu_bridge_compat.legacy.tf1 import TF1, NoCounterpartError, Tf1DifferenceWarning, world
from npu_bridge_compat.legacy.tf1.contrib import image, legacy_seq2seq, opt, seq2seq
from npu_bridge_compat.legacy.tf1.contrib.training import HParams
from npu_bridge_compat.legacy.tf1.table import MODULES
from npu_bridge_compat.loss_scale import NPULossScaleOptimizer

HERE = Path(__file__).parent
v1 = tf.compat.v1
pytestmark = pytest.mark.filterwarnings("ignore::npu_bridge_compat.legacy.tf1.Tf1DifferenceWarning")


@pytest.fixture(scope="module", autouse=True)
def tf1_world():
    install_aliases(tf1=True)  # the opt-in from Python: tensorflow.contrib / tensorflow.examples importable


def contrib_names():
    rows = [
        line.split("\t")
        for line in (HERE / "data" / "contrib_names.tsv").read_text().splitlines()
        if not line.startswith("#")
    ]
    return [(int(folders), name) for folders, _, name in rows]


def works(value) -> bool:
    """A resolved name is a working object: not a stand-in, not a module without counterpart."""
    if isinstance(value, world.Unavailable):
        return False
    return not isinstance(value, world.Tf1Module) or TF1.status(value.__name__).status in ("works", "differs")


# --- the table and the name status -----------------------------------------------------------------------------


@pytest.mark.starts_processes
def test_importing_the_package_installs_nothing():
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, npu_bridge_compat.legacy as legacy; "
            "print(any(type(f).__name__ == 'WorldFinder' for f in sys.meta_path), "
            "'tensorflow' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.stdout.split() == ["False", "False"], result.stderr


@pytest.mark.needs_estimator  # contrib.tpu's counterparts are tf.compat.v1.estimator.tpu
def test_every_counterpart_the_table_names_exists():
    """The table's own answers (`table_status`: the module paths TensorFlow 2 has too included)."""
    broken = []
    for path, spec in MODULES.items():
        for name in [*spec.names, *spec.differs]:
            if TF1.table_status(f"tensorflow.{path}.{name}").status not in ("works", "differs"):
                broken.append(f"{path}.{name}")
        if TF1.table_status(f"tensorflow.{path}").status != ("missing" if spec.gone else "works"):
            broken.append(path)
    assert broken == []


@pytest.mark.needs_estimator  # contrib.tpu's counterparts are tf.compat.v1.estimator.tpu
@pytest.mark.needs_keras_2  # contrib.layers' and contrib.rnn's are Keras 2's (tf_keras in-process)
def test_the_most_used_contrib_names_resolve_to_working_objects():
    """All of the 120 most used names work but two (contrib.quantize's graph rewrite; contrib.filter_variables, a
    name in a comment that TF 1.15 had only in contrib.framework); the status agrees everywhere."""
    rows = contrib_names()
    failing, disagreeing = [], []
    for _, name in rows:
        value_works = works(resolve(name))
        if not value_works:
            failing.append(name)
        if value_works != (TF1.status(name).status in ("works", "differs")):
            disagreeing.append(name)
    assert failing == ["tensorflow.contrib.quantize", "tensorflow.contrib.filter_variables"]
    assert disagreeing == []


@pytest.mark.parametrize(
    "name, status, detail",
    [
        ("tensorflow.contrib.layers.xavier_initializer", "works", "tf_slim.layers"),
        ("tensorflow.contrib.tpu", "works", "tf.compat.v1.estimator.tpu"),
        pytest.param(
            "tensorflow.contrib.tpu.TPUEstimator", "differs", "use_tpu=False", marks=pytest.mark.needs_estimator
        ),
        ("tensorflow.contrib.slim.nets.resnet_v1.resnet_v1_50", "works", "tf_slim.nets.resnet_v1.resnet_v1_50"),
        ("tensorflow.contrib.learn.ModeKeys.INFER", "works", "ModeKeys"),
        (
            "tensorflow.contrib.offline_train.python.npu.npu_optimizer.NPUDistributedOptimizer",
            "works",
            "npu_bridge.estimator.npu.npu_optimizer.NPUDistributedOptimizer",
        ),
        ("tensorflow.contrib.quantize.create_training_graph", "missing", "quantization-aware training"),
        ("tensorflow.contrib.graph_editor", "missing", "graph editor"),
        ("tensorflow.contrib.rnn.LSTMBlockCell", "missing", "LSTMCell"),
        (
            "tensorflow.contrib.layers.xavier_initialiser",
            "unknown",
            "did you mean tensorflow.contrib.layers.xavier_init",
        ),
        pytest.param(
            "tensorflow.python.keras.layers.LSTM",
            "works",
            "tf.compat.v1.keras.layers.LSTM",
            marks=pytest.mark.needs_keras_2,
        ),
        pytest.param(
            "tensorflow.python.keras.engine.base_layer.Layer",
            "works",
            "keras.src.engine.base_layer.Layer",
            marks=pytest.mark.needs_keras_2,
        ),
        ("tensorflow.examples.tutorials.mnist.input_data", "works", "local MNIST files"),
        ("tensorflow.examples.tutorials.mnist.input_data.read_data_sets", "differs", "downloads nothing"),
        ("tensorflow.nn.relu", "current", "same name"),
        # a top-level name TensorFlow 2 lacks is tf.compat.v1's under `run --tf1`, or missing where that lacks it too
        ("tensorflow.Session", "works", "tf.Session is tf.compat.v1.Session under `run --tf1`"),
        ("tensorflow.train.NoSuchHook", "missing", f"no NoSuchHook in tensorflow.train (TensorFlow {tf.__version__})"),
        # TF 1.15's private modules that `run --tf1` serves to the program: the table's names
        ("tensorflow.python.util.nest.is_sequence", "works", "nest.is_nested"),
        ("numpy.float", "unknown", "not a TensorFlow name"),
    ],
)
def test_name_status(name, status, detail):
    result = TF1.status(name)
    assert (result.status, detail in result.detail) == (status, True), result
    assert TF1.status(name) is result  # cached: the scan asks thousands of times


# --- stand-ins and warnings ------------------------------------------------------------------------------------


@pytest.mark.needs_keras_2  # contrib.rnn's cells are Keras 2's (tf_keras in-process)
def test_names_without_counterpart_import_and_raise_when_used():
    from tensorflow.contrib.quantize import create_training_graph  # importing is fine

    version = re.escape(tf.__version__)
    with pytest.raises(
        NoCounterpartError,
        match=r"^tensorflow\.contrib\.quantize\.create_training_graph has no "
        rf"counterpart on TensorFlow {version}: .*quantization-aware",
    ):
        create_training_graph(quant_delay=100)
    with pytest.raises(NoCounterpartError, match="NASCell has no counterpart"):

        class Cell(v1.contrib.rnn.NASCell):  # subclassing is using it
            pass

    try:  # an AttributeError as well, so TF2 fallbacks written around tf.contrib keep working
        cell = v1.contrib.rnn.NASCell(8)
    except AttributeError:
        cell = v1.contrib.rnn.LSTMCell(8)
    assert isinstance(cell, v1.nn.rnn_cell.LSTMCell)
    assert not hasattr(create_training_graph, "__wrapped__") and not hasattr(create_training_graph, "_fields")
    with pytest.raises(NoCounterpartError, match="did you mean tensorflow.contrib.layers.xavier_initializer"):
        v1.contrib.layers.xavier_initialiser()
    with pytest.raises(ModuleNotFoundError):  # not a module, as on TF 1.15
        importlib.import_module("tensorflow.contrib.layers.xavier_initializer")
    assert "xavier_initializer" in dir(v1.contrib.layers)
    namespace = {}
    exec("from tensorflow.contrib.layers import *", namespace)  # only names it knows, never a source's imports
    assert "xavier_initializer" in namespace and "tf" not in namespace and "array_ops" not in namespace


def test_a_differing_counterpart_warns_once(monkeypatch):
    monkeypatch.setattr(world.TF1, "warned", set())
    distribute = world.Tf1Module(world.TF1, "tensorflow.contrib.distribute")
    with pytest.warns(
        Tf1DifferenceWarning,
        match=rf"contrib\.distribute\.AllReduceCrossTowerOps on TensorFlow "
        rf"{re.escape(tf.__version__)}: .*agg_small_grads_\* are ignored",
    ) as caught:
        ops = distribute.AllReduceCrossTowerOps("hierarchical_copy", num_packs=2)
        world.Tf1Module(world.TF1, "tensorflow.contrib.distribute").AllReduceCrossTowerOps("nccl")
    assert len(caught) == 1 and isinstance(ops, tf.distribute.HierarchicalCopyAllReduce)
    with pytest.raises(ValueError, match="all_reduce_alg must be one of"):
        distribute.AllReduceCrossTowerOps("ring")


@pytest.mark.needs_estimator  # compares with tf.estimator.ModeKeys
def test_old_adapter_paths_and_loss_scaling_map_onto_this_package():
    from npu_bridge.estimator.npu.npu_optimizer import NPUDistributedOptimizer
    from npu_bridge.hccl import hccl_ops
    from tensorflow.contrib.hccl.python.ops import hccl_ops as old_hccl_ops
    from tensorflow.contrib.offline_train.python.npu import npu_optimizer

    assert npu_optimizer.NPUDistributedOptimizer is NPUDistributedOptimizer
    assert old_hccl_ops.allreduce is hccl_ops.allreduce
    assert v1.contrib.mixed_precision.LossScaleOptimizer is NPULossScaleOptimizer
    assert v1.contrib.learn.ModeKeys.INFER == tf.estimator.ModeKeys.PREDICT == "infer"


# --- run --tf1: the whole program ------------------------------------------------------------------------------


def test_the_user_program_sees_tf1_and_installed_libraries_tf2(tmp_path):
    site = Path(tf.__file__).parent.parent
    assert not sees_tf1(str(site / "tf_slim" / "layers" / "layers.py"))
    assert not sees_tf1(str(Path(importlib.__file__)))  # the standard library
    assert not sees_tf1(str(Path(world.__file__)))  # npu_bridge_compat's own modules
    assert sees_tf1(str(Path(world.__file__).parent.parent / "npu_bridge" / "npu_init.py"))  # re-exports `tf`
    assert sees_tf1(str(tmp_path / "model" / "__init__.py"))


@pytest.mark.starts_processes
def test_the_program_and_its_vendored_libraries_see_tf115s_version_and_installed_libraries_the_real_one(tmp_path):
    """Code that branches on the version (DeepCTR's `if tf.__version__ >= '2.0.0'`, in its vendored deepctr/) takes
    its TF1 branch under `run --tf1`; `run` says so first."""
    (tmp_path / "vendored").mkdir()
    (tmp_path / "vendored" / "__init__.py").write_text(
        "import tensorflow as tf\nBRANCH = 'tf2' if tf.__version__ >= '2.0.0' else 'tf1'\n"
    )
    (tmp_path / "train.py").write_text(
        "import importlib, json, sys\n"
        "import tensorflow as tf\n"
        "from tensorflow import __version__ as imported\n"
        "from tensorflow.version import VERSION\n"
        "import vendored\n"
        "print(json.dumps([tf.__version__, tf.VERSION, tf.version.VERSION, tf.GIT_VERSION, imported, VERSION,\n"
        "                  vendored.BRANCH, importlib.import_module('tensorflow').__version__,\n"
        "                  sys.modules['tensorflow'].version.VERSION, tf.compat.v1.Session.__name__]))\n"
    )
    result = run("--tf1", str(tmp_path / "train.py"), cwd=tmp_path)
    seen = last_json(result)
    assert seen == [*["1.15.5"] * 3, "v1.15.5", "1.15.5", "1.15.5", "tf1", tf.__version__, tf.__version__, "Session"]
    first = next(line for line in result.stderr.splitlines() if line.startswith("npu_bridge_compat:"))
    assert first == (
        "npu_bridge_compat: run --tf1: train.py and the modules of its folder see TensorFlow 1.15's API and version "
        f"(tf.__version__ 1.15.5); installed libraries see TensorFlow {tf.__version__}"
    )


def assert_trained(checkpoint: str, steps: int, losses: list) -> dict:
    """The checkpoint's global step and the loss falling; returns the checkpoint's variable shapes."""
    assert tf.train.load_variable(checkpoint, "global_step") == steps
    assert all(math.isfinite(loss) for loss in losses)
    assert np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5])
    return dict(tf.train.list_variables(checkpoint))


def last_json(result) -> dict:
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.starts_processes
def test_slim_program_trains_checkpoints_and_runs_a_resnet(tmp_path):
    report = last_json(run("--tf1", str(HERE / "scripts" / "tf1_slim_port.py"), str(tmp_path)))
    variables = assert_trained(report["checkpoint"], 40, report["losses"])
    assert variables["conv1/weights"] == [3, 3, 1, 8] and variables["logits/weights"] == [4 * 4 * 8, 2]
    moving_mean = tf.train.load_variable(report["checkpoint"], "conv1/BatchNorm/moving_mean")
    assert np.abs(moving_mean).sum() > 0  # contrib.layers.batch_norm's update ops ran
    assert "conv1/weights/Adam" in variables
    # contrib.slim.nets' ResNet-50 keeps TF 1.15's [batch, 1, 1, classes] logits
    assert (report["resnet_logits"], report["resnet_block4"], report["resnet_finite"]) == (
        [2, 1, 1, 10],
        [2, 2, 2, 2048],
        True,
    )


@pytest.mark.starts_processes
@pytest.mark.needs_estimator  # TPUEstimator is an Estimator
def test_tpu_estimator_program_with_the_old_adapter_path_trains_on_the_host(tmp_path):
    mnist = tmp_path / "mnist"
    write_mnist(mnist, train=72, test=16)
    result = run("--tf1", str(HERE / "scripts" / "tf1_tpu_port.py"), str(tmp_path / "model"), str(mnist))
    report = last_json(result)
    assert report["global_step"] == 30 and (report["train_examples"], report["validation_examples"]) == (64, 8)
    assert report["loss_after"] < 0.5 * report["loss_before"] and report["accuracy_after"] > 0.5
    checkpoint = tf.train.latest_checkpoint(str(tmp_path / "model"))
    assert tf.train.load_variable(checkpoint, "global_step") == 30
    assert dict(tf.train.list_variables(checkpoint))["logits/kernel"] == [784, 10]
    for name in ("TPUEstimator", "CrossShardOptimizer", "read_data_sets"):  # each difference said once
        assert result.stderr.count(f"{name} on TensorFlow {tf.__version__}") == 1, name


@pytest.mark.starts_processes
def test_sibling_package_program_through_a_runpy_launcher(tmp_path):
    """Model code in a package on PYTHONPATH uses TF1 names; the script imports tensorflow.compat.v1 itself."""
    pythonpath = os.pathsep.join([str(HERE / "fixtures" / "tf1_sibling"), os.environ.get("PYTHONPATH", "")])
    result = run(
        "--tf1",
        str(HERE / "scripts" / "tf1_launcher.py"),
        str(tmp_path),
        "num_units=6,steps=50",
        env={"PYTHONPATH": pythonpath},
    )
    report = last_json(result)
    variables = assert_trained(report["checkpoint"], 50, report["losses"])
    # HParams.parse reached the model: LSTM kernels are [input + units, 4 * units] with num_units=6
    assert variables["rnn/multi_rnn_cell/cell_0/lstm_cell/kernel"] == [6 + 6, 24]
    assert variables["rnn/multi_rnn_cell/cell_1/lstm_cell/kernel"] == [6 + 6, 24]
    assert "embeddings/Adam" in variables and "classifier/kernel" in variables
    assert json.loads(report["hparams"])["num_units"] == 6
    assert (report["model_tf"], report["library_tf"], report["floatx"]) == (
        "tensorflow.compat.v1",
        "tensorflow",
        "float32",
    )


# --- HParams ---------------------------------------------------------------------------------------------------


def test_hparams_values_are_typed_by_their_first_value():
    hparams = HParams(learning_rate=0.1, num_layers=2, cell="lstm", use_bias=True, sizes=[8, 4])
    hparams.parse("learning_rate=3,num_layers=5,cell=gru,use_bias=false,sizes=[3, 2,1]")
    assert hparams.values() == {
        "learning_rate": 3.0,
        "num_layers": 5,
        "cell": "gru",
        "use_bias": False,
        "sizes": [3, 2, 1],
    }
    assert type(hparams.learning_rate) is float
    hparams.override_from_dict({"num_layers": 7, "sizes": [1]})
    assert (hparams.num_layers, hparams.sizes) == (7, [1])
    assert json.loads(hparams.to_json()) == hparams.values()
    assert hparams.parse_json('{"cell": "rnn"}').cell == "rnn"
    assert hparams.get("cell", "x") == "rnn" and hparams.get("absent", 3) == 3 and "cell" in hparams
    assert str(hparams).startswith("[('cell', 'rnn')") and repr(hparams).startswith("HParams([")
    hparams.add_hparam("dropout", 0.5)
    hparams.del_hparam("dropout")
    assert "dropout" not in hparams.values()


@pytest.mark.parametrize(
    "call, error, message",
    [
        (
            lambda h: h.parse("num_layers=2.5"),
            ValueError,
            "Could not parse hparam 'num_layers' of type 'int' with value",
        ),
        (lambda h: h.parse("absent=1"), ValueError, "Unknown hyperparameter type for absent"),
        (lambda h: h.parse("num_layers=1,num_layers=2"), ValueError, "Multiple assignments to variable 'num_layers'"),
        (lambda h: h.parse("sizes=1"), ValueError, "Must pass a list for multi-valued parameter: sizes"),
        (lambda h: h.parse("num_layers=[1,2]"), ValueError, "Must not pass a list for single-valued parameter"),
        (lambda h: h.parse("num_layers"), ValueError, "Malformed hyperparameter value: num_layers"),
        (lambda h: h.override_from_dict({"cell": 3}), ValueError, "Could not cast hparam 'cell'"),
        (lambda h: h.set_hparam("num_layers", 2.0), ValueError, "Could not cast hparam 'num_layers'"),
        (lambda h: h.set_hparam("use_bias", 1), ValueError, "Could not cast hparam 'use_bias'"),
        (lambda h: h.set_hparam("absent", 1), KeyError, "absent"),
        (lambda h: h.add_hparam("values", 1), ValueError, "Hyperparameter name is reserved: values"),
        (lambda h: h.add_hparam("empty", []), ValueError, "Multi-valued hyperparameters cannot be empty"),
        (lambda h: h.get("cell", 3), ValueError, "Hparam 'cell' of type"),
    ],
)
def test_hparams_errors(call, error, message):
    with pytest.raises(error, match=message):
        call(HParams(num_layers=2, cell="lstm", use_bias=True, sizes=[8, 4]))


# --- MNIST from local files ------------------------------------------------------------------------------------


def write_mnist(directory: Path, train: int, test: int, compress: bool = True) -> None:
    """Tiny MNIST files: each label lights two rows of its image, so a linear model learns them."""
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.RandomState(0)
    for prefix, count in (("train", train), ("t10k", test)):
        labels = rng.randint(0, 10, count).astype(np.uint8)
        images = (rng.rand(count, 28, 28) * 40).astype(np.uint8)
        for index, label in enumerate(labels):
            images[index, 2 * label : 2 * label + 2] = 250
        for kind, header, payload in (
            ("images-idx3", struct.pack(">IIII", 2051, count, 28, 28), images),
            ("labels-idx1", struct.pack(">II", 2049, count), labels),
        ):
            name = directory / f"{prefix}-{kind}-ubyte" if not compress else directory / f"{prefix}-{kind}-ubyte.gz"
            with gzip.open(name, "wb") if compress else open(name, "wb") as stream:
                stream.write(header + payload.tobytes())


@pytest.mark.starts_processes
@pytest.mark.parametrize("compress", [True, False])
def test_mnist_reads_local_files(tmp_path, compress):
    from tensorflow.examples.tutorials.mnist import input_data

    write_mnist(tmp_path, train=30, test=7, compress=compress)
    data = input_data.read_data_sets(str(tmp_path), one_hot=True, validation_size=10, seed=3)
    assert (data.train.num_examples, data.validation.num_examples, data.test.num_examples) == (20, 10, 7)
    assert data.train.images.shape == (20, 784) and data.train.images.dtype == np.float32
    assert data.train.images.max() <= 1.0 and data.train.labels.shape == (20, 10)
    first, _ = data.train.next_batch(15)
    second, _ = data.train.next_batch(15)  # 5 left in the epoch, 10 from the next, reshuffled one
    assert first.shape == second.shape == (15, 784) and data.train.epochs_completed == 1
    with pytest.raises(ValueError, match="Validation size should be between 0 and 30. Received: 31."):
        input_data.read_data_sets(str(tmp_path), validation_size=31)


def test_mnist_never_downloads(tmp_path):
    from tensorflow.contrib.learn.python.learn.datasets import mnist

    with pytest.raises(FileNotFoundError, match=r"train-images-idx3-ubyte.gz .* not found in .*downloads nothing"):
        mnist.read_data_sets(str(tmp_path))
    (tmp_path / "train-images-idx3-ubyte").write_bytes(struct.pack(">IIII", 1234, 0, 28, 28))
    with pytest.raises(ValueError, match="Invalid magic number 1234 in MNIST image file"):
        mnist.read_data_sets(str(tmp_path))


# --- counterparts written here ---------------------------------------------------------------------------------


def test_image_transforms():
    picture = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(
        image.rotate(picture[None, :3, :3, None], math.pi / 2)[0, :, :, 0], np.rot90(picture[:3, :3])
    )
    moved = image.translate(picture, [1, 0]).numpy()
    np.testing.assert_array_equal(moved[:, 1:], picture[:, :-1])
    assert (moved[:, 0] == 0).all()
    twice = image.compose_transforms(
        image.translations_to_projective_transforms([1, 0]), image.translations_to_projective_transforms([1, 0])
    )
    np.testing.assert_allclose(twice, image.translations_to_projective_transforms([2, 0]))
    colours = np.random.RandomState(0).rand(2, 3, 3).astype(np.float32)
    np.testing.assert_allclose(image.adjust_hsv_in_yiq(colours), colours, atol=1e-4)  # YIQ round trip
    grey = image.adjust_hsv_in_yiq(colours, scale_saturation=0.0).numpy()
    np.testing.assert_allclose(grey[..., 0], grey[..., 1], atol=1e-5)
    with pytest.raises(ValueError, match="interpolation must be 'NEAREST' or 'BILINEAR'"):
        image.transform(picture, [1, 0, 0, 0, 1, 0, 0, 0], interpolation="CUBIC")


def test_sequence_losses_and_tile_batch():
    logits = np.random.RandomState(1).randn(2, 3, 4).astype(np.float32)
    targets = np.array([[0, 1, 2], [3, 2, 1]])
    weights = np.array([[1, 1, 0], [1, 0, 0]], np.float32)
    step_losses = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=targets, logits=logits).numpy() * weights
    assert seq2seq.sequence_loss(logits, targets, weights).numpy() == pytest.approx(step_losses.sum() / 3, rel=1e-5)
    np.testing.assert_allclose(
        seq2seq.sequence_loss(logits, targets, weights, average_across_batch=False),
        step_losses.sum(axis=1) / weights.sum(axis=1),
        rtol=1e-5,
    )
    np.testing.assert_allclose(seq2seq.sequence_loss(logits, targets, weights, False, False), step_losses, rtol=1e-5)
    with pytest.raises(ValueError, match="cannot be set to True at same time"):
        seq2seq.sequence_loss(logits, targets, weights, sum_over_timesteps=True)
    per_example = legacy_seq2seq.sequence_loss_by_example(
        list(logits.transpose(1, 0, 2)), list(targets.T), list(weights.T)
    )
    np.testing.assert_allclose(per_example, step_losses.sum(axis=1) / (weights.sum(axis=1) + 1e-12), rtol=1e-5)
    tiled = seq2seq.tile_batch({"state": tf.constant([[1, 2], [3, 4]])}, 2)["state"].numpy()
    np.testing.assert_array_equal(tiled, [[1, 2], [1, 2], [3, 4], [3, 4]])


def test_lazy_adam_moves_only_the_looked_up_rows_and_adamw_decays():
    table = tf.Variable(np.ones((4, 2), np.float32))
    optimizer = opt.LazyAdamOptimizer(0.1)
    for _ in range(2):
        optimizer.minimize(lambda: tf.reduce_sum(tf.gather(table, [1, 1])), var_list=[table])
    values, m = table.numpy(), optimizer.get_slot(table, "m").numpy()
    np.testing.assert_array_equal(values[[0, 2, 3]], 1.0)
    np.testing.assert_allclose(values[1], 1.0 - 2 * 0.1, rtol=1e-4)  # Adam's first steps move by the rate
    np.testing.assert_array_equal(m[[0, 2, 3]], 0.0)
    weights = tf.Variable([2.0])
    opt.AdamWOptimizer(weight_decay=0.25, learning_rate=0.0).minimize(lambda: weights * 0.0, var_list=[weights])
    assert weights.numpy() == pytest.approx([1.5])


@pytest.mark.needs_keras_2  # contrib.rnn's cells are Keras 2's (tf_keras in-process)
def test_stacked_bidirectional_rnn_names_its_variables_as_tf115():
    with tf.Graph().as_default():
        inputs = v1.placeholder(tf.float32, [2, 5, 3])
        cells = [[v1.nn.rnn_cell.GRUCell(4) for _ in range(2)] for _ in range(2)]
        outputs, states_fw, states_bw = v1.contrib.rnn.stack_bidirectional_dynamic_rnn(*cells, inputs, dtype=tf.float32)
        names = sorted(variable.op.name for variable in v1.trainable_variables())
    assert outputs.shape.as_list() == [2, 5, 8] and len(states_fw) == len(states_bw) == 2
    assert "stack_bidirectional_rnn/cell_1/bidirectional_rnn/bw/gru_cell/candidate/kernel" in names
    with pytest.raises(ValueError, match="Forward and Backward cells must have the same depth"):
        v1.contrib.rnn.stack_bidirectional_dynamic_rnn(cells[0], cells[1][:1], inputs)


@pytest.mark.needs_estimator  # contrib.tpu's counterparts are tf.compat.v1.estimator.tpu
def test_contrib_data_batching_and_cross_shard_optimizer():
    batches = tf.data.Dataset.range(7).apply(v1.contrib.data.batch_and_drop_remainder(3))
    assert [batch.tolist() for batch in batches.as_numpy_iterator()] == [[0, 1, 2], [3, 4, 5]]
    sgd = v1.train.GradientDescentOptimizer(0.1)
    assert v1.contrib.tpu.CrossShardOptimizer(sgd) is sgd  # one shard: nothing to sum across
    with pytest.raises(TypeError, match="CrossShardOptimizer only works with tf.compat.v1.train.Optimizer"):
        v1.contrib.tpu.CrossShardOptimizer(tf.keras.optimizers.SGD())


@pytest.mark.starts_processes
@pytest.mark.parametrize(
    "code, name",
    [
        ("config = tf.ConfigProto()", "tf.ConfigProto"),
        ("class Hook(tf.train.SessionRunHook):\n    pass", "tf.train.SessionRunHook"),
    ],
)
def test_run_as_tf2_says_a_tf1_name_needs_tf1_and_run_alone_decides_tf1(tmp_path, code, name):
    script = tmp_path / "tf1_script.py"
    script.write_text(f"import tensorflow as tf\n{code}\n")
    result = run("--tf2", str(script))  # the user's explicit choice
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"npu_bridge_compat: {name} is TensorFlow 1.15 API: ") and last.endswith(
        f"Run it as a TF 1.15 program: python -m npu_bridge_compat run --tf1 {script} (`scan` lists the files that "
        "need it)."
    )
    assert "Traceback" in result.stderr and "has no attribute" in result.stderr  # the script's own error first
    decided = run(str(script))  # its TF 1.15-only name decides the world
    assert decided.returncode == 0, decided.stderr[-2000:]


@pytest.mark.starts_processes
def test_run_tf1_serves_keras_2_module_paths_of_the_era(tmp_path):
    """A TF 1.15 program's standalone-Keras imports of Keras 2's module paths (keras.layers.convolutional, ...,
    moved under keras.src) resolve from the TF 2.6 table, and its model trains in graph mode."""
    script = tmp_path / "keras_paths.py"
    script.write_text(
        "import numpy as np\nimport tensorflow as tf\nfrom keras.layers.convolutional import Conv2D\n"
        "from keras.layers.advanced_activations import LeakyReLU\nfrom keras.models import Sequential\n"
        "model = Sequential([Conv2D(2, 3, input_shape=(8, 8, 1)), LeakyReLU()])\nmodel.compile('sgd', 'mse')\n"
        "model.fit(np.ones((4, 8, 8, 1)), np.ones((4, 6, 6, 2)), verbose=0)\n"
        "print('trained', type(model.layers[0]).__name__, tf.executing_eagerly())\n"
    )
    result = run("--tf1", str(script))
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == "trained Conv2D False"


@pytest.mark.starts_processes
def test_loss_scale_manager_names_its_variables_as_tf_1_15_did(tmp_path):
    """Scripts fetch 'loss_scale:0' by name (a logging hook) and checkpoints hold TF 1.15's keys."""
    script = tmp_path / "loss_scale_names.py"
    script.write_text(
        "import tensorflow as tf\nfrom npu_bridge.npu_init import *\n"
        "w = tf.get_variable('w', initializer=[1.0, 2.0])\n"
        "manager = ExponentialUpdateLossScaleManager(init_loss_scale=2**10, incr_every_n_steps=2)\n"
        "optimizer = NPULossScaleOptimizer(tf.train.GradientDescentOptimizer(0.1), manager)\n"
        "train = optimizer.minimize(tf.reduce_sum(w * w))\n"
        "with tf.Session() as sess:\n"
        "    sess.run(tf.global_variables_initializer())\n"
        "    for _ in range(2):\n"
        "        sess.run(train)\n"
        "    print(sess.run('loss_scale:0'), sess.run('good_steps:0'), sess.run('bad_steps:0'),\n"
        "          sorted(v.op.name for v in tf.global_variables()))\n"
    )
    result = run("--tf1", str(script))
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "2048.0 0 0 ['bad_steps', 'good_steps', 'loss_scale', 'w']"


@pytest.mark.starts_processes
def test_tf1_private_module_paths_resolve_under_run_tf1():
    result = run("--tf1", str(Path(__file__).parent / "scripts" / "tf1_private_modules_port.py"))
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-5:] == [
        "True True True",
        "2",
        "['cell/bias', 'cell/kernel'] (2, 4)",
        "[[0, 1]] ImageDataGenerator",
        "NoCounterpartError",
    ]


@pytest.mark.starts_processes
def test_standalone_keras_trains_in_graph_mode_under_run_tf1():
    """`import keras` gets the TF 1.15 API of tf.keras's Keras: its optimizers work in graph mode (Keras 2.15's
    new ones raised NotImplementedError in compile)."""
    result = run("--tf1", str(Path(__file__).parent / "scripts" / "tf1_standalone_keras_port.py"))
    assert result.returncode == 0, result.stderr[-3000:]
    eager, optimizer_module = result.stdout.strip().splitlines()[-1].split()
    assert eager == "False" and optimizer_module.endswith("keras.src.optimizers.legacy.adam")


@pytest.mark.starts_processes
def test_tf1_api_modules_imported_by_their_path_are_tf_1_15s(tmp_path):
    """`from tensorflow.nn import rnn_cell` (Tacotron2) and `from tensorflow.summary import FileWriter` (Jasper)
    read TF 1.15's API modules, tf.compat.v1.nn and tf.compat.v1.summary, not TensorFlow 2's of the same path."""
    script = tmp_path / "api_paths.py"
    script.write_text(
        "import tensorflow as tf\n"
        "from tensorflow.nn import rnn_cell\n"
        "from tensorflow.summary import FileWriter\n"
        "from tensorflow.python.framework import constant_op\n"
        "cell = rnn_cell.GRUCell(3)\n"
        "print(rnn_cell is tf.nn.rnn_cell, FileWriter is tf.summary.FileWriter, constant_op.constant(1).dtype.name)\n"
    )
    result = run("--tf1", str(script))
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "True True int32"
