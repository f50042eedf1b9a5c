"""`scan` asks the worlds: each world of legacy/runs.py's list answers for its own names (`world.status`) and
carries what scan needs to report them (its category, the command that serves it); scan/ keeps no module of its
own per world, and takes from the worlds' packages only the list and data, never a world or a world's function.
"""

import ast
import importlib
import types
from pathlib import Path

import pytest

from npu_bridge_compat.imports.world import NameStatus, World
from npu_bridge_compat.legacy.runs import WORLDS, command
from npu_bridge_compat.scan.report import Category
from npu_bridge_compat.scan.trial import LABELLED_OUTCOMES

SCAN = Path(__file__).parents[2] / "npu_bridge_compat" / "scan"
LIST = "npu_bridge_compat.legacy.runs"  # where scan reaches the worlds
WORLDS_PACKAGES = ("npu_bridge_compat.legacy", "npu_bridge_compat.estimator_library")


def _in_worlds_packages(module: str) -> bool:
    return any(module == package or module.startswith(package + ".") for package in WORLDS_PACKAGES)


def taken_from_the_worlds(path: Path) -> list[str]:
    """What a module of scan/ takes from the worlds' packages besides the list: a world, a function of a world's
    module, or a whole module of them (`import npu_bridge_compat.legacy.tf1`, `from npu_bridge_compat import
    legacy`)."""
    taken = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            taken += [alias.name for alias in node.names if _in_worlds_packages(alias.name)]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == LIST:
                continue
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if _in_worlds_packages(full) and not _in_worlds_packages(node.module):
                    taken.append(full)  # a module of the worlds' packages, from its parent
                elif _in_worlds_packages(node.module):
                    value = getattr(importlib.import_module(node.module), alias.name)
                    if isinstance(value, (World, types.FunctionType, types.ModuleType)):
                        taken.append(full)
    return taken


def test_scan_takes_from_the_worlds_only_their_list_and_data():
    taken = {path.name: found for path in sorted(SCAN.glob("*.py")) if (found := taken_from_the_worlds(path))}
    assert taken == {}


def test_the_check_sees_a_world_and_its_function(tmp_path):
    """The check itself: scan/'s former per-world glue (a world's status function, a world) is caught."""
    former = tmp_path / "tf26.py"
    former.write_text(
        "from npu_bridge_compat.legacy.keras2 import KERAS2\n"
        "from npu_bridge_compat.legacy.tf26.world import tf26_status\n"
        "from npu_bridge_compat.legacy.era.table import FILLED\n"  # data: allowed
        "from npu_bridge_compat.legacy.runs import WORLDS\n"
        "def hint():\n"
        "    from npu_bridge_compat.legacy import tf1\n"
    )
    assert taken_from_the_worlds(former) == [
        "npu_bridge_compat.legacy.keras2.KERAS2",
        "npu_bridge_compat.legacy.tf26.world.tf26_status",
        "npu_bridge_compat.legacy.tf1",
    ]


def test_scan_has_no_module_of_its_own_per_world():
    assert sorted(path.stem for path in SCAN.glob("*.py") if path.stem in {"tf1", "tf26", "era", "world"}) == []


@pytest.mark.parametrize("world", WORLDS, ids=[world.name for world in WORLDS])
def test_every_world_carries_what_scan_reports_its_names_with(world):
    """A category of the report's (or none: names scan does not report), the command serving it, and one
    answer for a name of each tree it answers for."""
    assert all(Category(category) for category in (world.category, *world.categories.values()) if category)
    assert command(world) in ("run", "run --tf1")
    for tree in world.answers_for:
        assert isinstance(world.status(tree), NameStatus)
        assert world.status(tree) is world.status(tree)  # cached: scan asks thousands of times


def test_the_trials_tell_the_worlds_stand_ins_apart_by_category():
    """The stand-ins whose messages name their world (`<name> (TF 2.6) ...`) are each world's outcome."""
    labelled = {Category(world.category) for world in WORLDS if world.label and world.category}
    assert labelled == set(LABELLED_OUTCOMES)
