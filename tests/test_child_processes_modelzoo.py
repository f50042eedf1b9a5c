"""Real ModelZoo models started as their READMEs say, from their own unmodified test/train_*.sh, under `run`, on
small synthetic data written here: Multi-Layer_Perceptron_ID0628 (TF1 session, iris), mnist_convnet_ID2524 (TF2
Keras, npu_device), knowledge_disti_ID2517 (TF2, a subclassed Keras model distilling a teacher) from their
train_full_1p.sh, and LSTM_ID0111 (TF1 session with the adapter's DynamicRNN and hccl broadcasts) from its
train_full_8p.sh with 2 ranks. Each model folder is copied from the checkout NPU_BRIDGE_COMPAT_MODELZOO names (a
folder holding TensorFlow/ and TensorFlow2/ as the repository does); without it the tests skip.

The 8p ranks' final weights are read by the user's own sitecustomize (which `run`'s hook chains to): it saves the
trainable variables of each session as it closes, so that the ranks' weights can be compared without touching the
model's files."""

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import loopback_port_block
from test_distributed_ranks import ENVIRONMENT

MODELZOO = os.environ.get("NPU_BRIDGE_COMPAT_MODELZOO", "")
MLP = "TensorFlow/built-in/cv/image_classification/Multi-Layer_Perceptron_ID0628_for_TensorFlow"
LSTM = "TensorFlow/built-in/nlp/LSTM_ID0111_for_TensorFlow"
CONVNET = "TensorFlow2/built-in/keras_sample/cv/mnist_convnet_ID2524_for_TensorFlow2.X"
DISTILLATION = "TensorFlow2/built-in/keras_sample/cv/knowledge_disti_ID2517_for_TensorFlow2.X"
TIMEOUT_S = 1800

pytestmark = [
    pytest.mark.skipif(not MODELZOO, reason="NPU_BRIDGE_COMPAT_MODELZOO names no ModelZoo-TensorFlow checkout"),
    pytest.mark.starts_processes,
]

# Saves each session's trainable variables when it closes, to $WEIGHTS_DIR/<RANK_ID>.npz: a test's observer,
# installed after TensorFlow's session module loads (the program's `run` chooses TensorFlow's Keras first).
WEIGHTS_OBSERVER = """
import importlib.abc, importlib.machinery, os, sys

class _AfterSessionModule(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "tensorflow.python.client.session":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        run_module = spec.loader.exec_module

        def exec_module(module):
            run_module(module)
            close = module.BaseSession.close

            def close_saving_weights(session):
                import numpy as np
                import tensorflow as tf

                with session.graph.as_default():
                    variables = tf.compat.v1.trainable_variables()
                if variables and not session._closed:
                    values = session.run(variables)
                    np.savez(os.path.join(os.environ["WEIGHTS_DIR"], os.environ.get("RANK_ID", "0") + ".npz"),
                             **{v.name: value for v, value in zip(variables, values)})
                close(session)

            module.BaseSession.close = close_saving_weights

        spec.loader.exec_module = exec_module
        return spec

if os.environ.get("WEIGHTS_DIR"):
    sys.meta_path.insert(0, _AfterSessionModule())
"""


def model_folder(tmp_path: Path, path: str) -> Path:
    source = Path(MODELZOO) / path
    if not source.is_dir():
        pytest.skip(f"{source} is not in the ModelZoo checkout")
    target = tmp_path / source.name
    shutil.copytree(source, target)
    return target


def started(folder: Path, script: str, *arguments: str, run_flags: tuple = (), **environment: str):
    """`python -m npu_bridge_compat run test/SCRIPT ARGS` from the model's test/ folder, as its README says."""
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "npu_bridge_compat", "run", *run_flags, script, *arguments],
        cwd=folder / "test",
        env={**ENVIRONMENT, "ASCEND_DEVICE_ID": "0", **environment},
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    print(f"{folder.name} {script}: {time.monotonic() - began:.0f} s\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


def iris(folder: Path) -> None:
    names = ("Iris-setosa", "Iris-versicolor", "Iris-virginica")
    generator = np.random.default_rng(0)
    for name, count in (("iris.train", 90), ("iris.test", 30)):
        labels = generator.integers(0, 3, count)
        features = generator.normal(size=(count, 4)) + labels[:, None] * 1.5
        lines = [",".join(f"{value:.2f}" for value in row) + f",{names[label]}" for row, label in zip(features, labels)]
        (folder / name).write_text("\n".join(lines) + "\n")


def test_multilayer_perceptron_trains_from_its_own_train_full_1p_sh(tmp_path):
    model, data = model_folder(tmp_path, MLP), tmp_path / "data"
    data.mkdir()
    iris(data)
    script = (model / "mlp.py").read_text()
    done = started(model, "train_full_1p.sh", f"--data_path={data}", "--train_epochs=300", "--display_steps=10")
    log = (model / "test" / "output" / "0" / "train_0.log").read_text()
    assert done.returncode == 0, log[-3000:]
    losses = [float(value) for value in re.findall(r"loss: ([\d.]+)", log)]
    assert len(losses) >= 3 and losses[-1] < losses[0], log[-3000:]
    assert re.search(r"accuracy: [\d.]+", log)
    assert (model / "mlp.py").read_text() == script  # its script's own sed edits undone by the script
    assert re.search(r"run as a tf1 program \(decided from its signs\), exit status 0: python mlp\.py", done.stderr)


def lstm_data(folder: Path) -> None:
    generator = np.random.default_rng(0)
    np.save(folder / "wordVectors.npy", generator.normal(size=(400, 50)).astype(np.float32))
    np.save(folder / "idsMatrix.npy", generator.integers(0, 400, (25000, 250)).astype(np.int32))


@pytest.mark.needs_estimator
def test_lstm_trains_two_ranks_from_its_own_train_full_8p_sh(tmp_path):
    model, data, weights = model_folder(tmp_path, LSTM), tmp_path / "data", tmp_path / "weights"
    user_site = tmp_path / "user_site"
    for folder in (data, weights, user_site):
        folder.mkdir()
    lstm_data(data)
    (user_site / "sitecustomize.py").write_text(WEIGHTS_OBSERVER)
    done = started(
        model,
        "train_full_8p.sh",
        f"--data_path={data}",
        run_flags=("--ranks", "2"),
        WEIGHTS_DIR=str(weights),
        PYTHONPATH=os.pathsep.join([str(user_site), ENVIRONMENT["PYTHONPATH"]]),
        NPU_BRIDGE_COMPAT_PORT=str(loopback_port_block(2)),
    )
    logs = [(model / "test" / "output" / str(rank) / f"train_{rank}.log").read_text() for rank in range(2)]
    assert done.returncode == 0, done.stderr[-3000:] + logs[0][-3000:]
    for log in logs:
        steps = re.findall(r"training! Step: (\d+) Training loss: ([\d.]+)", log)
        assert [int(step) for step, _ in steps] == list(range(100, 1001, 100)), log[-3000:]
    first, second = np.load(weights / "0.npz"), np.load(weights / "1.npz")
    assert sorted(first.files) == sorted(second.files) and len(first.files) >= 3
    for name in first.files:
        np.testing.assert_array_equal(first[name], second[name], err_msg=name)
    assert len(re.findall(r"run as a tf1 program .*, exit status 0: python train\.py", done.stderr)) == 2
    assert len(re.findall(r"left out \(--ranks\), exit status 0: python train\.py", done.stderr)) == 6


def mnist(folder: Path, train: int = 256, test: int = 64) -> None:
    """mnist.npz as keras.datasets writes it: digits drawn as a bright square whose row is the label."""
    generator = np.random.default_rng(0)
    images, labels = [], []
    for count in (train, test):
        digits = generator.integers(0, 10, count)
        pictures = generator.integers(0, 40, (count, 28, 28)).astype(np.uint8)
        for picture, digit in zip(pictures, digits):
            picture[2 + 2 * digit : 6 + 2 * digit, 8:20] = 255
        images.append(pictures)
        labels.append(digits.astype(np.uint8))
    np.savez(folder / "mnist.npz", x_train=images[0], y_train=labels[0], x_test=images[1], y_test=labels[1])


def test_mnist_convnet_tf2_trains_from_its_own_train_full_1p_sh(tmp_path):
    model, data = model_folder(tmp_path, CONVNET), tmp_path / "data"
    data.mkdir()
    mnist(data)
    done = started(model, "train_full_1p.sh", f"--data_path={data}")
    log = (model / "test" / "output" / "0" / "train_0.log").read_text()
    assert done.returncode == 0, log[-3000:]
    assert re.findall(r"Epoch (\d+)/50", log) == [str(epoch) for epoch in range(1, 51)], log[-3000:]
    losses = [float(value) for value in re.findall(r" - loss: ([\d.]+(?:e-?\d+)?)", log)]
    assert len(losses) == 50 and losses[-1] < losses[0] / 2, losses
    assert float(re.search(r"Test accuracy: ([\d.]+)", log)[1]) > 0.5
    assert (model / "mnist_convnet.index").exists()  # its weights, saved where the script saves them
    assert re.search(
        r"run as a tf2 program \(decided from its signs\), exit status 0: python mnist_convnet\.py", done.stderr
    )


def test_knowledge_distillation_tf2_trains_from_its_own_train_full_1p_sh(tmp_path):
    model, data = model_folder(tmp_path, DISTILLATION), tmp_path / "data"
    data.mkdir()
    mnist(data)
    done = started(model, "train_full_1p.sh", f"--data_path={data}")
    log = (model / "test" / "output" / "0" / "train_0.log").read_text()
    assert done.returncode == 0, log[-3000:]
    # The teacher's 5 epochs, then the distiller's 3 (the student learning from the teacher), then the student's
    # own 3 from scratch, each fit followed by its evaluation.
    assert re.findall(r"Epoch (\d+/\d+)", log) == [f"{e}/5" for e in range(1, 6)] + [f"{e}/3" for e in (1, 2, 3)] * 2
    student = [float(value) for value in re.findall(r"student_loss: ([\d.]+)", log)]
    assert len(student) == 4 and student[2] < student[0], student  # 3 epochs, then the evaluation
    accuracies = [float(value) for value in re.findall(r"2/2 - .* sparse_categorical_accuracy: ([\d.]+)", log)]
    assert len(accuracies) == 3 and min(accuracies) > 0.5, accuracies
    assert re.search(
        r"run as a tf2 program \(decided from its signs\), exit status 0: python knowledge_distillation\.py",
        done.stderr,
    )
