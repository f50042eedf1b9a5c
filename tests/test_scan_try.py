"""`scan --try`: every entry script of a small tree started under `run --help`, isolated, and classified.

Most scripts here do not import TensorFlow (a trial then takes about a second); the few that must (adapter and
TensorFlow names) live in a tree of their own, tried with a longer time limit.
"""

import importlib.util
import io
import json
import os
import textwrap
import time
from pathlib import Path

import pytest

from npu_bridge_compat.cli import EXIT_FAILED_CHECK, main
from npu_bridge_compat.legacy.era.table import NO_SETUPTOOLS
from npu_bridge_compat.scan import render_trial_json, render_trial_text
from npu_bridge_compat.scan.progress import ProgressBar
from npu_bridge_compat.scan.trial import (
    TrialOutcome,
    classify,
    end_marked_processes,
    entry_scripts,
    launch_command,
    launch_scripts,
    namespace_refusal,
    try_entry_scripts,
)
from npu_bridge_compat.scan.trial_child import describe_exception

# Every trial is a process of its own (forked by the warm starter, or a fresh interpreter).
pytestmark = pytest.mark.starts_processes

# The hanging script's cost; the others end in a few seconds (TensorFlow starts slowly on a loaded machine).
QUICK_LIMIT_S = 20.0
NAMESPACES = namespace_refusal() is None
needs_namespaces = pytest.mark.skipif(not NAMESPACES, reason=f"user namespaces refused here: {namespace_refusal()}")

QUICK_TREE = {
    "models/resnet/train.py": """
        import argparse, os, socket
        if __name__ == "__main__":
            expected = {"RANK_SIZE": "1", "RANK_ID": "0", "DEVICE_ID": "0", "ASCEND_DEVICE_ID": "0"}
            if any(os.environ.get(name) != value for name, value in expected.items()):
                raise LookupError("not the single-device environment")
            if os.getcwd() != os.path.dirname(os.path.abspath(__file__)):
                raise LookupError("not started in its own folder")
            interfaces = [name for _, name in socket.if_nameindex()]
            if os.environ.get("EXPECT_NO_NETWORK") and interfaces != ["lo"]:
                raise ConnectionError(f"network interfaces {interfaces}")
            argparse.ArgumentParser().parse_args()
    """,
    "models/resnet/model.py": "LAYERS = 50\n",  # not an entry script: never started
    "models/yolo/detect.py": """
        import cv2
        if __name__ == "__main__":
            pass
    """,
    "models/yolo/flags_by_hand.py": """
        import sys
        from absl import flags
        flags.DEFINE_integer("batch_size", 8, "images per step")
        if __name__ == "__main__":
            flags.FLAGS(sys.argv)  # parsed by hand: --help is a flag it does not know
    """,
    "models/yolo/export.py": """
        import moxing as mox
        from absl import app
        app.run(lambda argv: None)
    """,
    "models/bert/run.py": """
        import resnet_blocks
        if __name__ == "__main__":
            pass
    """,
    "models/common/resnet_blocks.py": "DEPTH = 3\n",
    "models/detection/detection_lib/__init__.py": "ANCHORS = 9\n",
    "models/detection/tools/train.py": """
        from detection_lib import ANCHORS  # a package of the project, in a folder above (as its run script sets up)
        if __name__ == "__main__":
            pass
    """,
    "models/bert/broken.py": """
        if __name__ == "__main__":
            print("unclosed"
    """,
    "models/bert/reads_config.py": """
        CONFIG = open("configs/bert.yaml").read()
        if __name__ == "__main__":
            pass
    """,
    "models/detection/protos/__init__.py": "",
    "models/detection/protos/anchors.proto": "message Anchors {}\n",
    "models/detection/export.py": """
        from protos import anchors_pb2  # protoc generates it: a setup step, not run here
        if __name__ == "__main__":
            pass
    """,
    "models/gan/package/__main__.py": """
        from . import layers  # run as `python -m package`, not as a file
        if __name__ == "__main__":
            pass
    """,
    "models/gan/package/layers.py": "DEPTH = 4\n",
    "models/gan/hangs.py": """
        import time
        if __name__ == "__main__":
            time.sleep(600)
    """,
    "models/gan/crashes.py": """
        import ctypes
        if __name__ == "__main__":
            ctypes.string_at(0)  # a segmentation fault: no Python error to report
    """,
    "models/gan/forks.py": """
        import os, time
        if __name__ == "__main__":
            if os.fork() == 0:
                os.setsid()  # out of its parent's process group
                time.sleep(600)
                os._exit(0)
            with open("written_by_the_script.txt", "w") as output:
                output.write("a script may write; the tree must not change")
    """,
}

TF_TREE = {
    "adapter/train.py": """
        from npu_bridge.estimator.npu_no_such_module import NPUEstimator
        if __name__ == "__main__":
            pass
    """,
    "tf1/train.py": """
        import tensorflow as tf
        session_config = tf.ConfigProto()
        tf.contrib.no_such_module_here.build()
        if __name__ == "__main__":
            pass
    """,
    "tf2/train.py": """
        import tensorflow as tf
        tf.no_such_function_in_tf2()
        if __name__ == "__main__":
            pass
    """,
    "tf2/dynamic.py": """
        import tensorflow as tf
        name = "Sess" + "ion"  # out of the static scan's sight: it decides against --tf1
        getattr(tf, name)
        if __name__ == "__main__":
            pass
    """,
    # a TF2 port whose own layers subclass TF 2.6's tensorflow.python.keras: started without --tf1
    "keras/train.py": """
        import argparse
        import tensorflow as tf
        from layers import Scale
        if __name__ == "__main__":
            argparse.ArgumentParser().parse_args()
            model = tf.keras.Sequential([Scale()])
    """,
    "keras/layers.py": """
        from tensorflow.python.keras import backend as K
        from tensorflow.python.keras.layers import Layer
        class Scale(Layer):
            def call(self, inputs):
                return K.relu(inputs)
    """,
}


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    return root


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


def processes_in(root: Path) -> list[int]:
    """Processes working in the tree (every trial starts in its script's folder; none may outlive its trial)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and os.readlink(f"/proc/{entry}/cwd").startswith(str(root)):
                found.append(int(entry))
        except OSError:
            continue
    return found


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    root = write_tree(tmp_path_factory.mktemp("quick"), QUICK_TREE)
    before = snapshot(root)
    os.environ["EXPECT_NO_NETWORK"] = "1" if NAMESPACES else ""
    try:
        report = try_entry_scripts([str(root)], jobs=2, time_limit_s=QUICK_LIMIT_S)
    finally:
        del os.environ["EXPECT_NO_NETWORK"]
    return root, before, report


def by_script(report, root: Path) -> dict:
    return {os.path.relpath(trial.path, root): trial for trial in report.trials}


def test_only_entry_scripts_are_started(quick):
    root, _, report = quick
    modules = {
        "models/resnet/model.py",
        "models/common/resnet_blocks.py",
        "models/detection/detection_lib/__init__.py",
        "models/detection/protos/__init__.py",
        "models/detection/protos/anchors.proto",
        "models/gan/package/layers.py",
    }
    assert sorted(by_script(report, root)) == sorted(set(QUICK_TREE) - modules)


def test_each_script_is_classified_with_its_cause(quick):
    root, _, report = quick
    found = {path: (trial.outcome, trial.cause) for path, trial in by_script(report, root).items()}
    assert found == {
        "models/resnet/train.py": (TrialOutcome.STARTED, "started"),
        "models/detection/tools/train.py": (TrialOutcome.STARTED, "started"),
        "models/detection/export.py": (TrialOutcome.SCRIPT, "its own protos.*_pb2 modules are not generated"),
        "models/yolo/flags_by_hand.py": (TrialOutcome.STARTED, "started"),
        "models/yolo/detect.py": (TrialOutcome.PACKAGE, "cv2 (pip install opencv-python)"),
        "models/yolo/export.py": (TrialOutcome.STARTED, "started"),  # moxing: ModelArts' library, served by `run`
        "models/bert/run.py": (TrialOutcome.SCRIPT, "its own module resnet_blocks is not on its path"),
        "models/bert/broken.py": (TrialOutcome.SCRIPT, "SyntaxError"),
        "models/bert/reads_config.py": (TrialOutcome.SCRIPT, "FileNotFoundError (a file it reads at start)"),
        "models/gan/hangs.py": (TrialOutcome.TIMED_OUT, f"still running after {QUICK_LIMIT_S:g} s"),
        "models/gan/forks.py": (TrialOutcome.STARTED, "started"),
        "models/gan/crashes.py": (TrialOutcome.SCRIPT, "killed by SIGSEGV"),
        "models/gan/package/__main__.py": (
            TrialOutcome.SCRIPT,
            "a relative import: it is a module of its package (python -m), not a script",
        ),
    }
    trials = by_script(report, root)
    assert trials["models/bert/reads_config.py"].where == "models/bert/reads_config.py:1"
    assert "configs/bert.yaml" in trials["models/bert/reads_config.py"].detail
    assert trials["models/bert/broken.py"].where == "models/bert/broken.py:2"
    assert not any(trial.tf1 for trial in report.trials)  # no TF 1.15 name anywhere in this tree


def test_the_tree_is_unchanged_and_nothing_is_left_running(quick):
    root, before, report = quick
    assert snapshot(root) == before
    assert not list(root.rglob("__pycache__"))
    assert processes_in(root) == []
    hangs = by_script(report, root)["models/gan/hangs.py"]
    assert QUICK_LIMIT_S <= hangs.seconds < QUICK_LIMIT_S + 30  # (a loaded machine answers late)


def test_the_text_report_groups_by_outcome_then_cause(quick):
    root, _, report = quick
    text = render_trial_text(report)
    headings = [line for line in text.splitlines() if line and not line.startswith(" ")]
    assert headings[:3] == ["needs a package: 1 script", "script's own error: 6 scripts", "timed out: 1 script"]
    assert "13 entry scripts tried in" in text
    assert "started: 5, needs a package: 1, script's own error: 6, timed out: 1" in text
    as_json = json.loads(render_trial_json(report))
    assert as_json["totals"]["started"] == 5 and as_json["totals"]["scripts"] == 13
    assert as_json["causes"]["script's own error"] == {
        "FileNotFoundError (a file it reads at start)": 1,
        "SyntaxError": 1,
        "a relative import: it is a module of its package (python -m), not a script": 1,
        "its own module resnet_blocks is not on its path": 1,
        "its own protos.*_pb2 modules are not generated": 1,
        "killed by SIGSEGV": 1,
    }


@needs_namespaces
def test_namespaces_hide_the_network_and_the_tree(quick):
    _, _, report = quick
    assert report.isolation.startswith("namespaces of its own per script: no network, the tree overlaid")


def test_without_namespaces_a_copy_is_used_and_escaped_children_are_ended(tmp_path):
    files = {path: QUICK_TREE[path] for path in ("models/gan/forks.py", "models/bert/broken.py")}
    root = write_tree(tmp_path, files)
    before = snapshot(root)
    report = try_entry_scripts([str(root)], jobs=2, time_limit_s=QUICK_LIMIT_S, namespaces=False)
    trials = by_script(report, root)
    assert trials["models/gan/forks.py"].outcome is TrialOutcome.STARTED
    assert trials["models/gan/forks.py"].ended_left_behind == 1  # its setsid child, found by its marker
    assert trials["models/bert/broken.py"].cause == "SyntaxError"
    assert report.isolation.startswith("a temporary copy of the tree, in this host's network")
    assert snapshot(root) == before
    assert processes_in(root) == []


# A model folder as ModelZoo's template writes it: test/train_*_1p.sh, started from test/ as the README says.
LAUNCH_SCRIPT = """
    #!/bin/bash
    data_path=""
    for para in $*; do
        if [[ $para == --data_path* ]]; then
            data_path=`echo ${para#*=}`
        elif [[ $para == --train_epochs* ]]; then
            train_epochs=`echo ${para#*=}`
        fi
    done
    if [[ $data_path == "" ]]; then
        echo "[Error] para \\"data_path\\" must be config"
        exit 1
    fi
    python3 ../train.py --data_path=$data_path --epochs=$train_epochs
"""
TRAIN_WITH_ARGUMENTS = """
    import argparse, os
    if __name__ == "__main__":
        parser = argparse.ArgumentParser()
        parser.add_argument("--data_path")
        parser.add_argument("--epochs", type=int)
        arguments = parser.parse_args()
        assert arguments.epochs == 1, arguments.epochs  # the fewest epochs
        assert os.listdir(arguments.data_path) == []
"""
LAUNCH_TREE = {
    "models/starts/test/train_full_1p.sh": LAUNCH_SCRIPT,
    "models/starts/train.py": TRAIN_WITH_ARGUMENTS,
    "models/missing_name/test/train_full_1p.sh": LAUNCH_SCRIPT,
    "models/missing_name/train.py": """
        if __name__ == "__main__":
            print(undefined_learning_rate)
    """,
    # train_performance_1p.sh is preferred: train_full_1p.sh is never started
    "models/reads_data/test/train_full_1p.sh": "exit 3\n",
    "models/reads_data/test/train_performance_1p.sh": LAUNCH_SCRIPT,
    "models/reads_data/train.py": """
        import argparse
        if __name__ == "__main__":
            parser = argparse.ArgumentParser()
            parser.add_argument("--data_path")
            parser.add_argument("--epochs")
            open(parser.parse_args().data_path + "/train.tfrecord")
    """,
    # its argument loop knows --dataset_dir, not --data_path: its check stops it before Python
    "models/other_argument/test/train_full_1p.sh": LAUNCH_SCRIPT.replace("--data_path*", "--dataset_dir*"),
    "models/other_argument/train.py": TRAIN_WITH_ARGUMENTS,
}
LAUNCH_LIMIT_S = 20.0  # each launch script's Python script imports `run`'s own modules afresh


@pytest.fixture(scope="module")
def launched(tmp_path_factory):
    root = write_tree(tmp_path_factory.mktemp("launch"), LAUNCH_TREE)
    before = snapshot(root)
    report = try_entry_scripts([str(root)], jobs=2, time_limit_s=LAUNCH_LIMIT_S)
    return root, before, report


def test_launch_scripts_are_started_from_their_test_folder_and_classified(launched):
    root, before, report = launched
    launches = {path: trial for path, trial in by_script(report, root).items() if trial.kind == "launch script"}
    found = {path: (trial.outcome, trial.cause) for path, trial in launches.items()}
    assert found == {
        "models/starts/test/train_full_1p.sh": (TrialOutcome.STARTED, "started"),
        "models/missing_name/test/train_full_1p.sh": (TrialOutcome.SCRIPT, "NameError"),
        "models/reads_data/test/train_performance_1p.sh": (
            TrialOutcome.NEEDS_DATA,
            "reads its data at start (--data_path names an empty folder)",
        ),
        "models/other_argument/test/train_full_1p.sh": (
            TrialOutcome.NO_PYTHON,
            "needs an argument it does not get: --data_path",
        ),
    }
    assert launches["models/starts/test/train_full_1p.sh"].detail == ("1 Python script, exit status 0; the command's 0")
    missing = launches["models/missing_name/test/train_full_1p.sh"]
    assert missing.detail == "NameError: name 'undefined_learning_rate' is not defined"
    assert missing.where == "models/missing_name/train.py:2"
    assert missing.command == "bash train_full_1p.sh --data_path=EMPTY --train_epochs=1"
    data = launches["models/reads_data/test/train_performance_1p.sh"]
    assert data.detail == "FileNotFoundError: [Errno 2] No such file or directory: 'DATA_PATH/train.tfrecord'"
    assert launches["models/other_argument/test/train_full_1p.sh"].detail == '[Error] para "data_path" must be config'
    assert all(trial.world is None and not trial.tf1 for trial in launches.values())
    # beside them, the Python entry scripts are tried as before
    assert by_script(report, root)["models/missing_name/train.py"].kind == "entry script"
    assert snapshot(root) == before
    assert processes_in(root) == []


def test_launch_scripts_in_the_reports(launched):
    root, _, report = launched
    text = render_trial_text(report)
    assert "4 entry scripts and 4 launch scripts tried in" in text
    assert "needs its data: 1 script" in text
    assert "launch script, started from its folder as: bash train_full_1p.sh --data_path=EMPTY --train_epochs=1" in text
    as_json = json.loads(render_trial_json(report))
    assert as_json["totals"]["launch_scripts"] == 4
    launch = next(script for script in as_json["scripts"] if script["path"].endswith("starts/test/train_full_1p.sh"))
    assert (launch["kind"], launch["outcome"], launch["world"]) == ("launch script", "started", None)


def test_a_launch_script_in_a_copy_of_the_tree(tmp_path):
    files = {path: text for path, text in LAUNCH_TREE.items() if path.startswith("models/missing_name/test")}
    files["models/missing_name/train.py"] = "import cv2\n"
    root = write_tree(tmp_path, files)
    report = try_entry_scripts([str(root)], jobs=1, time_limit_s=LAUNCH_LIMIT_S, namespaces=False)
    [trial] = report.trials
    assert (trial.kind, trial.outcome, trial.cause) == (
        "launch script",
        TrialOutcome.PACKAGE,
        "cv2 (pip install opencv-python)",
    )
    assert processes_in(root) == []


def test_cli_spares_a_launch_script_that_needs_its_data(tmp_path, capsys):
    write_tree(tmp_path, {path: text for path, text in LAUNCH_TREE.items() if "/reads_data/" in path})
    arguments = ["scan", "--try", "--time-limit", str(LAUNCH_LIMIT_S), "--fail-on", "blocked", str(tmp_path)]
    assert main(arguments) == 0
    assert "needs its data: 1 script" in capsys.readouterr().out


def test_launch_scripts_one_per_model_folder_with_the_fewest_counts(tmp_path):
    write_tree(
        tmp_path,
        {
            "a/test/train_full_1p.sh": "python3 ../train.py\n",
            "a/test/train_full_8p.sh": "python3 ../train.py\n",
            "b/test/train_performance_1p.sh": 'for para in $*; do [[ $para == "--max_steps"* ]] && s=1; done\n',
            "b/test/train_full_1p.sh": "python3 ../train.py\n",
            "c/test/train_accuracy_1p.sh": "[[ $para == --train_epochs* ]] || [[ $para == --num_steps* ]]\n",
            "d/test/run.sh": "python3 ../train.py\n",
            "e/scripts/train_full_1p.sh": "python3 ../train.py\n",
        },
    )
    found = [os.path.relpath(script.path, tmp_path) for script in launch_scripts([str(tmp_path)])]
    assert found == ["a/test/train_full_1p.sh", "b/test/train_performance_1p.sh", "c/test/train_accuracy_1p.sh"]
    assert launch_command(str(tmp_path / "b/test/train_performance_1p.sh"), "/empty") == [
        "bash",
        "train_performance_1p.sh",
        "--data_path=/empty",
        "--max_steps=1",
    ]
    assert launch_command(str(tmp_path / "c/test/train_accuracy_1p.sh"), "/empty")[3:] == [
        "--train_epochs=1",
        "--num_steps=1",
    ]


def test_end_marked_processes_ignores_unmarked_ones():
    assert end_marked_processes("no-trial-has-this-marker") == 0


def test_entry_scripts_are_found_by_main_guard_or_app_run(tmp_path):
    write_tree(
        tmp_path,
        {
            "guard.py": "if __name__ == '__main__':\n    pass\n",
            "reversed.py": 'if "__main__" == __name__:\n    pass\n',
            "absl_app.py": "from absl import app\napp.run(print)\n",
            "library.py": "def main():\n    pass\n",
        },
    )
    assert sorted(Path(file.path).name for file in entry_scripts([str(tmp_path)])) == [
        "absl_app.py",
        "guard.py",
        "reversed.py",
    ]


def test_cli_fail_on_and_json(tmp_path, capsys):
    write_tree(tmp_path, {path: QUICK_TREE[path] for path in ("models/bert/broken.py", "models/resnet/model.py")})
    code = main(["scan", "--try", "--format", "json", "--time-limit", "30", "--fail-on", "blocked", str(tmp_path)])
    assert code == EXIT_FAILED_CHECK
    report = json.loads(capsys.readouterr().out)
    assert report["schema"] == "npu_bridge_compat.scan-try/3"
    assert [(script["outcome"], script["cause"]) for script in report["scripts"]] == [
        ("script's own error", "SyntaxError")
    ]


def test_cli_rejects_a_non_positive_time_limit(tmp_path, capsys):
    assert main(["scan", "--try", "--time-limit", "0", str(tmp_path)]) == 2
    assert "--time-limit" in capsys.readouterr().err


def test_progress_bar_counts_scripts():
    stream = io.StringIO()
    bar = ProgressBar(stream, interval=0, terminal_only=False, unit="scripts", minimum=1)
    bar(3, 4)
    assert stream.getvalue().endswith("3/4 scripts")
    assert not ProgressBar(stream, unit="scripts", minimum=1).enabled  # a StringIO is no terminal


@pytest.fixture(scope="module")
def with_tensorflow(tmp_path_factory):
    root = write_tree(tmp_path_factory.mktemp("tf"), TF_TREE)
    return root, try_entry_scripts([str(root)], jobs=2, time_limit_s=300)


def test_adapter_and_tensorflow_names_missing(with_tensorflow):
    root, report = with_tensorflow
    found = {path: (trial.tf1, trial.outcome, trial.cause) for path, trial in by_script(report, root).items()}
    assert found == {
        "adapter/train.py": (True, TrialOutcome.ADAPTER, "npu_bridge.estimator.npu_no_such_module"),  # TF1's adapter
        "tf1/train.py": (True, TrialOutcome.TF1_NAME, "tensorflow.contrib.no_such_module_here"),
        "tf2/train.py": (False, TrialOutcome.TF2_NAME, "tensorflow.no_such_function_in_tf2"),
        "tf2/dynamic.py": (False, TrialOutcome.TF1_NAME, "tensorflow.Session (run --tf1 serves it)"),
        "keras/train.py": (False, TrialOutcome.STARTED, "started"),
    }
    keras = by_script(report, root)["keras/train.py"].as_json()["world"]
    assert (keras["world"], keras["basis"], [item["kind"] for item in keras["evidence"]]) == (
        "tf2",
        "weighed",
        ["Keras model"],
    )
    assert report.totals()["with_tf1"] == 2


def test_own_modules_are_those_of_the_scanned_folder(tmp_path):
    """A name that is a module of another scanned project is a package this one lacks, not its own module."""
    write_tree(tmp_path / "project_a", {"helpers_of_a.py": "X = 1\n"})
    write_tree(tmp_path / "project_b", {"train.py": "import helpers_of_a\nif __name__ == '__main__':\n    pass\n"})
    report = try_entry_scripts([str(tmp_path / "project_a"), str(tmp_path / "project_b")], jobs=1, time_limit_s=30)
    assert [(trial.outcome, trial.cause) for trial in report.trials] == [(TrialOutcome.PACKAGE, "helpers_of_a")]


def stopped_on(error: BaseException) -> dict:
    """What a trial reports of the error that stopped its script."""
    return describe_exception(error, "/no/tree")


def raised_by(use) -> BaseException:
    try:
        use()
    except Exception as error:  # noqa: BLE001 - the error is the data
        return error
    raise AssertionError("it did not raise")


def era_errors() -> dict[str, dict]:
    """Errors of the era's names, raised for real on this Python and NumPy: the era world's stand-ins (run serves
    no counterpart for them), and the names as this host lacks them where `run` is not there to serve them."""
    import numpy

    from npu_bridge_compat.legacy.era import ERA

    type_dict = ERA.filled_getattr("numpy", numpy)("typeDict")  # what the era world gives a program for np.typeDict
    return {
        "np.typeDict used": stopped_on(raised_by(type_dict)),
        "imp.init_builtin used": stopped_on(raised_by(lambda: ERA.attribute("imp", "init_builtin")("x"))),
        "np.float": stopped_on(raised_by(lambda: numpy.float)),  # NumPy 2 names no owner: read from the message
        "time.clock": stopped_on(raised_by(lambda: time.clock)),
        "from collections import Iterable": stopped_on(raised_by(lambda: exec("from collections import Iterable"))),
    }


@pytest.mark.parametrize(
    "error, tf1, expected",
    [
        ("np.typeDict used", False, (TrialOutcome.NUMPY_NAME, "numpy.typeDict")),
        ("imp.init_builtin used", True, (TrialOutcome.PYTHON_NAME, "imp.init_builtin")),
        ("np.float", False, (TrialOutcome.NUMPY_NAME, "numpy.float")),
        ("time.clock", True, (TrialOutcome.PYTHON_NAME, "time.clock")),
        ("from collections import Iterable", False, (TrialOutcome.PYTHON_NAME, "collections.Iterable")),
        # where `run` would not serve them (it does): a Python name, never a package
        (
            {"type": "ModuleNotFoundError", "message": "No module named 'imp'", "module": "imp"},
            False,
            (TrialOutcome.PYTHON_NAME, "imp"),
        ),
        (
            {"type": "ModuleNotFoundError", "message": f"distutils.core: {NO_SETUPTOOLS}.", "module": "distutils.core"},
            True,
            (TrialOutcome.PYTHON_NAME, "distutils.core"),
        ),
        # the other worlds' stand-ins, as their messages read (test_tf1_world.py, test_tf26_world.py)
        (
            {
                "type": "NoCounterpartError",
                "message": "tensorflow.python.keras.utils.multi_gpu_model (TF 2.6) has no counterpart on TensorFlow "
                "2.15.1: removed in TensorFlow 2.4; tf.distribute.MirroredStrategy replaces it.",
            },
            False,
            (TrialOutcome.TF2_NAME, "tensorflow.python.keras.utils.multi_gpu_model"),
        ),
        (
            {
                "type": "NoCounterpartError",
                "message": "tensorflow.contrib.quantize.create_training_graph has no counterpart on TensorFlow 2.15.1: "
                "quantization-aware training is tensorflow_model_optimization's.",
            },
            True,
            (TrialOutcome.TF1_NAME, "tensorflow.contrib.quantize.create_training_graph"),
        ),
        (
            {
                "type": "NoCounterpartError",
                "message": "keras.layers.merge (standalone Keras) has no counterpart on Keras 2.15.0 "
                "(tf.compat.v1.keras): Keras 1's Merge layer and merge function were removed in Keras 2; ...",
            },
            True,
            (TrialOutcome.KERAS2_NAME, "keras.layers.merge"),
        ),
        (
            {
                "type": "NoCounterpartError",
                "message": "moxing.run (ModelArts' moxing) has no counterpart on this host (npu_bridge_compat's "
                "moxing): moxing's TensorFlow training framework (mox.run, ModelSpec, get_optimizer_fn and their "
                "hooks) is ModelArts' own and has no counterpart here; ...",
            },
            True,
            (TrialOutcome.MODELARTS_NAME, "moxing.run"),
        ),
        # packages stay packages
        (
            {"type": "ModuleNotFoundError", "message": "No module named 'cv2'", "module": "cv2"},
            False,
            (TrialOutcome.PACKAGE, "cv2 (pip install opencv-python)"),
        ),
    ],
)
def test_a_trial_stopped_on_a_name_is_filed_under_its_world(error, tf1, expected):
    error = era_errors()[error] if isinstance(error, str) else error
    outcome, cause, detail, _ = classify({"error": error}, 1, False, tf1, frozenset(), 60.0)
    assert (outcome, cause) == expected
    assert detail == f"{error['type']}: {error['message']}"


def test_numpy_itself_missing_is_a_package(monkeypatch):
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "numpy" else find_spec(name, *a))
    error = {"type": "ModuleNotFoundError", "message": "No module named 'numpy'", "module": "numpy"}
    assert classify({"error": error}, 1, False, False, frozenset(), 60.0)[:2] == (TrialOutcome.PACKAGE, "numpy")
