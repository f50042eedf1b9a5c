"""One trial of `scan --try`: start a script as `python -m npu_bridge_compat run` does, and write what stopped it.

    python -m npu_bridge_compat.scan.trial_child --result-fd 3 --root DIR [--overlay UPPER] --folder F -- RUN_ARGS

Started by `trial.py` inside `unshare` (a user, mount, network and PID namespace of its own), it first makes the
scanned tree unwritable for the script: an overlay whose upper layer is a scratch folder (the script may write,
its writes are thrown away), or, where the kernel refuses an overlay, the tree bound read-only. Then it runs
`run` in this process, so that the exception that stopped the script reaches here as an object: its type, the
module or name it lacked, and where it was raised are written as JSON to the inherited file descriptor (the
trial's own files live outside the tree, whatever the script sees of it).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import traceback

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
    from npu_bridge_compat.scan.tf1 import tf1_hint

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


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m npu_bridge_compat.scan.trial_child")
    parser.add_argument("--result-fd", type=int, required=True)
    parser.add_argument("--root", required=True, help="the scanned folder, hidden from writes")
    parser.add_argument("--overlay", help="a scratch folder for the overlay's upper layer")
    parser.add_argument("--isolate", action="store_true", help="in a mount namespace of its own: hide writes")
    parser.add_argument("--folder", required=True, help="the script's own folder, its working directory")
    parser.add_argument("run_arguments", nargs=argparse.REMAINDER)
    arguments = parser.parse_args()
    result: dict = {}
    with os.fdopen(arguments.result_fd, "w", encoding="utf-8") as channel:
        try:
            if arguments.isolate:
                result["isolation"] = hide_writes(arguments.root, arguments.overlay)
        except OSError as error:
            channel.write(json.dumps({"setup_error": str(error)}))
            return 1
        try:
            os.chdir(arguments.folder)
            from npu_bridge_compat.cli import main as cli_main

            run_arguments = arguments.run_arguments
            if run_arguments[:1] == ["--"]:
                run_arguments = run_arguments[1:]
            result["exit"] = cli_main(["run", *run_arguments])
        except SystemExit as stop:
            result["exit"] = stop.code if isinstance(stop.code, int) or stop.code is None else 1
        except BaseException as error:  # noqa: BLE001 - whatever stopped the script is the finding
            traceback.print_exc()
            result["exit"] = 1
            result["error"] = describe_exception(error, arguments.root)
        channel.write(json.dumps(result))
        channel.flush()
    sys.stdout.flush()
    sys.stderr.flush()
    # The script's threads and atexit handlers are not ours to wait for: the trial ends with its report.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
