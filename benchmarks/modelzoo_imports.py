"""Which TensorFlow and Keras names ModelZoo-TensorFlow's model folders import resolve under `run`, folder-weighted.

    python benchmarks/modelzoo_imports.py PATH                 # a ModelZoo-TensorFlow checkout, both trees
    python benchmarks/modelzoo_imports.py PATH --tree TensorFlow2 --json out.json

Every `tensorflow.python.*`, `tensorflow.contrib.*`, `tensorflow.tools.*`, `tensorflow.keras.*` and `keras.*` name
that a model folder's Python files import (read by scan's reader, never run) is imported as a program statement
(`from M import N`, `import M`, `from M import *`, as the folder wrote it) in a child started as a user starts a
ported script: `python -m npu_bridge_compat run --tf1` for TensorFlow/ (the TF1 adapter's ports); for TensorFlow2/,
`run` in the world it chooses for the importing file (`--tf2`, or `--tf1` for the TF 1.15 files of the libraries
some folders vendor). One child per tree and world imports all of its names, each in its own try/except, and says
of each: it resolves; it resolves to a stand-in that raises NoCounterpartError when used (with the error's message,
which names what replaces it); or it fails, with the error. A name counts once per model folder that imports it; a
name imported in several forms fails when one of them does.

A model folder is the first folder, two levels below the tree's `built-in` / `contrib` (below the domain folder),
whose name says `_for_TensorFlow` or that holds a .py or .sh file, or a test/ or scripts/ folder, itself. Names whose
top package the folder vendors (a `keras/__init__.py` of its own) are its own code and are not counted.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the package of this checkout, as `run` imports it

from npu_bridge_compat.scan.reader import read_file  # noqa: E402

# The world each tree's programs run in: TensorFlow/ holds the TF1 adapter's ports (`run --tf1`); for TensorFlow2/,
# the world `run` itself chooses for the importing file from its signs (a TF 1.15 file of a vendored library runs
# as one).
TREES = {"TensorFlow": "tf1", "TensorFlow2": None}
PREFIXES = ("tensorflow.python", "tensorflow.contrib", "tensorflow.tools", "tensorflow.keras", "keras")
MODEL_NAME = re.compile(r"_for_tensorflow", re.IGNORECASE)
MODEL_MARKERS = {"test", "scripts", "script"}
CHILD_LIMIT_SECONDS = 1800

RESOLVES, NO_COUNTERPART, FAILS = "resolves", "no counterpart", "fails"

# The child: a program file of its own (outside site-packages, so `run`'s hooks treat its imports as the program's),
# importing each statement with its own globals and writing one JSON line per statement as it goes.
CHILD = r'''
import builtins, json, sys, traceback

try:
    from npu_bridge_compat.errors import NoCounterpartError
except ImportError:
    from npu_bridge_compat.imports.world import NoCounterpartError
try:
    from npu_bridge_compat.imports.world import Unavailable, WorldModule
except ImportError:
    Unavailable = WorldModule = ()
UNKNOWN = "name npu_bridge_compat maps"  # the engine's sentence for a name no table lists


def stand_in_error(value):
    """The NoCounterpartError a stand-in raises when used, or None for a real object."""
    if isinstance(value, Unavailable):
        try:
            value()
        except NoCounterpartError as error:
            return error
    if isinstance(value, WorldModule):  # a module with no counterpart: its whole tree is stand-ins
        found = value._world.module_found(value.__name__)
        if found.status == "missing":
            return NoCounterpartError(f"{value.__name__} has no counterpart here: {found.detail}")
    return None


def verdict(error):
    """A stand-in for a name the world's table does not know names no replacement: that is a failure too."""
    if UNKNOWN in str(error):
        return ["fails", f"a stand-in for a name the table does not know: {error}"]
    return ["no counterpart", str(error)]


def bound_value(statement, namespace):
    words = statement.split()
    if words[0] == "from" and words[-1] != "*":
        return namespace[words[-1]]
    if words[0] == "import":
        value = namespace[words[1].split(".")[0]]
        for part in words[1].split(".")[1:]:
            value = getattr(value, part)
        return value
    return None


statements, results = sys.argv[1], sys.argv[2]
with open(statements) as handle:
    todo = json.load(handle)
with open(results, "a") as out:
    for statement in todo:
        namespace = {"__name__": "modelzoo_probe", "__file__": __file__, "__builtins__": builtins}
        try:
            exec(compile(statement, __file__, "exec"), namespace)
            error = stand_in_error(bound_value(statement, namespace))
            record = verdict(error) if error else ["resolves", ""]
        except NoCounterpartError as error:
            record = verdict(error)
        except BaseException as error:
            lines = traceback.format_exception_only(type(error), error)
            record = ["fails", "".join(lines).strip().splitlines()[-1][:400]]
        out.write(json.dumps([statement, *record]) + "\n")
        out.flush()
'''


@dataclass
class Name:
    """A dotted name some model folders import, the statements they import it with, and what became of it."""

    dotted: str
    world: str  # tf1 | tf2: the world `run` imports it in
    statements: set[str] = field(default_factory=set)
    folders: set[str] = field(default_factory=set)
    unguarded: set[str] = field(default_factory=set)  # the folders importing it outside a try/except ImportError
    outcome: str = RESOLVES
    detail: str = ""
    statement: str = ""  # the statement the detail is about


def model_folders(tree: Path) -> Iterator[Path]:
    def walk(folder: Path, depth: int) -> Iterator[Path]:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
        holds_code = any(
            entry.is_file() and entry.name.endswith((".py", ".sh")) or entry.is_dir() and entry.name in MODEL_MARKERS
            for entry in entries
        )
        if MODEL_NAME.search(folder.name) and depth >= 2 or depth >= 3 and holds_code:
            yield folder
            return
        for entry in entries:
            if entry.is_dir() and not entry.name.startswith("."):
                yield from walk(Path(entry.path), depth + 1)

    for part in ("built-in", "contrib"):
        if (tree / part).is_dir():
            yield from walk(tree / part, 1)


def _counted(dotted: str) -> bool:
    return any(dotted == prefix or dotted.startswith(prefix + ".") for prefix in PREFIXES)


def counted_imports(folder: Path) -> Iterator[tuple[Path, str, str, bool]]:
    """(file, dotted name, statement, unguarded) for each counted import of the folder's Python files; unguarded:
    outside a try/except ImportError."""
    vendored = {path.parent.name for path in folder.rglob("__init__.py")}
    for path in sorted(folder.rglob("*.py")):
        for imported in read_file(str(path)).imports:
            if imported.level or not imported.module:
                continue
            module, name = imported.module, imported.name
            dotted = module if name in (None, "*") else f"{module}.{name}"
            root = module.split(".")[0]
            if not _counted(dotted) or root in vendored or (path.parent / f"{root}.py").exists():
                continue
            statement = f"import {module}" if name is None else f"from {module} import {name}"
            yield path, dotted, statement, not imported.optional


CHOOSER = """
import json, sys
from npu_bridge_compat.runner import choose_world
print(json.dumps({path: choose_world(path, None) for path in json.load(sys.stdin)}))
"""


def chosen_worlds(paths: list[str], python: str) -> dict[str, str]:
    """The world `run` chooses for each file (runner.choose_world: its signs, read, never run), in one child."""
    child = subprocess.run(
        [python, "-c", CHOOSER],
        input=json.dumps(paths),
        capture_output=True,
        text=True,
        timeout=CHILD_LIMIT_SECONDS,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    if child.returncode:
        raise RuntimeError(f"choosing the files' worlds failed: {child.stderr[-2000:]}")
    return json.loads(child.stdout.strip().splitlines()[-1])


def collect(tree: Path, world: str | None, python: str) -> tuple[dict[tuple[str, str], Name], int]:
    """(world, dotted name) -> Name, and the number of model folders."""
    imports = [(folder, *found) for folder in model_folders(tree) for found in counted_imports(folder)]
    folders = len(set(model_folders(tree)))
    worlds = chosen_worlds(sorted({str(path) for _, path, *_ in imports}), python) if world is None else {}
    names: dict[tuple[str, str], Name] = {}
    for folder, path, dotted, statement, unguarded in imports:
        file_world = world or worlds[str(path)]
        entry = names.setdefault((file_world, dotted), Name(dotted, file_world))
        entry.statements.add(statement)
        entry.folders.add(str(folder.relative_to(tree)))
        if unguarded:
            entry.unguarded.add(str(folder.relative_to(tree)))
    return names, folders


def import_all(statements: list[str], world: str, python: str) -> dict[str, list[str]]:
    """statement -> [outcome, detail], from children of `run` (a child that dies is restarted after the statement
    that killed it, which fails with its exit status)."""
    results: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory(prefix="modelzoo_imports_") as folder:
        program = Path(folder) / "probe.py"
        program.write_text(CHILD)
        output = Path(folder) / "results.jsonl"
        todo = list(statements)
        while todo:
            listing = Path(folder) / "statements.json"
            listing.write_text(json.dumps(todo))
            child = subprocess.run(
                [python, "-m", "npu_bridge_compat", "run", f"--{world}", str(program), str(listing), str(output)],
                capture_output=True,
                text=True,
                timeout=CHILD_LIMIT_SECONDS,
                cwd=folder,
                env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""},
            )
            for line in output.read_text().splitlines():
                statement, *record = json.loads(line)
                results[statement] = record
            todo = [statement for statement in todo if statement not in results]
            if todo:
                last_lines = " | ".join(child.stderr.strip().splitlines()[-3:])
                results[todo.pop(0)] = [FAILS, f"the process ended (exit status {child.returncode}): {last_lines}"]
    return results


def measure(modelzoo: Path, tree_name: str, python: str) -> dict:
    tree = modelzoo / tree_name
    names, folder_count = collect(tree, TREES[tree_name], python)
    results = {}
    for world in sorted({name.world for name in names.values()}):
        chosen = [name for name in names.values() if name.world == world]
        statements = sorted({statement for name in chosen for statement in name.statements})
        results[world] = import_all(statements, world, python)
    rank = {RESOLVES: 0, NO_COUNTERPART: 1, FAILS: 2}
    for name in names.values():
        for statement in sorted(name.statements):
            outcome, detail = results[name.world][statement]
            if rank[outcome] > rank[name.outcome]:
                name.outcome, name.detail, name.statement = outcome, detail, statement
    importing = set().union(*(name.folders for name in names.values())) if names else set()
    uses = sum(len(name.folders) for name in names.values())

    def summary(outcome: str) -> dict:
        chosen = [name for name in names.values() if name.outcome == outcome]
        return {
            "names": len(chosen),
            "uses": sum(len(name.folders) for name in chosen),
            "unguarded_uses": sum(len(name.unguarded) for name in chosen),
            "folders": len(set().union(*(name.folders for name in chosen))) if chosen else 0,
            "unguarded_folders": len(set().union(*(name.unguarded for name in chosen))) if chosen else 0,
        }

    listed = sorted(
        (name for name in names.values() if name.outcome != RESOLVES), key=lambda n: (-len(n.folders), n.dotted)
    )
    return {
        "tree": tree_name,
        "run": "run --tf1" if TREES[tree_name] else "run (the world it chooses per file)",
        "worlds": {world: sum(1 for name in names.values() if name.world == world) for world in results},
        "model_folders": folder_count,
        "importing_folders": len(importing),
        "names": len(names),
        "uses": uses,
        RESOLVES: summary(RESOLVES),
        NO_COUNTERPART: summary(NO_COUNTERPART),
        FAILS: summary(FAILS),
        "not_resolving": [
            {
                "name": name.dotted,
                "world": name.world,
                "outcome": name.outcome,
                "folders": len(name.folders),
                "unguarded_folders": len(name.unguarded),
                "statement": name.statement,
                "detail": name.detail,
                "example_folder": sorted(name.folders)[0],
            }
            for name in listed
        ],
    }


def render(report: dict) -> str:
    lines = [
        f"{report['tree']} under `{report['run']}`: {report['model_folders']} model folders, "
        f"{report['importing_folders']} import {report['names']} such names ({report['uses']} folder-weighted uses; "
        f"names by world: {report['worlds']})",
    ]
    lines.append("  (uses / folders; in brackets, those importing it outside a try/except ImportError)")
    for outcome in (RESOLVES, NO_COUNTERPART, FAILS):
        part = report[outcome]
        lines.append(
            f"  {outcome:15} {part['names']:5} names {part['uses']:6} uses ({part['unguarded_uses']}) "
            f"{part['folders']:5} folders ({part['unguarded_folders']})"
        )
    for outcome in (FAILS, NO_COUNTERPART):
        rows = [row for row in report["not_resolving"] if row["outcome"] == outcome]
        if rows:
            lines.append(f"  {outcome}, by folder count (unguarded in brackets):")
            lines.extend(
                f"    {row['folders']:4} ({row['unguarded_folders']})  [{row['world']}] {row['statement']}\n"
                f"          {row['detail']}"
                for row in rows
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "modelzoo",
        nargs="?",
        default=os.environ.get("NPU_BRIDGE_COMPAT_MODELZOO"),
        help="a ModelZoo-TensorFlow checkout (default: $NPU_BRIDGE_COMPAT_MODELZOO)",
    )
    parser.add_argument("--tree", choices=sorted(TREES), action="append", help="one tree (default: both)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    parser.add_argument("--python", default=sys.executable, help="the Python whose `run` imports the names")
    arguments = parser.parse_args()
    if arguments.modelzoo is None:
        parser.error("name a ModelZoo-TensorFlow checkout (or set NPU_BRIDGE_COMPAT_MODELZOO)")
    modelzoo = Path(arguments.modelzoo)
    trees = arguments.tree or list(TREES)
    missing = [tree for tree in trees if not (modelzoo / tree).is_dir()]
    if missing:
        parser.error(f"{modelzoo} has no {', '.join(missing)} folder: give a ModelZoo-TensorFlow checkout")
    reports = [measure(modelzoo, tree, arguments.python) for tree in trees]
    version = subprocess.run(
        [arguments.python, "-c", "import tensorflow as tf; print(tf.__version__)"],
        capture_output=True,
        text=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    ).stdout.strip()
    print(f"TensorFlow {version}")
    for report in reports:
        print(render(report))
    if arguments.json:
        Path(arguments.json).write_text(json.dumps({"tensorflow": version, "trees": reports}, indent=1) + "\n")


if __name__ == "__main__":
    main()
