"""The ports' NumPy and Python era: ported programs were written for NumPy < 1.24 and Python 3.7, and use names
today's NumPy and Python removed (`np.float`, `np.int`, `collections.Iterable`, `import imp`, `distutils`,
`time.clock`, `inspect.getargspec`, NumPy 2.0's `np.NaN`, `np.product`, ...). In this world, from one table
(table.py) read by the one engine of the worlds (imports/world.py), each resolves to its documented counterpart
and warns once per name (`EraNameWarning`, at the program's line that used it); a name with no faithful
counterpart raises `NoCounterpartError` naming it and what replaces it when used. One behaviour of the era's
libraries is served too: absl-py < 2.0's `DEFINE_enum` with a str as `enum_values` (absl_flags.py).

`run` installs it for every script (both worlds); `install_era_world()` does it from Python, undone with
`changes.undo(owner=Owner.ERA_WORLD)`. `ERA.status(dotted)` is what `scan` reads (`era_status`: the shortest
part of a name that the era serves). Importing this package changes nothing and imports neither NumPy nor
TensorFlow.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect
import sys
from typing import Any

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.imports.world import (
    ENGINE_DEFAULT,
    DifferenceWarning,
    Found,
    NameStatus,
    Rules,
    Status,
    World,
    importable,
)
from npu_bridge_compat.legacy.era.absl_flags import STR_ENUM_VALUES, refuses_str_enum_values, str_enum_values_init
from npu_bridge_compat.legacy.era.table import FILLED, MODULES, NO_SETUPTOOLS

__all__ = ["ERA", "EraNameWarning", "install_era_world"]

OWNER = Owner.ERA_WORLD
ROOTS = (*MODULES, *FILLED)  # the modules whose names the table knows (imp, distutils, numpy, collections, time, ...)
STR_ENUM_CALL = "absl.flags.DEFINE_enum"  # absl-py < 2.0 took a str as its enum_values


class EraNameWarning(DifferenceWarning):
    """A NumPy or Python name that today's versions removed was served by its counterpart; said once per name."""


def _where(path: str) -> str:
    if path == "numpy" or path.startswith("numpy."):
        return f"NumPy {importlib.import_module('numpy').__version__}"
    return f"Python {sys.version_info.major}.{sys.version_info.minor}"


def _is_distutils(path: str) -> bool:
    return path == "distutils" or path.startswith("distutils.")


def _module_for_import(world: World, fullname: str) -> Any:
    """distutils without setuptools: an import error saying so."""
    if not _is_distutils(fullname):
        return ENGINE_DEFAULT
    try:
        return world.served_module(fullname)
    except ImportError:
        raise ModuleNotFoundError(f"{fullname}: {NO_SETUPTOOLS}.", name=fullname) from None


def _module_found(world: World, path: str) -> Any:
    """distutils without setuptools is missing, as importing it raises (so that `scan` says so rather than calling
    it served)."""
    if _is_distutils(path) and not importable(MODULES["distutils"].sources[0]):
        return Found(Status.MISSING, NO_SETUPTOOLS, module=path)
    return ENGINE_DEFAULT


def _filled_modules(world: World, key: str) -> Any:
    if key == "numpy" and importlib.util.find_spec("numpy") is None:
        return []
    return ENGINE_DEFAULT


def _fill_reason(world: World, key: str) -> str:
    return (
        f"names ported programs use that {_where(key)} removed ({', '.join(sorted(FILLED[key].names)[:4])}, "
        "...), served by their counterparts"
    )


def _install_more(world: World) -> None:
    """absl-py < 2.0's str `enum_values`."""
    if not refuses_str_enum_values():
        return
    from absl import flags

    def on_first_use() -> bool:
        first = STR_ENUM_VALUES not in world.warned
        world.warned.add(STR_ENUM_VALUES)
        return first

    changes.replace_attribute(
        flags.EnumParser,
        "__init__",
        str_enum_values_init(flags.EnumParser.__init__, on_first_use, EraNameWarning),
        owner=world.owner,
        label="absl.flags.EnumParser",
        reason=f"a str as DEFINE_enum's enum_values, as the TF official models' flags pass one: {STR_ENUM_VALUES}",
    )


def _in_the_table(world: World, dotted: str) -> bool:
    """Whether the era's table can know `dotted`: a name under a module the era serves, or one it fills into
    today's module (`numpy.float`). Any other name of numpy, collections, time or inspect is today's or nobody's,
    and is not looked up: that would import whatever module of NumPy the scanned code names."""
    if world.in_tree(dotted, world.finder_roots):
        return True
    for key, spec in world.filled.items():
        if dotted.startswith(key + "."):
            name = dotted[len(key) + 1 :].partition(".")[0]
            return name in spec.names or name in spec.missing
    return False


def _held_today(world: World, dotted: str) -> NameStatus:
    """A name the table does not know: current where it is a name today's module of a `filled` entry holds
    (`numpy.float32`, read without importing anything of the module's), else unknown."""
    key, _, name = dotted.rpartition(".")
    if key in world.filled and inspect.getattr_static(importlib.import_module(key), name, None) is not None:
        return NameStatus(Status.CURRENT, "this host has it under the same name")
    return NameStatus(Status.UNKNOWN, world.unknown_detail)


def era_status(world: World, dotted: str) -> NameStatus:
    """What a NumPy or Python dotted name (`numpy.float`, `collections.Iterable`, `imp.load_source`) becomes under
    `run` here (the era world's `status` rule), for the shortest part of it the era serves (`NameStatus.name`):
    the shortest part served by a counterpart that differs or by none (`imp.load_source`, not `imp`), else the
    shortest served as it was (`imp` on Python 3.12); current where this host has it all, unknown where the table
    does not know it. absl-py's `DEFINE_enum` differs where this absl-py refuses a str as its enum_values."""
    if dotted == STR_ENUM_CALL:
        if refuses_str_enum_values():
            return NameStatus(Status.DIFFERS, STR_ENUM_VALUES)
        return NameStatus(Status.CURRENT, "this absl-py takes a str as enum_values")
    if not world.in_tree(dotted, ROOTS) or not _in_the_table(world, dotted):
        return _held_today(world, dotted)
    parts = dotted.split(".")
    served = None
    for cut in range(1, len(parts) + 1):
        name = ".".join(parts[:cut])
        if not world.in_tree(name, ROOTS):
            continue  # `xml` and `xml.etree` of `xml.etree.cElementTree`
        status = world.table_status(name)
        if status.status is Status.CURRENT and name in world.finder_roots:
            break  # this Python has the module (imp on 3.11): all under it is its own
        if status.status in (Status.DIFFERS, Status.MISSING):
            return dataclasses.replace(status, name=name)
        if status.status is Status.WORKS:
            served = served or dataclasses.replace(status, name=name)
        elif status.status is Status.UNKNOWN:
            return served or status
    return served or NameStatus(Status.CURRENT, "this host has it under the same name")


ERA = World(
    name="era",
    owner=OWNER,
    era="NumPy < 1.24 / Python 3.7",
    modules=MODULES,
    warning=EraNameWarning,
    filled=FILLED,
    roots=ROOTS,
    finder_roots=tuple(MODULES),
    serves="imp, distutils and xml.etree.cElementTree (removed in Python 3.9 and 3.12) where this Python lacks them, "
    "from the era table",
    rules=Rules(
        where=_where,
        module_for_import=_module_for_import,
        module_found=_module_found,
        filled_modules=_filled_modules,
        fill_reason=_fill_reason,
        install_more=_install_more,
        status=era_status,
    ),
    category="Python 3.7 name",
    categories={"numpy": "NumPy < 1.24 name"},
)


def install_era_world() -> None:
    """Serve the removed NumPy and Python names for the rest of the process (idempotent, through the changes
    registry): the filled-in names on numpy, collections, time and inspect, the modules imp, distutils and
    xml.etree.cElementTree where this Python has none, and absl-py < 2.0's str `enum_values`."""
    ERA.install()
