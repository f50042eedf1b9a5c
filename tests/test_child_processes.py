"""`run` of a command: every Python process it starts, through a shell script, os.system, subprocess or
`nohup ... &`, starts under the worlds, each deciding its own script's world; a process outside the command does
not; the user's own sitecustomize still runs; nothing of the hook is left once the command ends; a ported 8p
script's rank loop runs its ranks on this host (`--ranks 2`), training to equal weights."""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from helpers import loopback_port_block
from test_distributed_ranks import ENVIRONMENT, assert_trained_like_one_process, reports

from npu_bridge_compat import changes, processes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.cli import main
from npu_bridge_compat.legacy.tf1.world import TF1_VERSION

# Every test starts a command under `run`, with the Python processes it starts.
pytestmark = pytest.mark.starts_processes

HERE = Path(__file__).parent
TIMEOUT_S = 400

USER_SITECUSTOMIZE = "import builtins\nbuiltins.user_sitecustomize_ran = True\n"
CHILD_FACTS = (
    "import builtins, os, sys\n"
    "facts = (getattr(builtins, 'user_sitecustomize_ran', False), os.environ['NPU_BRIDGE_COMPAT_HOOK'] in sys.path)\n"
)


def write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).write_text(textwrap.dedent(text))


def run_cli(*arguments: str, cwd: Path, environment: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "npu_bridge_compat", "run", *arguments],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )


def test_python_children_of_a_command_get_the_worlds_each_its_own(tmp_path):
    """A shell script starts a Python script that starts a TF 1.15 script through os.system, a TF2 one through
    subprocess, a failing one through `nohup ... &` in a shell, and a `python -c` program: each gets the adapter's
    imports, each script its own world; output keeps its order; the failure is the command's exit status."""
    project, user_site, temporary = tmp_path / "project", tmp_path / "user_site", tmp_path / "tmp"
    for folder in (project, user_site, temporary):
        folder.mkdir()
    write(user_site, {"sitecustomize.py": USER_SITECUSTOMIZE})
    write(
        project,
        {
            "start.sh": """\
                cd "$(dirname "$0")"
                echo "shell: start"
                python3.7 parent.py
                echo "shell: parent ended"
                """,
            "parent.py": """\
                import os, subprocess, sys
                import tensorflow as tf
                print("parent: before", os.environ["NPU_BRIDGE_COMPAT_HOOK"], flush=True)
                os.system("python3 tf1_child.py system")
                subprocess.run([sys.executable, "tf2_child.py", "subprocess"], check=True)
                subprocess.run("nohup python3 failing_child.py > nohup.log 2>&1 &\\nwait", shell=True, check=True)
                print(open("nohup.log").read().splitlines()[-1], flush=True)
                subprocess.run(["python", "-c", "import npu_bridge.npu_init as n; print('dash-c', n.__name__)"])
                print("parent: after", flush=True)
                """,
            "tf1_child.py": CHILD_FACTS
            + textwrap.dedent("""\
                import tensorflow as tf
                from npu_bridge.npu_init import *
                features = tf.placeholder(tf.float32, [None, 2])
                with tf.Session(config=npu_config_proto()) as session:
                    total = session.run(tf.reduce_sum(features), {features: [[1.0, 2.0]]})
                print("tf1 child", sys.argv[1], tf.__version__, total, *facts, flush=True)
                """),
            "tf2_child.py": CHILD_FACTS
            + textwrap.dedent("""\
                import tensorflow as tf
                import npu_device
                from npu_device.compat.v1.npu_init import *
                npu_device.compat.enable_v1()
                print("tf2 child", sys.argv[1], tf.__version__.startswith("2."), *facts, flush=True)
                """),
            "failing_child.py": """\
                import sys
                from npu_bridge.npu_init import *
                print("failing child", flush=True)
                sys.exit(3)
                """,
        },
    )
    environment = {
        **ENVIRONMENT,
        "PYTHONPATH": os.pathsep.join([str(user_site), ENVIRONMENT["PYTHONPATH"]]),
        "TMPDIR": str(temporary),
    }
    done = run_cli("--", "bash", "start.sh", cwd=project, environment=environment)
    lines = done.stdout.splitlines()
    assert done.returncode == 3, done.stderr[-4000:]
    hook = Path(lines[1].split()[-1])
    assert hook.parent == temporary and not hook.exists()  # the hook's folder, gone with the command
    assert not list(temporary.glob("npu_bridge_compat_run_*"))
    assert lines == [
        "shell: start",
        f"parent: before {hook}",
        f"tf1 child system {TF1_VERSION} 3.0 True False",  # its user sitecustomize ran; the hook hid itself
        "tf2 child subprocess True True False",
        "failing child",
        "dash-c npu_bridge.npu_init",
        "parent: after",
        "shell: parent ended",
    ], done.stderr[-4000:]
    summary = done.stderr[done.stderr.index("npu_bridge_compat: the Python processes of `bash start.sh`:") :]
    assert re.search(r"run as a tf2 program \(decided from its signs\), exit status 0: python parent\.py\n", summary)
    assert re.search(
        r"run as a tf1 program \(decided from its signs\), exit status 0: python tf1_child\.py system", summary
    )
    assert re.search(
        r"run as a tf2 program \(decided from its signs\), exit status 0: python tf2_child\.py subp", summary
    )
    assert re.search(
        r"the adapter's imports only \(not a script of the project\): \S+python -c 'import npu_bridge", summary
    )
    failing_pid = re.search(
        r"pid (\d+) \(of \d+\), run as a tf1 program .*, exit status 3: python failing_child\.py", summary
    )[1]
    assert f"the command exited with status 0, but pid {failing_pid}" in done.stderr
    # A Python process started outside the command, with the same environment, is not served.
    outside = subprocess.run(
        [sys.executable, "-c", "import npu_bridge"], env=environment, capture_output=True, text=True, cwd=project
    )
    assert outside.returncode == 1 and "No module named 'npu_bridge'" in outside.stderr


def test_nothing_of_the_hook_is_left_in_the_environment_or_on_disk(tmp_path, monkeypatch, capfd):
    """run_command changes only the command's environment: this process's environment and sys.path are as they
    were, the hook's folder is removed, and a non-Python child sees the variables but nothing else of it."""
    user_site = tmp_path / "user_site"
    user_site.mkdir()
    write(user_site, {"sitecustomize.py": USER_SITECUSTOMIZE})
    monkeypatch.setenv("PYTHONPATH", str(user_site))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    environment, path = dict(os.environ), list(sys.path)
    child = CHILD_FACTS + "print('child', *facts, os.environ['NPU_BRIDGE_COMPAT_HOOK'])"
    tool = tmp_path / "environment" / "bin" / "tool"  # an installed program (a console script): not a port's script
    tool.parent.mkdir(parents=True)
    (tmp_path / "environment" / "pyvenv.cfg").write_text("")
    tool.write_text("import sys\n")
    status = processes.run_command(
        ["bash", "-c", f'python3 -c "{child}"; echo "shell PYTHONPATH=$PYTHONPATH"; python3 {tool} --version']
    )
    captured = capfd.readouterr()
    assert status == 0, captured.err
    child_line, shell_line = captured.out.splitlines()
    hook = child_line.split()[-1]
    assert child_line == f"child True False {hook}"
    assert shell_line == f"shell PYTHONPATH={hook}{os.pathsep}{user_site}"
    assert Path(hook).parent == tmp_path / "tmp" and os.listdir(tmp_path / "tmp") == []
    assert dict(os.environ) == environment and sys.path == path
    served = r"pid \d+ \(of \d+\), the adapter's imports only \(not a script of the project\): "
    assert re.search(served + r"\S+python -c 'import builtins", captured.err)
    assert len(re.findall(served, captured.err)) == 2 and "run as a" not in captured.err  # the tool too
    outside = subprocess.run([sys.executable, "-c", "import sitecustomize, npu_bridge"], capture_output=True, text=True)
    assert "No module named 'npu_bridge'" in outside.stderr


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--", "no-such-command", "x"], "error: no such command: no-such-command (not a file, and not found on PATH)"),
        (["test/missing_1p.sh"], "error: no such shell script: test/missing_1p.sh"),
        (["--ranks", "0", "--", "true"], "error: --ranks takes a positive number of ranks, got 0"),
        (["--ranks", "2", "train.py"], "error: --ranks is for a command that starts ranks"),
    ],
)
def test_a_command_that_cannot_start_is_refused_before_anything_runs(arguments, message, capsys, tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text("")
    monkeypatch.chdir(tmp_path)
    assert main(["run", *arguments]) == 2
    assert capsys.readouterr().err.startswith(message)


def test_an_unmodified_8p_loop_runs_two_ranks_on_this_host(tmp_path):
    """A ModelZoo-style train_full_8p.sh (RANK_SIZE=8, its own rank table naming an NPU server, one background
    `python3.7` per rank, then `wait`) under `run --ranks 2`: ranks 0 and 1 train on loopback to equal weights, the
    six others end at once, the script's files untouched."""
    model = tmp_path / "model"
    (model / "test").mkdir(parents=True)  # ModelZoo's READMEs start the scripts from test/
    (model / "configs").mkdir()
    shutil.copy(HERE / "scripts" / "modelzoo_8p" / "train_full_8p.sh", model / "test")
    shutil.copy(HERE / "data" / "rank_table_8p_npu.json", model / "configs" / "8p.json")
    for name in ("dist_session_port.py", "dist_model.py"):
        shutil.copy(HERE / "scripts" / name, model)
    environment = {**ENVIRONMENT, "NPU_BRIDGE_COMPAT_PORT": str(loopback_port_block(2))}
    done = run_cli(
        "--ranks",
        "2",
        "train_full_8p.sh",
        f"--model_dir={tmp_path / 'out'}",
        cwd=model / "test",
        environment=environment,
    )
    logs = {rank: (model / "test" / "output" / str(rank) / f"train_{rank}.log").read_text() for rank in range(8)}
    assert done.returncode == 0, done.stderr[-3000:] + logs[0][-3000:]
    assert done.stdout.strip() == "E2E Training Duration sec : done"
    found = reports(logs[0] + logs[1])
    assert sorted(found) == [0, 1]
    assert_trained_like_one_process(found, steps=20)
    for rank in range(2, 8):
        assert logs[rank] == (
            f"npu_bridge_compat: rank {rank} of the script's 8 is left out: --ranks 2 runs ranks 0 to 1 on this host\n"
        )
    assert len(re.findall(r"run as a tf1 program .*, exit status 0: python .*dist_session_port\.py", done.stderr)) == 2
    assert len(re.findall(r"left out \(--ranks\), exit status 0: python .*dist_session_port\.py", done.stderr)) == 6
    assert (model / "configs" / "8p.json").read_text() == (HERE / "data" / "rank_table_8p_npu.json").read_text()


BOOT_FILE = {
    "boot_modelarts.py": """\
        import argparse, os
        import moxing as mox

        parser = argparse.ArgumentParser()
        for name in ("--data_url", "--train_url", "--cache_dir"):
            parser.add_argument(name)
        config = parser.parse_args()
        mox.file.copy_parallel(src_url=config.data_url, dst_url=os.path.join(config.cache_dir, "data"))
        code_dir = os.path.dirname(os.path.abspath(__file__))
        os.system("bash %s/run_1p.sh %s %s %s" % (code_dir, code_dir, config.cache_dir, config.train_url))
        print("boot: done", flush=True)
        """,
    "run_1p.sh": """\
        code_dir=$1
        cache_dir=$2
        obs_url=$3
        python3.7 ${code_dir}/train.py --data_dir=${cache_dir}/data --result=${cache_dir}/result \\
            --obs_dir=${obs_url} --steps=${TRAIN_STEPS:-20} 2>&1 | tee ${cache_dir}/train.log
        """,
    "train.py": """\
        import argparse, os
        parser = argparse.ArgumentParser()
        for name in ("--data_dir", "--result", "--obs_dir"):
            parser.add_argument(name)
        parser.add_argument("--steps", type=int)
        flags = parser.parse_args()
        import numpy as np
        import tensorflow as tf
        from npu_bridge.npu_init import *
        import moxing as mox

        points = np.loadtxt(os.path.join(flags.data_dir, "points.csv"), delimiter=",", dtype=np.float32)
        x, y = tf.placeholder(tf.float32, [None]), tf.placeholder(tf.float32, [None])
        weight = tf.Variable(0.0)
        loss = tf.reduce_mean(tf.square(weight * x - y))
        step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        with tf.Session(config=npu_config_proto()) as session:
            session.run(tf.global_variables_initializer())
            for number in range(flags.steps):
                _, value = session.run([step, loss], {x: points[:, 0], y: points[:, 1]})
                print("step %d loss %.4f" % (number, value))
            tf.train.Saver().save(session, os.path.join(flags.result, "model.ckpt"))
        mox.file.copy_parallel(flags.result, flags.obs_dir + "/result")
        """,
}


def test_a_modelarts_boot_file_run_as_a_script_serves_the_training_its_shell_script_starts(tmp_path):
    """`run --obs-root DIR boot_modelarts.py` (the boot file run in `run`'s own process): its moxing copy reads
    DIR, and the training that its os.system("bash run_1p.sh") starts runs as a TF 1.15 program with moxing, its
    checkpoint copied back under DIR; a training that fails makes `run`'s exit status say so, though the boot file
    ignores what os.system returns."""
    code, obs, cache = tmp_path / "code", tmp_path / "obs", tmp_path / "cache"
    (obs / "bucket" / "data").mkdir(parents=True)
    code.mkdir()
    write(code, BOOT_FILE)
    (obs / "bucket" / "data" / "points.csv").write_text("".join(f"{v},{3 * v}\n" for v in (1.0, 2.0, -1.0, 0.5)))
    arguments = ["--obs-root", str(obs), str(code / "boot_modelarts.py"), "--data_url=obs://bucket/data"]
    arguments += ["--train_url=obs://bucket/out", f"--cache_dir={cache}"]
    done = run_cli(*arguments, cwd=tmp_path, environment={**ENVIRONMENT, "TMPDIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-4000:]
    losses = [float(value) for value in re.findall(r"step \d+ loss ([\d.]+)", (cache / "train.log").read_text())]
    assert len(losses) == 20 and losses[-1] < losses[0] / 100, losses
    assert (obs / "bucket" / "out" / "result" / "model.ckpt.index").is_file()
    assert done.stdout.splitlines()[-1] == "boot: done"
    assert re.search(
        r"npu_bridge_compat: the Python processes of `\S+boot_modelarts\.py --data_url=obs://bucket/data .*`:\n"
        r"  pid \d+ \(of \d+\), run as a tf1 program \(decided from its signs\), exit status 0: python \S+train\.py ",
        done.stderr,
    )
    assert not list(tmp_path.glob("npu_bridge_compat_run_*"))  # the hook's folder, gone with the script

    failed = run_cli(*arguments, cwd=tmp_path, environment={**ENVIRONMENT, "TRAIN_STEPS": "many"})
    assert failed.returncode == 2, failed.stderr[-4000:]
    assert failed.stdout.splitlines()[-1] == "boot: done"
    assert re.search(
        r"boot_modelarts\.py exited with status 0, but pid \d+ \(\S+train\.py --data_dir=\S+\) exited with status 2",
        failed.stderr,
    )


def test_run_serving_children_changes_the_environment_only_while_the_script_runs(tmp_path, monkeypatch, capfd):
    """The hook is in this process's environment while the script runs (its children are served), through the
    registry of changes; afterwards the environment is as it was and the hook's folder is gone; a script that
    starts no Python process lists none."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    environment = dict(os.environ)

    def script() -> int:
        assert any(change.target == "$NPU_BRIDGE_COMPAT_HOOK" for change in changes.in_force(owner=Owner.RUN))
        return subprocess.call(["python3", "-c", "import npu_bridge, os; print(os.environ['NPU_BRIDGE_COMPAT_HOOK'])"])

    assert processes.run_serving_children(script, ["script.py"]) == 0
    captured = capfd.readouterr()
    hook = Path(captured.out.split()[-1])
    assert hook.parent == tmp_path and not hook.exists()
    assert dict(os.environ) == environment and not changes.in_force(owner=Owner.RUN)
    listed = r"the Python processes of `script\.py`:\n  pid \d+ \(of \d+\), the adapter's imports only"
    assert re.search(listed, captured.err)
    assert processes.run_serving_children(lambda: 0, ["quiet.py"]) == 0
    assert capfd.readouterr().err == ""
