"""The TF 1.15 world: its table (table.py) read by the one engine (legacy/world.py).

A virtual module resolves each name on first access, from the table alone. Names with no counterpart resolve to
stand-ins that raise `NoCounterpartError` when used, so `import tensorflow.contrib...` never fails for them
(tensorflow.contrib is a closed tree: a name the table does not know is a stand-in too, naming the closest known
one); counterparts that behave differently warn once (`Tf1DifferenceWarning`). `tf1_name_status` answers from the
same lookup, without running any user code.
"""

from __future__ import annotations

import functools
import importlib.machinery
from typing import Any

from npu_bridge_compat.legacy.tf1.table import MODULES, PUBLIC_ROOTS, ROOTS, Module
from npu_bridge_compat.legacy.world import (
    DifferenceWarning,
    NameStatus,
    NoCounterpartError,
    Unavailable,
    World,
    WorldFinder,
    WorldModule,
    looking_up,
)

__all__ = [
    "NameStatus",
    "NoCounterpartError",
    "PUBLIC_ROOTS",
    "TF1",
    "Tf1DifferenceWarning",
    "Tf1Finder",
    "Tf1Module",
    "Unavailable",
    "tf1_name_status",
    "virtual_module",
]

_PREFIX = "tensorflow."
_UNKNOWN_TREE = NameStatus(
    "unknown",
    "not in the TF 1.15 trees npu_bridge_compat maps (tensorflow.contrib, "
    "tensorflow.python.keras, tensorflow.examples)",
)


class Tf1DifferenceWarning(DifferenceWarning):
    """A TF 1.15 name runs on a counterpart that behaves differently; said once per name."""


class Tf1Module(WorldModule):
    """A TF 1.15 module that TensorFlow 2 lacks (or that the program sees in place of today's): its names resolve
    from the table on first access. `Tf1Module("contrib.layers")` is `tensorflow.contrib.layers`."""

    def __init__(self, world_or_path: Any, path: str | None = None) -> None:
        if path is None:  # Tf1Module("contrib.distribute"): a path below tensorflow.
            world_or_path, path = TF1, _PREFIX + world_or_path
        super().__init__(world_or_path, path)


class _Tf1World(World):
    module_class = Tf1Module

    def replaces_todays(self, fullname: str) -> bool:
        return True  # install_tf1_world refuses a TensorFlow that has a tensorflow.contrib of its own


TF1 = _Tf1World(
    era="TF 1.15",
    modules={_PREFIX + path: spec for path, spec in MODULES.items()},
    warning=Tf1DifferenceWarning,
    roots=tuple(_PREFIX + root for root in ROOTS),
    finder_roots=tuple(_PREFIX + root for root in PUBLIC_ROOTS),
    program_roots=tuple(_PREFIX + root for root in ROOTS if root.startswith("python.")),
    stand_in_unknown=True,
    aliases=False,  # a closed tree: each module answers for its names, a stand-in for any it does not know
)


def module_spec(path: str) -> Module | None:
    """The entry of a module path below `tensorflow.` (`contrib.layers`), or None for one the table lacks."""
    return TF1.module_spec(_PREFIX + path)


def virtual_module(path: str) -> Tf1Module:
    """The one module object of a module path below `tensorflow.` (the same for attribute access, imports and the
    import hook); ModuleNotFoundError when the path is not a module of the tree."""
    return TF1.served_module(_PREFIX + path)


class Tf1Finder(WorldFinder):
    """Serves `tensorflow.contrib...` and `tensorflow.examples...` imports with the virtual modules."""

    def __init__(self) -> None:
        super().__init__(TF1)

    def find_spec(self, fullname, path=None, target=None):
        if fullname in looking_up.paths or not TF1.in_tree(fullname, TF1.finder_roots):
            return None
        if TF1.module_spec(fullname) is not None:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None


@functools.cache
def tf1_name_status(dotted_name: str) -> NameStatus:
    """What a TF 1.15 dotted name (`tensorflow.contrib.layers.xavier_initializer`, `tensorflow.contrib.tpu`, ...)
    becomes on this TensorFlow here. Imports TensorFlow and the counterparts' libraries, never user code."""
    if not TF1.in_tree(dotted_name, TF1.roots):
        return _UNKNOWN_TREE
    return TF1.name_status(dotted_name)
