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

from npu_bridge_compat import processes
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
