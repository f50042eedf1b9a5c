"""The trials of `scan --try`: each script started as `python -m npu_bridge_compat run` starts it, and what
stopped it written as JSON.

Two ways in:
- `--serve`, the warm starter (where user namespaces are allowed): started once under
  `unshare --user --map-root-user --net` (no network but a loopback that is down), it imports TensorFlow and
  Keras once, then forks one process per script it is asked for (JSON lines on stdin; it answers each with the
  process id, then the exit status). Each of those enters a mount and a PID namespace of its own, hides the scanned
  tree behind an overlay whose upper layer is a scratch folder (the script may write; its writes are thrown away;
  read-only where the kernel refuses the overlay), and forks the script's process, the first of its PID namespace:
  when it ends, or is killed, whatever it forked ends with it. A trial thus costs the script's own start, not
  TensorFlow's import.
- one script per interpreter (`--result-fd`), where namespaces are refused: `trial.py` runs it in a copy of the
  tree.

A model folder's launch script (test/train_*_1p.sh) is started the same two ways, as `run -- bash SCRIPT ...`
(`"command"` in the request, `--command` here): its Python processes then report what stopped them through the
command's records (processes/child.py).

Either way the script runs through `runner.run_program` (what `run` calls) in the process that catches what
stopped it, so that its type, the module or name it lacked and where it was raised reach the report as data.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import subprocess
import sys
import traceback
from collections.abc import Sequence

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner

_MESSAGE_CHARS = 400  # the result travels through a pipe that is read once the script has ended: keep it small


def hide_writes(root: str, upper: str | None) -> str:
    """Make `root` unwritable for this mount namespace; returns how ('overlay', 'read-only'), or raises."""
    if upper:
        layers = os.path.join(upper, "layer"), os.path.join(upper, "work")
        for folder in layers:
            os.makedirs(folder, exist_ok=True)
        options = f"lowerdir={root},upperdir={layers[0]},workdir={layers[1]}"
        if _mount("-t", "overlay", "overlay", "-o", options, root):
            return "overlay"
    if _mount("--bind", root, root) and _mount("-o", "remount,bind,ro", root):
        return "read-only"
    raise OSError(f"cannot make {root} unwritable in this namespace (neither an overlay nor a read-only bind)")


def _mount(*arguments: str) -> bool:
    return subprocess.run(["mount", *arguments], capture_output=True).returncode == 0


def describe_exception(error: BaseException, root: str) -> dict:
    """What a stopped script's exception says, as plain data for `trial.classify`."""
    from npu_bridge_compat.runner import tf1_hint

    frames = traceback.extract_tb(error.__traceback__)
    in_tree = [frame for frame in frames if os.path.abspath(frame.filename).startswith(root + os.sep)]
    described = {
        "type": type(error).__name__,
        "message": str(error)[:_MESSAGE_CHARS],
        "where": f"{os.path.relpath(in_tree[-1].filename, root)}:{in_tree[-1].lineno}" if in_tree else None,
        "raised_in": frames[-1].filename if frames else None,
    }
    if isinstance(error, ImportError):
        described["module"] = error.name
    if isinstance(error, AttributeError):
        owner = getattr(error, "obj", None)
        described["owner"] = getattr(owner, "__name__", None) if isinstance(owner, type(os)) else None
        described["name"] = getattr(error, "name", None)
        described["tf1_hint"] = tf1_hint(error)
    if isinstance(error, SyntaxError):
        described["where"] = f"{os.path.relpath(error.filename or '?', root)}:{error.lineno}"
    if isinstance(error, OSError) and error.filename:
        described["file"] = str(error.filename)
    return described


def run_and_report(
    run_arguments: list[str], root: str, channel, known: dict | None = None, search_last: Sequence[str] = ()
) -> None:
    """Run `run RUN_ARGUMENTS` here and write to `channel` how it ended (with `known` facts of the trial); leaves
    the interpreter (os._exit): the script's threads and atexit handlers are not the trial's to wait for.
    `search_last`: folders searched for modules after the installed packages (the project's own packages)."""
    result: dict = dict(known or {})
    sys.path.extend(search_last)
    world, script, *script_arguments = run_arguments  # --tf1 or --tf2, as trial.py chose
    try:
        from npu_bridge_compat.errors import NpuConfigError
        from npu_bridge_compat.runner import run_program

        try:
            result["exit"] = run_program(script, script_arguments, world=world.removeprefix("--"))
        except NpuConfigError as error:  # as `run` answers it
            print(f"error: {error}", file=sys.stderr)
            result["exit"] = 2
    except SystemExit as stop:
        result["exit"] = stop.code if isinstance(stop.code, int) or stop.code is None else 1
    except BaseException as error:  # noqa: BLE001 - whatever stopped the script is the finding
        traceback.print_exc()
        result["exit"] = 1
        result["error"] = describe_exception(error, root)
    channel.write(json.dumps(result))
    channel.flush()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def command_and_report(command: list[str], channel, known: dict | None = None) -> None:
    """Start COMMAND as `run -- COMMAND` does (every Python process it starts under the worlds) and write to
    `channel` its exit status and its Python processes (with what stopped those that raised); leaves the
    interpreter as run_and_report does."""
    from npu_bridge_compat.processes import CommandNotFound, start_command

    result: dict = dict(known or {})
    try:
        result["exit"], children = start_command(command)
        result["children"] = [
            {"command": child.command, "served": child.served, "status": child.status, "error": child.error}
            for child in children
        ]
    except CommandNotFound as error:
        result["exit"], result["not_started"] = 127, str(error)
    channel.write(json.dumps(result))
    channel.flush()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


# --- the warm starter ----------------------------------------------------------------------------------------

_CLONE_NEWNS, _CLONE_NEWPID = 0x00020000, 0x20000000
_PR_SET_PDEATHSIG = 1
EXIT_SETUP_FAILED = 125  # the trial's own setup failed (its output says why)


def _system_call(name: str, *arguments: int) -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if getattr(libc, name)(*arguments) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{name}: {os.strerror(number)}")


def _die_with_parent() -> None:
    _system_call("prctl", _PR_SET_PDEATHSIG, int(signal.SIGKILL))


def _trial(request: dict) -> None:
    """The forked process of one trial: its own session, mount and PID namespaces; the script runs in its child,
    the first process of the PID namespace. Never returns."""
    try:
        os.setsid()  # a process group of its own: the time limit ends it as a whole
        _die_with_parent()
        _system_call("unshare", _CLONE_NEWNS | _CLONE_NEWPID)
        script_process = os.fork()
        if script_process == 0:
            _die_with_parent()  # and with it every process of the namespace
            _start_script(request)
        _, status = os.waitpid(script_process, 0)
        if os.WIFSIGNALED(status):  # end the same way, so that the parent sees the signal
            signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
            os.kill(os.getpid(), os.WTERMSIG(status))
        os._exit(os.waitstatus_to_exitcode(status))
    except BaseException as error:  # noqa: BLE001 - reported through the exit status; the parent says so
        os.write(2, f"trial setup: {error}\n".encode())
        os._exit(EXIT_SETUP_FAILED)


def _start_script(request: dict) -> None:
    output = os.open(request["output"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    for target in (1, 2):
        os.dup2(output, target)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    channel = open(request["result"], "w", encoding="utf-8")  # outside the tree, opened before it is overlaid
    try:
        if not _mount("--make-rprivate", "/"):
            raise OSError("cannot make the mounts of this namespace private")
        isolation = hide_writes(request["root"], request["overlay"])
    except OSError as error:
        channel.write(json.dumps({"setup_error": str(error)}))
        channel.close()
        os._exit(EXIT_SETUP_FAILED)
    # the starter's environment is the trials' one, plus what its preloading set (TF_USE_LEGACY_KERAS, which
    # TensorFlow's lazy Keras loaders read on each use): keep that
    for name, value in request["environment"].items():
        changes.set_environment(
            name, value, owner=Owner.SCAN_TRIAL, reason="the trial's environment, as its script expects"
        )
    os.chdir(request["folder"])
    known = {"isolation": isolation}
    if "command" in request:
        command_and_report(request["command"], channel, known)
    run_and_report(request["run_arguments"], request["root"], channel, known, request["search_last"])


def serve(preload: bool) -> int:
    """The warm starter: one forked trial per request line on stdin; with `preload`, TensorFlow and Keras are
    imported once, here, instead of in every trial."""
    import npu_bridge_compat.runner  # noqa: F401 - what each trial runs

    if preload:
        from npu_bridge_compat.compat import select_keras_2

        select_keras_2()  # as `run` does, before TensorFlow is imported
        import tensorflow as tf

        tf.keras.layers.Layer  # noqa: B018 - Keras loads lazily: every trial would pay for it again

    running: dict[int, int] = {}  # process -> request number
    pending = b""
    stdin = sys.stdin.fileno()
    while True:
        ready, _, _ = select.select([stdin], [], [], 0.05)
        if ready:
            chunk = os.read(stdin, 65536)
            if not chunk:
                return 0  # the parent is done (the trials die with this process)
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                request = json.loads(line)
                sys.stdout.flush()
                process = os.fork()
                if process == 0:
                    _trial(request)
                running[process] = request["number"]
                _reply({"number": request["number"], "pid": process})
        while running:
            process, status = os.waitpid(-1, os.WNOHANG)
            if process == 0:
                break
            _reply({"number": running.pop(process), "status": os.waitstatus_to_exitcode(status)})


def _reply(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


# --- one script per interpreter ------------------------------------------------------------------------------


def main() -> int:
    if sys.argv[1:2] == ["--serve"]:
        return serve(preload=sys.argv[2:] == ["--preload"])
    parser = argparse.ArgumentParser(prog="python -m npu_bridge_compat.scan.trial_child")
    parser.add_argument("--result-fd", type=int, required=True)
    parser.add_argument("--root", required=True, help="the scanned folder (where tracebacks are cut)")
    parser.add_argument("--folder", required=True, help="the script's own folder, its working directory")
    parser.add_argument("--search-last", action="append", default=[], help="a folder searched after the packages")
    parser.add_argument("--command", action="store_true", help="start a command (run -- COMMAND), not a script")
    parser.add_argument("run_arguments", nargs=argparse.REMAINDER)
    arguments = parser.parse_args()
    os.chdir(arguments.folder)
    run_arguments = arguments.run_arguments
    if run_arguments[:1] == ["--"]:
        run_arguments = run_arguments[1:]
    channel = os.fdopen(arguments.result_fd, "w", encoding="utf-8")
    if arguments.command:
        command_and_report(run_arguments, channel)
    run_and_report(run_arguments, arguments.root, channel, search_last=arguments.search_last)
    return 0


if __name__ == "__main__":
    sys.exit(main())
