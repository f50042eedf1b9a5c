"""`run` of a command: every Python process the command starts, however deep, under the worlds.

`python -m npu_bridge_compat run [--tf1|--tf2] -- bash test/train_full_1p.sh --data_path=DIR` (or a `.sh` path
given directly) starts the command with a process-start hook in its environment, the mechanism coverage.py's
subprocess measurement, opentelemetry-instrument and ddtrace-run use: a temporary folder holding a sitecustomize.py
(sitecustomize.py here) put first on PYTHONPATH, so that every Python process of the command imports it at start.
Each script the command starts is then started as `run` starts one script, deciding its own world (child.py); the
flags given to `run` are passed down. The command's `python`, `python3` and `python3.N` start the Python that runs
`run` (the one with TensorFlow), as in an activated environment: ported scripts name the interpreter of the NPU
image (`python3.7`).

Only the command's environment changes (Popen's `env`), not this process's; the folder is removed when the
command and the Python processes it left running have ended. A process that is not Python is untouched.

`run SCRIPT` runs the script in this process; the Python processes it starts (a ModelArts boot file's
`os.system("bash run_1p.sh ...")`) get the same hook, set in this process's environment for the script's time only
(through the registry of changes) and taken out again when it ends (run_serving_children).

Ranks: a ported 8p script's loop (RANK_SIZE, RANK_ID, a RANK_TABLE_FILE naming NPU servers) runs its ranks on
this host on loopback, as `launch` does (child.py); `--ranks N` (NPU_BRIDGE_COMPAT_RANKS) runs only the first N.
"""

from __future__ import annotations

import ast
import os
import py_compile
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from npu_bridge_compat.errors import NpuConfigError

HOOK_VARIABLE = "NPU_BRIDGE_COMPAT_HOOK"  # the hook's folder: the hook acts only where it names the hook's own
FLAGS_VARIABLE = "NPU_BRIDGE_COMPAT_RUN_FLAGS"  # `run`'s flags, passed down to every script of the command
RANKS_VARIABLE = "NPU_BRIDGE_COMPAT_RANKS"  # the ranks of a script's loop that run on this host
TREE_VARIABLE = "NPU_BRIDGE_COMPAT_TRIAL_TREE"  # `scan --try`'s tree: where a failed script's traceback is cut
RECORDS = "processes.txt"  # a line per record: a dict's repr
_HOOK_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sitecustomize.py")
_INTERPRETER_NAMES = ("python", "python3", *(f"python3.{minor}" for minor in range(5, 15)))
_SUMMARY_WIDTH = 110


class CommandNotFound(NpuConfigError, FileNotFoundError):
    """`run` was given a command that is not on PATH, or a shell script that does not exist."""


@dataclass
class ChildProcess:
    """One Python process of the command, as its records say."""

    pid: int
    parent: int
    command: list[str]
    served: str  # the world of a script (tf1, tf2), "adapter" for -c/-m programs, or why nothing
    decided: str = ""  # how the world was chosen
    status: int | None = None  # its exit status, when it reported one
    error: dict | None = None  # what stopped a script that raised (scan.trial_child.describe_exception)

    def describe(self) -> str:
        line = shlex.join(self.command).replace("\n", "\\n")  # one line per process
        if len(line) > _SUMMARY_WIDTH:  # cut, but a script's path always whole: it names the process
            script = next((i for i, part in enumerate(self.command) if part.endswith(".py")), None)
            kept = shlex.join(self.command[: script + 1]) if script is not None else ""
            line = f"{kept} ..." if len(kept) > _SUMMARY_WIDTH - 4 else line[: _SUMMARY_WIDTH - 3] + "..."
        if self.served in ("tf1", "tf2"):
            served = f"run as a {self.served} program ({self.decided})"
        elif self.served == "adapter":
            served = "the adapter's imports only (not a script of the project)"
        else:
            served = self.served
        ended = "" if self.status is None else f", exit status {self.status}"
        return f"  pid {self.pid} (of {self.parent}), {served}{ended}: {line}"


def command_of(script: str, arguments: Sequence[str], explicit: bool) -> list[str] | None:
    """The command `run SCRIPT ARGS` starts, or None when it runs one Python script in this process: `explicit`
    (the user wrote `run -- COMMAND`), or a shell script (.sh), started with bash as ported READMEs say."""
    if explicit:
        return [script, *arguments]
    if script.endswith(".sh"):
        return ["bash", script, *arguments]
    return None


def run_command(command: Sequence[str], run_flags: Sequence[str] = (), ranks: int | None = None) -> int:
    """Start `command` with every Python process it starts under the worlds; its exit status, or the first failed
    Python process's when the command itself succeeded (a shell loop's `wait` does not report its children).
    Prints which processes ran under which world to stderr when it ends."""
    status, children = start_command(command, run_flags, ranks)
    sys.stderr.write(summary(command, children) + "\n")
    return _with_failed_children(status, children, "the command")


def _with_failed_children(status: int, children: Sequence[ChildProcess], started_them: str) -> int:
    """`status`, or the first failed child's where `status` is 0, with a line naming it."""
    failed = [child for child in children if child.status]
    if status == 0 and failed:
        sys.stderr.write(
            f"npu_bridge_compat: {started_them} exited with status 0, but pid {failed[0].pid} "
            f"({shlex.join(failed[0].command[1:3])}) exited with status {failed[0].status}\n"
        )
        return failed[0].status
    return status


def run_serving_children(run: Callable[[], int], script_line: Sequence[str], run_flags: Sequence[str] = ()) -> int:
    """`run()` (a script run in this process, `run SCRIPT ARGS`) with the Python processes the script starts under
    the worlds, as those of a command: the hook in this process's environment while it runs (the registry's
    changes, undone when it ends, as is the hook's folder); then the list of them on stderr, where it started any,
    and the first failed one's exit status where the script's is 0 (a ModelArts boot file does not check what its
    `os.system` returns). A script that a command started is served by the command's hook already."""
    from npu_bridge_compat import changes
    from npu_bridge_compat.changes import Owner

    if os.path.isdir(os.environ.get(HOOK_VARIABLE) or ""):
        return run()
    folder = tempfile.mkdtemp(prefix="npu_bridge_compat_run_")
    made: list[changes.Change] = []
    try:
        for name, value in hooked_environment(folder, run_flags).items():
            if os.environ.get(name) != value:
                reason = "the Python processes the script starts run under the worlds too, as those of a command"
                made.append(changes.set_environment(name, value, owner=Owner.RUN, reason=reason))
        status = run()
    except SystemExit as exit:
        if exit.code not in (0, None):
            raise
        status = 0
    finally:
        try:
            _wait_for_stragglers(folder)
        except KeyboardInterrupt:  # a second Ctrl-C: stop waiting, list what ran
            pass
        children = read_children(folder)
        changes.undo(changes=made)
        shutil.rmtree(folder, ignore_errors=True)
        if children:
            sys.stderr.write(summary(script_line, children) + "\n")
    return _with_failed_children(status, children, os.path.basename(script_line[0]))


def start_command(
    command: Sequence[str], run_flags: Sequence[str] = (), ranks: int | None = None
) -> tuple[int, list[ChildProcess]]:
    """Start `command` under the hook and wait for it and the Python processes it left running: its own exit
    status and its Python processes."""
    _check_command(command)
    if ranks is not None and ranks < 1:
        raise NpuConfigError(f"--ranks takes a positive number of ranks, got {ranks}")
    folder = tempfile.mkdtemp(prefix="npu_bridge_compat_run_")
    try:
        environment = hooked_environment(folder, run_flags, ranks)
        status = _wait(subprocess.Popen(list(command), env=environment))
        try:
            _wait_for_stragglers(folder)
        except KeyboardInterrupt:  # a second Ctrl-C: stop waiting, list what ran
            status = status or 130
        return status, read_children(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _check_command(command: Sequence[str]) -> None:
    if not command:
        raise CommandNotFound("run --: no command given")
    if command[0] == "bash" and len(command) > 1 and command[1].endswith(".sh") and not os.path.isfile(command[1]):
        raise CommandNotFound(f"no such shell script: {command[1]}")
    if shutil.which(command[0]) is None:
        raise CommandNotFound(f"no such command: {command[0]} (not a file, and not found on PATH)")


def hooked_environment(folder: str, run_flags: Sequence[str] = (), ranks: int | None = None) -> dict[str, str]:
    """The command's environment: this process's, with the hook in `folder` first on PYTHONPATH, `run`'s flags,
    and the interpreter names of ported scripts (python3.7 & co.) starting this Python. Writes the hook there."""
    hook = os.path.join(folder, "sitecustomize.py")
    shutil.copyfile(_HOOK_SOURCE, hook)
    py_compile.compile(hook, doraise=True)  # its bytecode beside it: processes that write none still read it
    interpreters = os.path.join(folder, "bin")
    os.mkdir(interpreters)
    for name in _INTERPRETER_NAMES:
        path = os.path.join(interpreters, name)
        # A script, not a link: a virtual environment's Python finds its packages from its own path.
        with open(path, "w", encoding="utf-8") as file:
            file.write(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
        os.chmod(path, 0o755)
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [folder, environment.get("PYTHONPATH", "")]))
    environment["PATH"] = os.pathsep.join(filter(None, [interpreters, environment.get("PATH", "")]))
    environment[HOOK_VARIABLE] = folder
    environment[FLAGS_VARIABLE] = shlex.join(run_flags)
    if ranks is not None:
        environment[RANKS_VARIABLE] = str(ranks)
    return environment


def _wait(process: subprocess.Popen) -> int:
    """The command's exit status (128 + N when a signal N ended it, as a shell says); Ctrl-C reaches the command
    itself (the terminal's process group), so this process waits for it to end."""
    while True:
        try:
            status = process.wait()
            break
        except KeyboardInterrupt:
            continue
    return 128 - status if status < 0 else status


def _wait_for_stragglers(folder: str) -> None:
    """Wait for the Python processes the command left running (`nohup python3 ... &` without `wait`): the hook's
    folder is removed only once none of them can start another process that reads it."""
    said = False
    while running := [child for child in read_children(folder) if child.status is None and _alive(child.pid)]:
        if not said:
            pids = ", ".join(str(child.pid) for child in running)
            sys.stderr.write(f"npu_bridge_compat: the command ended; waiting for its Python processes {pids}\n")
            said = True
        time.sleep(0.5)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie has ended: its parent has not read its status yet
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return True


def read_children(folder: str) -> list[ChildProcess]:
    """The command's Python processes from the hook's records (start and end lines, by pid, in start order)."""
    found: dict[int, ChildProcess] = {}
    try:
        with open(os.path.join(folder, RECORDS), encoding="utf-8") as file:
            lines = file.read().splitlines()
    except FileNotFoundError:
        return []
    for line in lines:
        record = ast.literal_eval(line)
        pid = record["pid"]
        if "command" in record:
            found[pid] = ChildProcess(
                pid, record["parent"], record["command"], record["served"], record.get("decided", "")
            )
        if "status" in record and pid in found:
            found[pid].status = record["status"]
            found[pid].error = record.get("error")
    return list(found.values())


def summary(command: Sequence[str], children: Sequence[ChildProcess]) -> str:
    """Which Python processes of the command ran under which world."""
    head = f"npu_bridge_compat: the Python processes of `{shlex.join(command)}`"
    if not children:
        return f"{head}: none started"
    return "\n".join([f"{head}:", *(child.describe() for child in children)])


def record(**fields) -> None:
    """Add a line to the records of the command this process belongs to (nothing outside a command)."""
    folder = os.environ.get(HOOK_VARIABLE)
    if not folder or not os.path.isdir(folder):
        return
    fields.update(pid=os.getpid(), parent=os.getppid())
    descriptor = os.open(os.path.join(folder, RECORDS), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(descriptor, (repr(fields) + "\n").encode())  # as the hook writes them
    finally:
        os.close(descriptor)
