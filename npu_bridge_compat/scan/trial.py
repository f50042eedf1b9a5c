"""`scan --try`: start every entry script of a code base under `run ... --help` and say which would not start.

    report = try_entry_scripts(["models/"], jobs=2, time_limit_s=60)
    print(render_trial_text(report))       # grouped by outcome, then by cause, most common first

An entry script is a file with a `__main__` guard or an `app.run(` call. Each starts as
`python -m npu_bridge_compat run --tf1|--tf2 SCRIPT --help` (the world `run` would choose: world.py decides it
from the static scan's signs in the script and the project modules it imports), in its own folder, with the
environment a ported single-device script expects (RANK_SIZE=1, RANK_ID=0, DEVICE_ID=0, ...), `jobs` at a time,
each for at most `time_limit_s`.

Where the system allows user namespaces, the trials are forked by a warm starter (`trial_child.py --serve`) that
runs in a network namespace with no interface up (a script reaches nothing) and, when a script of the tree
imports TensorFlow, has imported TensorFlow once for all trials; each trial has mount and PID namespaces of its
own, with the scanned tree overlaid (its writes thrown away; read-only where the kernel refuses the overlay), and
whatever the script forked ends with it. Elsewhere each trial is a fresh interpreter in a temporary copy of the
tree, in the host's network, and what a script leaves behind is found by a marker in its environment and ended.
Either way nothing of the tree is written to, and each script runs through `run`'s own code (`runner.run_program`).

Each model folder with a launch script (test/train_performance_1p.sh, else test/train_full_1p.sh, else another
test/train_*_1p.sh) gets one trial more: `run -- bash test/SCRIPT --data_path=EMPTY` from its test/ folder, as its
README starts it, with the fewest epochs or steps where the script's arguments take a count, in the same isolation
and time limit; it is classified by what stopped the first of its Python processes that raised.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import enum
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import NamedTuple

from npu_bridge_compat.distributed.launch import unshare_refusal
from npu_bridge_compat.imports.world import Status
from npu_bridge_compat.legacy import ALIASED_PACKAGES
from npu_bridge_compat.legacy.runs import ONLY_FOR, WORLDS, RunAs
from npu_bridge_compat.processes import TREE_VARIABLE
from npu_bridge_compat.scan.names import answering, served_by_every_run
from npu_bridge_compat.scan.reader import FileFacts, read_file
from npu_bridge_compat.scan.report import Category
from npu_bridge_compat.scan.run_decision import (
    TF1,
    Imported,
    ProgramFile,
    WorldDecision,
    decide,
    local_modules,
    reached_files,
)
from npu_bridge_compat.scan.scanner import SourceFile, default_workers, python_files, scan

DEFAULT_TIME_LIMIT_S = 60.0
ENTRY_MARKS = re.compile(rb"""__name__\s*==\s*['"]__main__['"]|['"]__main__['"]\s*==\s*__name__|\bapp\.run\(""")
# What a ported single-device script reads (ModelZoo's run scripts export these before `python train.py`).
SINGLE_DEVICE_ENVIRONMENT = {
    "RANK_SIZE": "1",
    "RANK_ID": "0",
    "RANK_INDEX": "0",
    "DEVICE_ID": "0",
    "ASCEND_DEVICE_ID": "0",
    "DEVICE_INDEX": "0",
    "JOB_ID": "10087",
}
# A multi-device description inherited from this shell would contradict the single device above.
_JOB_VARIABLES = (
    "RANK_TABLE_FILE",
    "CM_CHIEF_IP",
    "CM_CHIEF_PORT",
    "CM_CHIEF_DEVICE",
    "CM_WORKER_SIZE",
    "CM_WORKER_IP",
)
MARKER_VARIABLE = "NPU_BRIDGE_COMPAT_TRIAL"  # found in the environment of every process a trial starts
NAMESPACES = ("--user", "--map-root-user", "--net", "--mount", "--pid", "--fork")  # what a trial needs
_OUTPUT_TAIL_BYTES = 2000
_HIDDEN = {"overlay": "overlaid (its writes discarded)", "read-only": "read-only"}
ADAPTER_ROOTS = (*ALIASED_PACKAGES, "npu_bridge_compat")
ENTRY_SCRIPT, LAUNCH_SCRIPT = "entry script", "launch script"  # a trial's kind
# Which of a model folder's launch scripts is tried, in order of preference (else the first other one).
LAUNCH_SCRIPT_PREFERENCE = ("train_performance_1p.sh", "train_full_1p.sh")
_LAUNCH_SCRIPT_NAME = re.compile(r"train_\w*_1p\.sh$")
# A count option of a launch script's argument loop (`[[ $para == --train_epochs* ]]`): given 1.
_COUNT_OPTION = re.compile(
    r"==\s*[\"']?--((?:(?:train|max|num|total)_)?(?:epochs?|steps?|iterations?|iters?))[\"']?\*", re.IGNORECASE
)
_MISSING_ARGUMENT = re.compile(r"para\W+(\w+)\W+must be", re.IGNORECASE)  # ModelZoo's template's check
_COMMAND_NOT_FOUND = re.compile(r"([\w./-]+): (?:command not found|No such file or directory)")
_NO_SCRIPT_FILE = re.compile(r"can't open file '([^']+)'")

# Import name -> what to install, where they differ (pip names match import names otherwise, `_` and `-` alike).
PIP_NAMES = {
    "absl": "absl-py",
    "attr": "attrs",
    "Bio": "biopython",
    "bs4": "beautifulsoup4",
    "Crypto": "pycryptodome",
    "cv2": "opencv-python",
    "dateutil": "python-dateutil",
    "docx": "python-docx",
    "fitz": "PyMuPDF",
    "git": "GitPython",
    "google.protobuf": "protobuf",
    "jwt": "PyJWT",
    "Levenshtein": "python-Levenshtein",
    "OpenSSL": "pyOpenSSL",
    "PIL": "Pillow",
    "serial": "pyserial",
    "skimage": "scikit-image",
    "sklearn": "scikit-learn",
    "yaml": "PyYAML",
    "zmq": "pyzmq",
}

# Packages of Ascend's own platforms, which no public index has.
ASCEND_PACKAGES = {
    "acl": "pyACL, of Ascend's CANN toolkit",
    "tbe": "Ascend's CANN toolkit",
    "te": "Ascend's CANN toolkit",
}


class TrialSetupError(RuntimeError):
    """The trials cannot be isolated as promised (the tree could not be hidden from writes)."""


class TrialOutcome(enum.StrEnum):
    """What starting a script under `run ... --help` ended in; the order is the report's."""

    STARTED = "started"
    PACKAGE = "needs a package"
    ADAPTER = "adapter name missing"
    TF1_NAME = "TF 1.15 name missing"
    TF2_NAME = "TF 2.6 name missing"
    KERAS2_NAME = "Keras 2.2 name missing"  # the standalone Keras 2.2 / 2.3 world's stand-in (`run --tf1`)
    MODELARTS_NAME = "ModelArts name missing"  # moxing's training framework (mox.run, ...), which `run` stands in for
    NUMPY_NAME = "NumPy < 1.24 name missing"  # NumPy's removed names (1.24's aliases, 2.0's spellings): era.py
    PYTHON_NAME = "Python 3.7 name missing"  # Python's removed names and modules (collections' ABCs, imp, ...)
    SCRIPT = "script's own error"
    NO_PYTHON = "started no Python script"  # a launch script that ended before its Python script ran
    NEEDS_DATA = "needs its data"  # a launch script's Python script reached the (empty) data folder
    CANNOT_START = "cannot be started"  # a launch script this host cannot start (no bash)
    TIMED_OUT = "timed out"


@dataclasses.dataclass(frozen=True)
class Trial:
    path: str  # as the user named it
    world: WorldDecision | None  # started with --tf1 or --tf2, and why; None for a launch script
    seconds: float
    outcome: TrialOutcome
    cause: str  # what the report groups by: a package, a name, an exception type
    detail: str  # the error message, or why
    where: str | None = None  # file:line in the tree where it was raised
    output_tail: str = ""  # the last lines the script printed (for the failures)
    ended_left_behind: int = 0  # processes it left running that the trial ended (outside a PID namespace)
    kind: str = ENTRY_SCRIPT  # or LAUNCH_SCRIPT
    command: str = ""  # a launch script's command, from its test/ folder

    @property
    def tf1(self) -> bool:
        return self.world is not None and self.world.world == TF1

    def as_json(self) -> dict:
        fields = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
        return {
            **fields,
            "world": self.world.as_json() if self.world is not None else None,
            "outcome": self.outcome.value,
            "seconds": round(self.seconds, 2),
        }


@dataclasses.dataclass(frozen=True)
class TrialReport:
    paths: tuple[str, ...]
    isolation: str  # how the tree was kept unwritten and the network out of reach
    jobs: int
    time_limit_s: float
    seconds: float
    trials: tuple[Trial, ...]

    def by_outcome(self) -> dict[TrialOutcome, list[Trial]]:
        grouped: dict[TrialOutcome, list[Trial]] = {outcome: [] for outcome in TrialOutcome}
        for trial in self.trials:
            grouped[trial.outcome].append(trial)
        return {outcome: trials for outcome, trials in grouped.items() if trials}

    @staticmethod
    def by_cause(trials: Iterable[Trial]) -> dict[str, list[Trial]]:
        """Trials per cause, the most common cause first (ties by name)."""
        grouped: dict[str, list[Trial]] = collections.defaultdict(list)
        for trial in trials:
            grouped[trial.cause].append(trial)
        return dict(sorted(grouped.items(), key=lambda item: (-len(item[1]), item[0])))

    def totals(self) -> dict:
        return {
            "scripts": len(self.trials),
            "launch_scripts": sum(trial.kind == LAUNCH_SCRIPT for trial in self.trials),
            "with_tf1": sum(trial.tf1 for trial in self.trials),
            "world_weighed": sum(
                trial.world is not None and trial.world.guessed and trial.world.has_signs for trial in self.trials
            ),
            "seconds": round(self.seconds, 1),
            **{outcome.value: len(trials) for outcome, trials in self.by_outcome().items()},
        }

    def as_json(self) -> dict:
        return {
            "schema": "npu_bridge_compat.scan-try/3",
            "paths": list(self.paths),
            "isolation": self.isolation,
            "jobs": self.jobs,
            "time_limit_s": self.time_limit_s,
            "totals": self.totals(),
            "causes": {
                outcome.value: {cause: len(group) for cause, group in self.by_cause(trials).items()}
                for outcome, trials in self.by_outcome().items()
            },
            "scripts": [trial.as_json() for trial in self.trials],
        }


# --- which scripts, and their worlds -------------------------------------------------------------------------


def entry_scripts(paths: Sequence[str]) -> list[SourceFile]:
    """The Python files under `paths` with a `__main__` guard or an `app.run(` call."""
    entries = []
    for file in python_files(paths):
        try:
            with open(file.path, "rb") as handle:
                if ENTRY_MARKS.search(handle.read()):
                    entries.append(file)
        except OSError:
            continue  # unreadable: not startable either way, and `scan` reports it
    return entries


def launch_scripts(paths: Sequence[str]) -> list[SourceFile]:
    """One launch script per model folder under the folders of `paths` (a folder holding test/train_*_1p.sh):
    train_performance_1p.sh, else train_full_1p.sh, else the first other."""
    found = []
    for given in paths:
        absolute = os.path.abspath(given)
        if not os.path.isdir(absolute):
            continue
        for directory, folders, names in os.walk(absolute):
            folders[:] = sorted(f for f in folders if not f.startswith(".") and f != "__pycache__")
            if os.path.basename(directory) != "test":
                continue
            scripts = sorted(name for name in names if _LAUNCH_SCRIPT_NAME.match(name))
            if not scripts:
                continue
            name = next((name for name in LAUNCH_SCRIPT_PREFERENCE if name in scripts), scripts[0])
            path = os.path.join(directory, name)
            found.append(SourceFile(path, os.path.join(given, os.path.relpath(path, absolute)), absolute))
    return found


def launch_command(script: str, data_path: str) -> list[str]:
    """The command a launch script's trial starts from its test/ folder, as READMEs do: its data path, and 1 for
    each count of epochs or steps its argument loop takes."""
    with open(script, encoding="utf-8", errors="replace") as handle:
        counts = dict.fromkeys(match.group(1) for match in _COUNT_OPTION.finditer(handle.read()))
    return ["bash", os.path.basename(script), f"--data_path={data_path}", *(f"--{name}=1" for name in counts)]


def read_projects(entries: Sequence[SourceFile]) -> tuple[dict[str, list[Imported]], dict[str, FileFacts]]:
    """The files of the tree each entry script reaches through its imports (itself first; world.reached_files),
    and their facts."""
    facts_of: dict[str, FileFacts] = {}

    def facts(path: str) -> FileFacts:
        if path not in facts_of:
            facts_of[path] = read_file(path)
        return facts_of[path]

    reached = {
        entry.path: reached_files(entry.path, lambda path, root=entry.root: local_modules(facts(path), root))
        for entry in entries
    }
    return reached, facts_of


def decide_worlds(reached: dict[str, list[Imported]]) -> dict[str, WorldDecision]:
    """The world of each entry script (world.py), from the static scan's signs in it and in the modules of the
    tree it imports (directly or through other such modules)."""
    report = scan(sorted({file.path for files in reached.values() for file in files}), workers=1)
    signs = {script.path: script.signs for script in report.scripts}
    return {
        entry: decide(
            ProgramFile(os.path.relpath(file, os.path.dirname(entry)), place, signs[file]) for file, place in files
        )
        for entry, files in reached.items()
    }


def imports_tensorflow(facts: Iterable[FileFacts]) -> bool:
    """Whether any of the files imports TensorFlow, Keras or an adapter (then trials start from a process that has
    already imported TensorFlow)."""
    roots = {"tensorflow", "keras", *ADAPTER_ROOTS}
    return any(imported.module.split(".")[0] in roots for file in facts for imported in file.imports)


def tree_modules(paths: Sequence[str]) -> dict[str, frozenset[str]]:
    """Per scanned folder, the names its scripts may import as their own: every module file's and package folder's
    name in it (scan a collection of projects one project per path to keep them apart)."""
    names: dict[str, set[str]] = collections.defaultdict(set)
    for file in python_files(paths):
        names[file.root].add(os.path.basename(file.path)[:-3])
        names[file.root].update(os.path.relpath(os.path.dirname(file.path), file.root).split(os.sep))
    return {root: frozenset(found - {".", "__init__"}) for root, found in names.items()}


# --- isolation -----------------------------------------------------------------------------------------------


def namespace_refusal() -> str | None:
    """Why the trials cannot have namespaces of their own here; None when they can."""
    return unshare_refusal(NAMESPACES, "user namespaces")


def end_marked_processes(marker: str) -> int:
    """SIGKILL every process whose environment carries `MARKER_VARIABLE=marker`; returns how many there were."""
    needle = f"{MARKER_VARIABLE}={marker}".encode() + b"\0"
    ended = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                if needle not in handle.read() + b"\0":
                    continue
            os.kill(int(entry), signal.SIGKILL)
            ended += 1
        except (OSError, ProcessLookupError):
            continue  # gone meanwhile, or not ours
    return ended


# --- one trial -----------------------------------------------------------------------------------------------


class _Ran(NamedTuple):
    result: dict | None  # what the trial wrote; None when it was killed or the script ended the interpreter
    status: int
    timed_out: bool
    seconds: float
    output_tail: str
    ended_left_behind: int  # processes found by their marker and ended (fresh interpreters only)


class _WarmStarter:
    """The parent's end of `trial_child --serve`: sends a request per script, waits for its end or its time
    limit, and kills its process group on an overrun (its PID namespace takes whatever it forked along)."""

    def __init__(self, scratch: str, environment: dict[str, str], preload: bool) -> None:
        self._log = open(os.path.join(scratch, "starter.log"), "wb")
        command = ["--user", "--map-root-user", "--net", sys.executable, "-m", "npu_bridge_compat.scan.trial_child"]
        self.process = subprocess.Popen(
            [shutil.which("unshare") or "unshare", *command, "--serve", *(["--preload"] if preload else [])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=environment,
            cwd=scratch,  # `python -m` puts its folder on the trials' sys.path: an empty one
            start_new_session=True,
        )
        self._sending = threading.Lock()
        self._replies: dict[int, dict] = collections.defaultdict(dict)
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read_replies, daemon=True)
        self._reader.start()

    def _read_replies(self) -> None:
        for line in self.process.stdout:
            reply = json.loads(line)
            with self._changed:
                self._replies[reply["number"]].update(reply)
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()  # the starter is gone: nobody waits for a reply that cannot come

    def _wait_for(self, number: int, key: str, timeout: float | None) -> bool:
        with self._changed:
            return (
                self._changed.wait_for(lambda: key in self._replies[number] or self.process.poll() is not None, timeout)
                and key in self._replies[number]
            )

    def start(self, number: int, request: dict, time_limit_s: float) -> tuple[int, bool, float]:
        """(exit status, timed out, seconds) of one trial."""
        with self._sending:
            self.process.stdin.write(json.dumps({"number": number, **request}).encode() + b"\n")
            self.process.stdin.flush()
        if not self._wait_for(number, "pid", None):
            raise TrialSetupError(f"the warm starter ended: {self._log_tail()}")
        started = time.monotonic()
        timed_out = not self._wait_for(number, "status", time_limit_s)
        seconds = time.monotonic() - started
        if timed_out:
            _kill_group(self._replies[number]["pid"])
            if not self._wait_for(number, "status", None):
                raise TrialSetupError(f"the warm starter ended: {self._log_tail()}")
        return self._replies.pop(number)["status"], timed_out, seconds

    def _log_tail(self) -> str:
        self._log.flush()
        with open(self._log.name, "rb") as log:
            return log.read()[-_OUTPUT_TAIL_BYTES:].decode(errors="replace")

    def close(self) -> None:
        self.process.stdin.close()  # the starter returns; its trials die with it (parent-death signal)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            _kill_group(self.process.pid)
            self.process.wait()
        self._log.close()


def _kill_group(process: int) -> None:
    try:
        os.killpg(process, signal.SIGKILL)
    except ProcessLookupError:  # not yet its own group leader, or gone
        try:
            os.kill(process, signal.SIGKILL)
        except ProcessLookupError:
            pass


@dataclasses.dataclass(frozen=True)
class _Plan:
    """How every trial of a run is started."""

    scratch: str  # a temporary folder outside the tree
    time_limit_s: float
    starter: _WarmStarter | None  # None: fresh interpreters in copies of the tree
    copies: dict[str, str]  # scanned root -> its temporary copy (without namespaces)
    environment: dict[str, str]


def _start_trial(entry: SourceFile, world: str, plan: _Plan, number: int) -> _Ran:
    """Start one script and wait for it, at most the time limit; then end whatever it left running."""
    root = plan.copies.get(entry.root, entry.root)
    script = os.path.join(root, os.path.relpath(entry.path, entry.root))
    run_arguments = [f"--{world}", script, "--help"]
    search_last = _folders_above(os.path.dirname(script), root)
    return _start(plan, number, root, os.path.dirname(script), run_arguments, search_last)


def _launch_trial(
    launch: SourceFile, plan: _Plan, number: int, own_modules: frozenset[str]
) -> tuple[Trial, str | None]:
    """Start a launch script from its test/ folder as `run -- bash SCRIPT --data_path=EMPTY ...` and classify
    it; with how the tree was hidden (None where it is a copy)."""
    root = plan.copies.get(launch.root, launch.root)
    script = os.path.join(root, os.path.relpath(launch.path, launch.root))
    data_path = os.path.join(plan.scratch, f"data{number}")
    os.makedirs(data_path)
    command = launch_command(script, data_path)
    ran = _start(plan, number, root, os.path.dirname(script), command, [], launch=True)
    outcome, cause, detail, where = classify_launch(
        ran.result, ran.status, ran.timed_out, own_modules, plan.time_limit_s, ran.output_tail, data_path
    )
    tail = "" if outcome is TrialOutcome.STARTED else ran.output_tail
    shown = shlex.join(command).replace(data_path, "EMPTY")
    trial = Trial(
        launch.shown,
        None,
        ran.seconds,
        outcome,
        cause,
        detail,
        where,
        tail,
        ran.ended_left_behind,
        LAUNCH_SCRIPT,
        shown,
    )
    return trial, (ran.result or {}).get("isolation")


def _start(
    plan: _Plan,
    number: int,
    root: str,
    folder: str,
    run_arguments: list[str],
    search_last: list[str],
    launch: bool = False,
) -> _Ran:
    """One trial in `folder`: `run RUN_ARGUMENTS`, or with `launch` the command `run -- RUN_ARGUMENTS`."""
    work = os.path.join(plan.scratch, str(number))
    os.makedirs(work)
    environment = {**plan.environment, TREE_VARIABLE: root} if launch else plan.environment
    output_path = os.path.join(work, "output")
    if plan.starter is not None:
        result_path = os.path.join(work, "result")
        request = {
            "root": root,
            "overlay": work,
            "folder": folder,
            "command" if launch else "run_arguments": run_arguments,
            "output": output_path,
            "result": result_path,
            "environment": environment,
            "search_last": search_last,
        }
        status, timed_out, seconds = plan.starter.start(number, request, plan.time_limit_s)
        result, ended = _read_json(result_path), 0
    else:
        arguments = [
            *(f"--search-last={above}" for above in search_last),
            *(["--command"] if launch else []),
            "--",
            *run_arguments,
        ]
        status, timed_out, seconds, result, ended = _fresh_interpreter(
            root, folder, arguments, output_path, plan, environment
        )
    with open(output_path, "rb") as output:
        output.seek(max(0, output.seek(0, os.SEEK_END) - _OUTPUT_TAIL_BYTES))
        tail = output.read().decode(errors="replace")
    shutil.rmtree(work, ignore_errors=True)
    return _Ran(result, status, timed_out, seconds, tail, ended)


def _folders_above(folder: str, root: str) -> list[str]:
    """The folders above a script's own up to the scanned one, nearest first: where a ported project keeps its own
    packages (ModelZoo's run scripts put them on PYTHONPATH); a trial searches them after the installed ones."""
    folders = []
    while folder != root and os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)
        folders.append(folder)
    return folders


def _fresh_interpreter(
    root: str, folder: str, child_arguments: list[str], output_path: str, plan: _Plan, environment: dict[str, str]
) -> tuple[int, bool, float, dict | None, int]:
    """One trial in an interpreter of its own, in its own process group, marked so that what leaves the group
    is found too."""
    marker = uuid.uuid4().hex
    command = [sys.executable, "-m", "npu_bridge_compat.scan.trial_child", "--root", root, "--folder", folder]
    reading, writing = os.pipe()
    command += ["--result-fd", str(writing), *child_arguments]
    started = time.monotonic()
    with open(output_path, "wb") as output:
        try:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                pass_fds=(writing,),
                start_new_session=True,  # its own process group: an overrun ends with everything it started
                env={**environment, MARKER_VARIABLE: marker},
                cwd=folder,
            )
        finally:
            os.close(writing)
        try:
            process.wait(timeout=plan.time_limit_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
        seconds = time.monotonic() - started
        _kill_group(process.pid)  # the overrun, or what it left in its group
        process.wait()
    ended = end_marked_processes(marker)  # what left the group (setsid)
    return process.returncode, timed_out, seconds, _read_result(reading), ended


def _read_json(path: str) -> dict | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, json.JSONDecodeError):
        return None


def _read_result(reading: int) -> dict | None:
    os.set_blocking(reading, False)  # a writer it left behind must not keep this waiting
    chunks = []
    try:
        while chunk := os.read(reading, 65536):
            chunks.append(chunk)
    except BlockingIOError:
        pass
    finally:
        os.close(reading)
    try:
        return json.loads(b"".join(chunks)) if chunks else None
    except json.JSONDecodeError:
        return None


# --- what stopped it -----------------------------------------------------------------------------------------


_FLAG_ERRORS = ("UnrecognizedFlagError",)  # absl's, for flags parsed by hand (FLAGS(sys.argv))
_CANNOT_IMPORT = re.compile(r"cannot import name '([\w.]+)' from '([\w.]+)'")
_NO_NETWORK = re.compile(r"name resolution|Network is unreachable|Name or service not known|Connection refused")
_NO_ATTRIBUTE = re.compile(r"'[\w.]+' object has no attribute '\w+'$")
_NO_MODULE_ATTRIBUTE = re.compile(r"module '([\w.]+)' has no attribute '(\w+)'")  # NumPy 2's, which name no owner
_SHARED_LIBRARY = re.compile(r"([\w.+-]+\.so[\w.]*): cannot open shared object file")


def classify(
    result: dict | None, status: int, timed_out: bool, tf1: bool, own_modules: frozenset[str], time_limit_s: float
) -> tuple[TrialOutcome, str, str, str | None]:
    """(outcome, cause, detail, where) of one trial."""
    if timed_out:
        return (
            TrialOutcome.TIMED_OUT,
            f"still running after {time_limit_s:g} s",
            "ended with its process group; it may have ignored --help and started its work",
            None,
        )
    if result is None:
        if status < 0:
            name = signal.Signals(-status).name
            return TrialOutcome.SCRIPT, f"killed by {name}", f"the interpreter was killed by {name}", None
        return TrialOutcome.SCRIPT, "left without a report", f"the interpreter ended with status {status}", None
    if "setup_error" in result:
        raise TrialSetupError(result["setup_error"])
    error = result.get("error")
    if error is None:
        return TrialOutcome.STARTED, "started", f"exit status {result.get('exit')}", None
    message = f"{error['type']}: {error['message']}"
    if error["type"] in _FLAG_ERRORS:  # it got past its imports to its own flags, which do not know --help
        return TrialOutcome.STARTED, "started", f"stopped at its flags: {message}", error.get("where")
    outcome, cause = _classify_error(error, tf1, own_modules)
    return outcome, cause, message, error.get("where")


def _classify_error(error: dict, tf1: bool, own_modules: frozenset[str]) -> tuple[TrialOutcome, str]:
    kind, message = error["type"], error["message"]
    if kind in ("ModuleNotFoundError", "ImportError"):
        named = _CANNOT_IMPORT.search(message)
        dotted = f"{named.group(2)}.{named.group(1)}" if named else error.get("module")
        if dotted:
            return _missing_name(dotted, tf1, own_modules, whole_module=kind == "ModuleNotFoundError")
        library = _SHARED_LIBRARY.search(message)
        if library:
            return TrialOutcome.PACKAGE, f"system library {library.group(1)}"
    if kind == "NoCounterpartError":  # a world's stand-in for a name it cannot serve, named first
        return _stand_in(message)
    owner, name = error.get("owner"), error.get("name")
    if kind == "AttributeError" and not owner and (named := _NO_MODULE_ATTRIBUTE.match(message)):
        owner, name = named.groups()
    if kind == "AttributeError" and owner:
        if error.get("tf1_hint") and not tf1:
            return TrialOutcome.TF1_NAME, f"{_public(owner)}.{name} (run --tf1 serves it)"
        return _missing_name(f"{owner}.{name}", tf1, own_modules, whole_module=False)
    if kind == "DeviceOnlyFeatureError":
        return TrialOutcome.ADAPTER, f"Ascend-only: {message.split(':')[0]}"
    if kind in ("SyntaxError", "IndentationError", "TabError"):
        return TrialOutcome.SCRIPT, "SyntaxError"
    if kind == "ImportError" and message.startswith("attempted relative import with no known parent package"):
        return TrialOutcome.SCRIPT, "a relative import: it is a module of its package (python -m), not a script"
    if _NO_NETWORK.search(message):
        return TrialOutcome.SCRIPT, "reaches the network at start (a trial has none)"
    if kind == "AttributeError" and _NO_ATTRIBUTE.match(message):
        return TrialOutcome.SCRIPT, message  # the same mistake in many scripts, e.g. TF 1.x's Dimension.value
    if error.get("file"):
        return TrialOutcome.SCRIPT, f"{kind} (a file it reads at start)"
    return TrialOutcome.SCRIPT, kind


def classify_launch(
    result: dict | None,
    status: int,
    timed_out: bool,
    own_modules: frozenset[str],
    time_limit_s: float,
    output_tail: str,
    data_path: str,
) -> tuple[TrialOutcome, str, str, str | None]:
    """(outcome, cause, detail, where) of a launch script's trial: what stopped the first of its Python scripts
    that raised (as `classify` says it), its data (the data path is an empty folder), or why none ran."""
    if timed_out or result is None:
        return classify(result, status, timed_out, False, own_modules, time_limit_s)
    if "setup_error" in result:
        raise TrialSetupError(result["setup_error"])
    if "not_started" in result:
        return TrialOutcome.CANNOT_START, result["not_started"], result["not_started"], None
    scripts = [child for child in result["children"] if child["served"] in ("tf1", "tf2")]
    failed = next((child for child in scripts if child["error"]), None)
    if failed is not None:
        error = failed["error"]
        if data_path in error["message"] or data_path in (error.get("file") or ""):
            cause = "reads its data at start (--data_path names an empty folder)"
            message = f"{error['type']}: {error['message']}".replace(data_path, "DATA_PATH")
            return TrialOutcome.NEEDS_DATA, cause, message, error.get("where")
        return classify({"error": error}, 1, False, failed["served"] == "tf1", own_modules, time_limit_s)
    if scripts:
        statuses = ", ".join(str(child["status"]) for child in scripts)
        ran = f"{len(scripts)} Python script{'s' * (len(scripts) != 1)}"
        return TrialOutcome.STARTED, "started", f"{ran}, exit status {statuses}; the command's {result['exit']}", None
    lines = [line for line in output_tail.splitlines() if line.strip() and not line.startswith("npu_bridge_compat:")]
    last = lines[-1].strip() if lines else f"no output, exit status {result['exit']}"
    if named := _MISSING_ARGUMENT.search(output_tail):
        cause = f"needs an argument it does not get: --{named.group(1)}"
    elif named := _NO_SCRIPT_FILE.search(output_tail):
        cause = f"its Python script is not there: {os.path.basename(named.group(1))}"
    elif named := _COMMAND_NOT_FOUND.search(output_tail):
        cause = f"a command or file missing on this host: {named.group(1)}"
    else:
        cause = f"the shell script ended with status {result['exit']} before any Python script ran"
    return TrialOutcome.NO_PYTHON, cause, last, None


_ERA_OUTCOMES = {Category.NUMPY: TrialOutcome.NUMPY_NAME, Category.PYTHON: TrialOutcome.PYTHON_NAME}


# The outcome of a stand-in of the worlds whose stand-ins' messages say the world after the name, by its category.
LABELLED_OUTCOMES = {
    Category.TF26: TrialOutcome.TF2_NAME,
    Category.KERAS2: TrialOutcome.KERAS2_NAME,
    Category.MODELARTS: TrialOutcome.MODELARTS_NAME,
}


def _era_category(dotted: str) -> Category | None:
    """The category of a NumPy or Python name of the ports' era (a world answering for it says), else None."""
    for tree in answering(dotted):
        for world in tree:
            if Category(world.category_of(dotted)) in _ERA_OUTCOMES:
                return Category(world.category_of(dotted))
    return None


def _stand_in(message: str) -> tuple[TrialOutcome, str]:
    """The outcome of a world's stand-in that was used, by which world's name it stands for: the era's (NumPy's,
    Python's), TF 2.6's, the standalone Keras 2.2's or ModelArts' moxing's (their messages say so after the name),
    or TF 1.15's."""
    named = message.split(" ", 1)[0]
    dotted = _public(named)
    category = _era_category(dotted)
    if category is not None:
        return _ERA_OUTCOMES[category], dotted
    for world in WORLDS:
        outcome = LABELLED_OUTCOMES.get(world.category)
        if outcome is not None and world.label and message.startswith(f"{named}{world.label} "):
            return outcome, dotted
    return TrialOutcome.TF1_NAME, dotted


def _missing_name(dotted: str, tf1: bool, own_modules: frozenset[str], whole_module: bool) -> tuple[TrialOutcome, str]:
    dotted = _public(dotted)
    top = dotted.split(".")[0]
    if top in ADAPTER_ROOTS:
        return TrialOutcome.ADAPTER, dotted
    if top == "tensorflow":
        if tf1:
            return TrialOutcome.TF1_NAME, dotted
        if _served_to_tf1_programs(dotted):
            return TrialOutcome.TF1_NAME, f"{dotted} (run --tf1 serves it)"
        return TrialOutcome.TF2_NAME, dotted
    if top in own_modules:
        if dotted.endswith("_pb2"):  # generated from a .proto file by protoc, which its setup runs
            return TrialOutcome.SCRIPT, f"its own {dotted.rpartition('.')[0]}.*_pb2 modules are not generated"
        return TrialOutcome.SCRIPT, f"its own module {top} is not on its path" if dotted == top else f"no {dotted}"
    category = _era_category(dotted)
    if category is not None and (served_by_every_run(dotted) or _installed(top)):
        return _ERA_OUTCOMES[category], dotted  # (NumPy itself not installed is a package)
    if whole_module and not _installed(top):
        if top in ASCEND_PACKAGES:
            return TrialOutcome.PACKAGE, f"{top} ({ASCEND_PACKAGES[top]}: not on the public index)"
        package = next((name for name in (dotted, top) if name in PIP_NAMES), None)
        return TrialOutcome.PACKAGE, f"{top} (pip install {PIP_NAMES[package]})" if package else top
    return TrialOutcome.PACKAGE, f"{top}: another version (this one lacks {dotted})"


def _served_to_tf1_programs(dotted: str) -> bool:
    """Whether a world only TF 1.15 programs get serves `dotted` (`run --tf1` would)."""
    return any(
        ONLY_FOR.get(world.name) is RunAs.TF1 and world.status(dotted).status in (Status.WORKS, Status.DIFFERS)
        for tree in answering(dotted)
        for world in tree
    )


def _installed(module: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _public(dotted: str) -> str:
    """TensorFlow's generated API modules by their public names (tensorflow._api.v2.compat.v1 -> tf.compat.v1)."""
    return re.sub(r"^tensorflow\._api\.v2(\.|$)", r"tensorflow\1", dotted)


# --- all of them ---------------------------------------------------------------------------------------------


def try_entry_scripts(
    paths: Sequence[str],
    jobs: int | None = None,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    progress: Callable[[int, int], None] | None = None,
    namespaces: bool | None = None,
) -> TrialReport:
    """Start every entry script under `paths`, `jobs` at a time (default: the cores). `namespaces`: None uses
    them where the system allows, False runs in a temporary copy of the tree instead."""
    started_at = time.monotonic()
    jobs = jobs or default_workers()
    entries = entry_scripts(paths)
    launches = launch_scripts(paths)
    reached, facts = read_projects(entries)
    with_tensorflow = imports_tensorflow(facts.values())
    # (the scan itself imports TensorFlow)
    worlds = decide_worlds(reached) if with_tensorflow else {entry: decide(()) for entry in reached}
    own_modules = tree_modules(paths)
    refusal = namespace_refusal() if namespaces is not False else "asked for a copy"
    environment = {name: value for name, value in os.environ.items() if name not in _JOB_VARIABLES}
    environment.update(SINGLE_DEVICE_ENVIRONMENT)
    environment["PYTHONDONTWRITEBYTECODE"] = "1"  # no __pycache__ in the tree, in a copy or read-only
    environment.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if progress is not None:
        progress(0, len(entries) + len(launches))
    with tempfile.TemporaryDirectory(prefix="npu_bridge_compat_try_") as scratch:
        copies = {}
        if refusal is not None:
            for index, root in enumerate(sorted({entry.root for entry in [*entries, *launches]})):
                copies[root] = shutil.copytree(root, os.path.join(scratch, f"copy{index}"), symlinks=True)
        starter = _WarmStarter(scratch, environment, with_tensorflow) if refusal is None else None
        plan = _Plan(scratch, time_limit_s, starter, copies, environment)
        trials: list[Trial] = []
        isolations: set[str] = set()
        with contextlib.ExitStack() as stack, ThreadPoolExecutor(jobs) as pool:
            if starter is not None:
                stack.callback(starter.close)
            futures = {
                pool.submit(_start_trial, entry, worlds[entry.path].world, plan, number): entry
                for number, entry in enumerate(entries)
            }
            for number, launch in enumerate(launches, start=len(entries)):
                if shutil.which("bash") is None:
                    cause = "no bash on this host (a launch script runs with bash)"
                    trials.append(
                        Trial(launch.shown, None, 0, TrialOutcome.CANNOT_START, cause, cause, kind=LAUNCH_SCRIPT)
                    )
                else:
                    modules = own_modules.get(launch.root, frozenset())
                    futures[pool.submit(_launch_trial, launch, plan, number, modules)] = launch
            for done, future in enumerate(as_completed(futures), start=1):
                entry = futures[future]
                if entry in launches:
                    trial, isolation = future.result()
                    trials.append(trial)
                    isolations.update(filter(None, [isolation]))
                    if progress is not None:
                        progress(done, len(futures))
                    continue
                ran = future.result()
                world = worlds[entry.path]
                outcome, cause, detail, where = classify(
                    ran.result, ran.status, ran.timed_out, world.world == TF1, own_modules[entry.root], time_limit_s
                )
                if ran.result and "isolation" in ran.result:
                    isolations.add(ran.result["isolation"])
                tail = "" if outcome is TrialOutcome.STARTED else ran.output_tail
                left = ran.ended_left_behind
                trials.append(Trial(entry.shown, world, ran.seconds, outcome, cause, detail, where, tail, left))
                if progress is not None:
                    progress(done, len(futures))
    hidden = " or ".join(_HIDDEN[way] for way in sorted(isolations)) or _HIDDEN["overlay"]
    isolation = (
        f"namespaces of its own per script: no network, the tree {hidden}, its processes ended with it"
        if refusal is None
        else f"a temporary copy of the tree, in this host's network, because {refusal}"
    )
    trials.sort(key=lambda trial: trial.path)
    return TrialReport(tuple(paths), isolation, jobs, time_limit_s, time.monotonic() - started_at, tuple(trials))
