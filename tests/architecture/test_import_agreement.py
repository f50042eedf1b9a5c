"""`scan` says what `run` does: every entry of every world's table (every world of legacy/runs.py's one list),
imported as a program's own `from M import N` under a command that serves the world (`run --tf1`, `run --tf2`), on
this line, behaves as the world's name status says: a world added to the list without agreeing with `scan` fails.

One subprocess per world imports all of that world's entries; the verdicts are computed here, from the same tables,
without running the program (as `scan` does).
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import pytest

from npu_bridge_compat.imports.world import Status, World
from npu_bridge_compat.legacy.runs import WORLDS, RunAs
from npu_bridge_compat.plan import HostFacts
from npu_bridge_compat.scan import scan
from npu_bridge_compat.scan.outcomes import FINDINGS, RUN, RUN_TF1, outcome

pytestmark = pytest.mark.starts_processes


def run_serving(world: World) -> RunAs:
    """The first kind of run that serves the world."""
    return next(run_as for run_as in RunAs if world in run_as.worlds)


# What each status promises when the program imports the name.
PROMISED = {
    Status.WORKS: {"imported"},
    Status.CURRENT: {"imported"},
    Status.DIFFERS: {"warned"},
    Status.MISSING: {"stand-in", "import error"},  # a stand-in that raises when used; or, as distutils without
    # setuptools, a module that cannot import at all
}

PROGRAM = r"""
import json, sys, warnings
from npu_bridge_compat.imports.world import DifferenceWarning, Unavailable, WorldModule
from npu_bridge_compat.legacy.runs import WORLDS

def happened(module, name):
    for world in WORLDS:
        world.warned.clear()  # each entry's own warning, even where another path warned for the same counterpart
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = {}
            exec(f"from {module} import {name} as value", {"__file__": __file__, "__name__": "__main__"}, value)
            value = value["value"]
        except ImportError as error:
            return "import error", str(error)
    if isinstance(value, Unavailable):
        return "stand-in", repr(value)
    if isinstance(value, WorldModule) and value._world.entry(value.__name__).gone:
        return "stand-in", repr(value)
    if any(issubclass(warning.category, DifferenceWarning) for warning in caught):
        return "warned", ""
    return "imported", ""

entries = json.loads(sys.argv[1])
print("RESULT " + json.dumps({f"{m}.{n}": happened(m, n) for m, n in entries}))
"""


def entries(world: World) -> list[tuple[str, str]]:
    """Every entry of the world's table as (M, N) of `from M import N`: each module (from its parent), each of its
    names, and each name the world fills into today's modules."""
    found = set()
    for path, row in world.modules.items():
        parent, _, leaf = path.rpartition(".")
        if parent:
            found.add((parent, leaf))
        found.update((path, name) for name in (*row.names, *row.missing, *row.differs))
    for path, row in world.filled.items():
        found.update((path, name) for name in (*row.names, *row.missing, *row.differs))
    return sorted(found)


def verdict(world: World, dotted: str) -> Status:
    """The status `scan` reads for the name: the world's own answer (`world.status`)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return world.status(dotted).status


def imported_under_run(flag: str, asked: list, folder) -> dict:
    """What happened to each `from M import N` of `asked` ([M, N] pairs), imported by a program under `run FLAG`:
    dotted name -> [what, detail]."""
    program = folder / "imports_the_names.py"
    program.write_text(PROGRAM)
    result = subprocess.run(
        [sys.executable, "-m", "npu_bridge_compat", "run", flag, str(program), json.dumps(asked)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=folder,
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("RESULT ")]
    assert result.returncode == 0 and lines, result.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT ") :])


def test_every_world_of_the_list_has_entries_to_check():
    assert all(entries(world) for world in WORLDS)


@pytest.mark.parametrize("world", WORLDS, ids=[world.name for world in WORLDS])
def test_scan_says_what_run_does_for_every_entry_of_the_world(world, tmp_path):
    asked = entries(world)
    happened = imported_under_run(run_serving(world).flag, asked, tmp_path)
    disagreements = {}
    for module, entry in asked:
        dotted = f"{module}.{entry}"
        status = verdict(world, dotted)
        what, detail = happened[dotted]
        if what not in PROMISED.get(status, set()):
            disagreements[dotted] = f"scan: {status}; run: {what} {detail}".strip()
    assert disagreements == {}


# Names that two worlds serve differently, one per kind of run: `scan` says each run's own.
SERVED_PER_RUN = [("keras.layers", "merge")]  # Keras 2.6's merging module under `run`; Keras 1's function, --tf1


@pytest.mark.parametrize("flag, run", [("--tf1", RUN_TF1), ("--tf2", RUN)])
@pytest.mark.parametrize("module, name", SERVED_PER_RUN)
def test_scan_says_for_each_run_what_that_run_serves(module, name, flag, run, tmp_path):
    what, detail = imported_under_run(flag, [[module, name]], tmp_path)[f"{module}.{name}"]

    scanned = tmp_path / "scanned"
    scanned.mkdir()
    (scanned / "train.py").write_text(f"from {module} import {name}\n")
    findings = scan([str(scanned)], host=HostFacts(tf_version="2.15.1", gpu_count=0)).scripts[0].findings
    statuses = {
        status
        for finding in findings
        if finding.name == f"{module}.{name}"
        for status in FINDINGS
        if finding.outcome == outcome(status, run)[0]
    }
    assert len(statuses) == 1, [(finding.name, finding.outcome) for finding in findings]
    assert what in PROMISED[statuses.pop()], f"scan: {statuses}; run {flag}: {what} {detail}"
