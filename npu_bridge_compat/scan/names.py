"""What a dotted name is on this host, asked of the worlds `run` serves (legacy/runs.py's `WORLDS`): each world
answers for the names of its trees (`world.status`): the adapter's names (`npu_bridge.*`, `hccl.*`,
`npu_device.*`, npu_bridge_compat's own) from the module tree `run` serves them from, TensorFlow's, Keras', the
era's NumPy and Python names and ModelArts' from their tables. What else is here is scan's own: which tree's
worlds a name is asked of, the names a star import of an adapter module binds, and whether a top-level import is
a package found here (the standard library, the script's own project, installed) or a missing one.

Only npu_bridge_compat's, TensorFlow's and the worlds' counterparts' modules are imported; the scanned code never
is.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
import types

from npu_bridge_compat.imports.world import NameStatus, Status, World, today_has
from npu_bridge_compat.legacy.runs import WORLDS, served_to_every_run
from npu_bridge_compat.scan.reader import ADAPTER_ROOTS

REPORTED = tuple(world for world in WORLDS if world.category)  # the worlds whose names `scan` reports
_NOBODYS = NameStatus(Status.UNKNOWN, "not a name of a world npu_bridge_compat serves")


@functools.cache
def answering(dotted: str) -> tuple[tuple[World, ...], ...]:
    """The worlds answering for `dotted`, grouped by the tree they answer it for, the most specific tree first
    (`tensorflow.keras` before `tensorflow`), each group in the order of `WORLDS`."""
    trees: dict[str, list[World]] = {}
    for world in REPORTED:
        tree = world.answers(dotted)
        if tree is not None:
            trees.setdefault(tree, []).append(world)
    return tuple(tuple(trees[tree]) for tree in sorted(trees, key=len, reverse=True))


def status(dotted: str) -> NameStatus:
    """The answer of the first world answering for `dotted` (the adapter's, for an adapter name)."""
    worlds = answering(dotted)
    return worlds[0][0].status(dotted) if worlds else _NOBODYS


def serving(dotted: str) -> tuple[World | None, NameStatus]:
    """The first world of `WORLDS` that serves `dotted` (works, differs or missing, whatever trees it answers for),
    and its answer."""
    for world in REPORTED:
        found = world.status(dotted)
        if found.status in (Status.WORKS, Status.DIFFERS, Status.MISSING):
            return world, found
    return None, _NOBODYS


def todays(dotted: str) -> bool:
    """Whether a program gets `dotted` as this installation has it: it has the name, and no world serves the
    program's imports of its tree in its place (TF 1.15's tensorflow.python.keras and private modules, the
    standalone Keras under `run --tf1`)."""
    return not any(world.in_tree(dotted, world.program_roots) for world in REPORTED) and today_has(dotted)


def served_by_every_run(module: str) -> bool:
    """Whether a world every run serves serves `module` where this installation has none (imp, distutils,
    moxing): its names say what it becomes, it is no missing package."""
    return any(served_to_every_run(world) and world.finder_serves(module) for world in WORLDS)


@functools.cache
def star_names(module: str) -> frozenset[str]:
    """The names `from module import *` binds, for an adapter module (empty for any other): the adapter world's
    answer for it."""
    found = status(module) if module.split(".")[0] in ADAPTER_ROOTS else _NOBODYS
    if found.status is Status.UNKNOWN or not isinstance(found.value, types.ModuleType):
        return frozenset()
    exported = getattr(found.value, "__all__", None)
    return frozenset(
        exported if exported is not None else (name for name in dir(found.value) if not name.startswith("_"))
    )


class Packages:
    """Whether a top-level import is found here: the standard library, the script's own project, installed."""

    def __init__(self) -> None:
        self._listings: dict[str, frozenset[str]] = {}

    def _modules_in(self, directory: str) -> frozenset[str]:
        listing = self._listings.get(directory)
        if listing is None:
            try:
                entries = os.listdir(directory)
            except OSError:
                entries = []
            listing = frozenset(entry.split(".")[0] for entry in entries)
            self._listings[directory] = listing
        return listing

    def is_local(self, name: str, script_dir: str, project_root: str, search_paths: tuple[str, ...] = ()) -> bool:
        """A module next to the script, in a folder above it up to the scanned root (ported projects put their
        own packages there and on sys.path), or in a folder the script adds to sys.path."""
        if any(name in self._modules_in(os.path.join(script_dir, folder)) for folder in search_paths):
            return True
        directory = script_dir
        while True:
            if name in self._modules_in(directory):
                return True
            if directory == project_root or os.path.dirname(directory) == directory:
                return False
            directory = os.path.dirname(directory)

    @staticmethod
    @functools.cache
    def is_available(name: str) -> bool:
        if name in sys.stdlib_module_names or name in sys.builtin_module_names:
            return True
        try:
            return importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            return False
