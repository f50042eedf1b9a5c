"""Real ModelZoo models started as their READMEs say, from their own unmodified test/train_*.sh, under `run`, on
small synthetic data written here: Multi-Layer_Perceptron_ID0628 (TF1 session, iris), mnist_convnet_ID2524 (TF2
Keras, npu_device), knowledge_disti_ID2517 (TF2, a subclassed Keras model distilling a teacher) from their
train_full_1p.sh, and LSTM_ID0111 (TF1 session with the adapter's DynamicRNN and hccl broadcasts) from its
train_full_8p.sh with 2 ranks; and MT-NET_ID1283's ModelArts boot file, which copies its data with moxing and
starts its shell script, with its object storage in a folder (`run --obs-root`). Each model folder is copied from
the checkout NPU_BRIDGE_COMPAT_MODELZOO names (a folder holding TensorFlow/ and TensorFlow2/ as the repository
does); without it the tests skip.

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
MT_NET = "TensorFlow/contrib/cv/MT-NET_ID1283_for_TensorFlow"
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


# The flags MT-NET's experiments/sine_modelarts_npu.sh gives main.py (they name its checkpoints' folder) and that
# folder's name.
MT_NET_SINE_FLAGS = (
    "--datasource=sinusoid --meta_batch_size=4 --update_lr=0.01 --norm=None --resume=True --update_batch_size=10 "
    "--use_T=True --use_M=True --share_M=True"
).split()
MT_NET_EXPERIMENT = "cls_5.mbs_4.ubs_10.numstep1.updatelr0.01.temp1.0MTnetmaxpoolnonorm"
MT_NET_RESUMED_AT = 59001  # of the script's 60000 meta-iterations: 999 left


def mt_net_checkpoint_in_obs(code: Path, work: Path, bucket: Path) -> None:
    """The checkpoint of an earlier job, kept in OBS, that the boot file's training resumes from (its script says
    --resume=True): written by the model's own main.py, one meta-iteration on this host, and named as iteration
    59001 of the 60000 its script asks for, so that 999 are left. (Iteration 59001, not 59000: resumed at a
    thousand, the script prints a duration from a start time it sets only at iteration 0, and stops.)"""
    seed = work / "seed"
    started = subprocess.run(
        [sys.executable, "-m", "npu_bridge_compat", "run", str(code / "main.py"), *MT_NET_SINE_FLAGS]
        + ["--metatrain_iterations=1", f"--logdir={seed}", "--chip=npu", "--platform=linux"],
        cwd=work,
        env=ENVIRONMENT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert started.returncode == 0, started.stderr[-3000:]
    kept = bucket / MT_NET_EXPERIMENT
    kept.mkdir(parents=True)
    for suffix in ("index", "data-00000-of-00001"):
        shutil.copy(seed / MT_NET_EXPERIMENT / f"model0.{suffix}", kept / f"model{MT_NET_RESUMED_AT}.{suffix}")
    (kept / "checkpoint").write_text(f'model_checkpoint_path: "model{MT_NET_RESUMED_AT}"\n')


def summaries(events: Path) -> dict[int, dict[str, float]]:
    import tensorflow as tf

    found: dict[int, dict[str, float]] = {}
    for event in tf.compat.v1.train.summary_iterator(str(events)):
        for value in event.summary.value:
            found.setdefault(event.step, {})[value.tag] = value.simple_value
    return found


@pytest.mark.parametrize("form", ["command", "script"])
def test_mt_net_boot_file_copies_with_moxing_and_trains_through_its_shell_script(tmp_path, form):
    """MT-NET's boot_modelarts.py, unmodified, as ModelArts starts it (`python3 boot_modelarts.py --data_url=obs://..
    --train_url=obs://..`), under `run --obs-root DIR`: its moxing copy brings the checkpoint kept in OBS to the
    cache folder, its os.system("bash experiments/sine_modelarts_npu.sh ...") starts main.py, which resumes from it,
    trains the meta-iterations left, and copies its checkpoints and summaries back to OBS with moxing. Started as a
    command (`run -- python3 boot_modelarts.py`) and as a script (`run boot_modelarts.py`). The cache folder's path
    holds no "model": main.py reads the iteration from the checkpoint path after its first "model"."""
    code, work, obs, cache = model_folder(tmp_path, MT_NET), tmp_path / "work", tmp_path / "obs", tmp_path / "cache"
    work.mkdir()  # ModelArts' work folder is not the code's
    mt_net_checkpoint_in_obs(code, work, obs / "bucket" / "ckpt")
    boot = [str(code / "boot_modelarts.py"), "--data_url=obs://bucket/ckpt", "--train_url=obs://bucket/out"]
    boot += [f"--modelarts_data_dir={cache}", f"--modelarts_result_dir={cache}"]  # its result where its data is
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "npu_bridge_compat", "run", "--obs-root", str(obs)]
        + (["--", "python3", *boot] if form == "command" else boot),
        cwd=work,
        env=ENVIRONMENT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    print(f"MT-NET boot file ({form}): {time.monotonic() - began:.0f} s\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"===>>>Files: ['{MT_NET_EXPERIMENT}']" in done.stdout  # the boot file's copy, listed by the boot file
    assert f"Restoring model weights from {cache}/{MT_NET_EXPERIMENT}/model{MT_NET_RESUMED_AT}" in done.stdout
    result = obs / "bucket" / "out" / "result"  # main.py's copy back to --train_url with moxing
    assert "Done initializing, starting training." in next(result.glob("*_npu.log")).read_text()  # the tee'd log
    written = result / MT_NET_EXPERIMENT
    assert (written / "model59999.index").is_file()  # its last meta-iteration's checkpoint
    assert 'model_checkpoint_path: "' in (written / "checkpoint").read_text()
    logged = summaries(next(written.glob("events.out.tfevents.*")))
    assert sorted(logged) == list(range(59100, 60000, 100))  # a summary every 100 meta-iterations
    for values in logged.values():
        losses = [values["metatrain_Pre-update_loss"], values["metatrain_Post-update_loss__step_1"]]
        assert all(np.isfinite(losses)) and min(losses) > 0, values
    import tensorflow as tf

    before = tf.train.load_checkpoint(str(obs / "bucket" / "ckpt" / MT_NET_EXPERIMENT / f"model{MT_NET_RESUMED_AT}"))
    after = tf.train.load_checkpoint(str(written / "model59999"))
    names = sorted(before.get_variable_to_shape_map())
    assert names == sorted(after.get_variable_to_shape_map()) and len(names) >= 6
    assert all(not np.array_equal(before.get_tensor(name), after.get_tensor(name)) for name in names)  # trained
    listed = done.stderr[done.stderr.index("npu_bridge_compat: the Python processes of `") :]
    served = r"  pid \d+ \(of \d+\), run as a tf1 program \(decided from its signs\), exit status 0: python \S+/"
    if form == "command":  # the boot file is the command's first Python process (a long line keeps its script)
        assert re.search(served + r"boot_modelarts\.py .*\n" + served + r"main\.py ", listed)
    else:  # the boot file is `run`'s own process: the list is of the processes it started
        head = r"npu_bridge_compat: the Python processes of `\S+/boot_modelarts\.py --data_url=obs://bucket/ckpt .*`:\n"
        assert re.match(head + served + r"main\.py ", listed)
