"""The adapter's import paths as a world of the one engine (imports/world.py): `npu_bridge.*`, `hccl.*` and
`npu_device.*` are the files of this package's trees legacy/npu_bridge, legacy/hccl and legacy/npu_device, each
loaded under the adapter's path (so that it sees its own `__name__`, and its relative imports stay in the alias);
`npu_device.compat.v1.<module>` is `npu_bridge.<module>` without the adapter's loss-scale names, which the TF2
adapter's build drops from its copy of npu_bridge (tf_adapter_2.x/compat_v1/).

`ADAPTER.status(name)` answers for the adapter's names and npu_bridge_compat's own (`adapter_status`): each is
looked up in the module tree `run` serves it from, so `scan` knows every name `run` serves and nothing else; a
name implemented with `errors.device_only` is device-only.

Nothing is served until the world is installed (`install_aliases()`, or a script started with
`python -m npu_bridge_compat run`): a real npu_bridge must never be shadowed by accident, so the world refuses to
install where one is importable.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import pkgutil
import types
from typing import Any

from npu_bridge_compat.changes import Owner
from npu_bridge_compat.compat.versions import unavailable_reason
from npu_bridge_compat.compat.xla import reserve_fusion_flags
from npu_bridge_compat.errors import NpuConfigError, closest_name, is_device_only
from npu_bridge_compat.imports.program import count_as_program
from npu_bridge_compat.imports.world import Module, NameStatus, Rules, Status, World, WorldFinder

PACKAGE = "npu_bridge_compat"
TREES_PACKAGE = f"{PACKAGE}.legacy"  # the package whose subpackages are the adapter's trees
ALIASED_PACKAGES = ("npu_bridge", "hccl", "npu_device")
TF1_UNDER_TF2 = "npu_device.compat.v1"
DROPPED_UNDER_TF2 = ("NPULossScaleOptimizer", "FixedLossScaleManager", "ExponentialUpdateLossScaleManager")
for _tree in ("npu_bridge", "hccl"):  # they re-export `tf` to scripts, as the adapter did
    count_as_program(os.path.join(os.path.dirname(os.path.abspath(__file__)), _tree))

# The world's table: each of the adapter's packages and the tree whose files it is; below TF1_UNDER_TF2 (itself a
# file of the npu_device tree), each module is a copy of npu_bridge's module of the same name, minus some names.
MODULES = {
    **{package: Module(sources=(f"{TREES_PACKAGE}.{package}",)) for package in ALIASED_PACKAGES},
    TF1_UNDER_TF2: Module(sources=("npu_bridge",), note="npu_bridge's modules without its loss-scale names"),
}


class _CopyLoader(importlib.abc.Loader):
    """Loads a module as a copy of another module's names, minus some."""

    def __init__(self, source: str, dropped: tuple[str, ...]) -> None:
        self._source, self._dropped = source, dropped

    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:
        source = importlib.import_module(self._source)
        for name in dir(source):
            if name not in self._dropped and not name.startswith("__"):
                setattr(module, name, getattr(source, name))
        module.__doc__ = source.__doc__


def _tree_module(path: str) -> str:
    """The module of this package whose file the adapter's module path `path` is (from its package's row)."""
    package, _, rest = path.partition(".")
    tree = MODULES[package].sources[0]
    return f"{tree}.{rest}" if rest else tree


def _can_install(world: World) -> bool:
    """Never over a real adapter: its import paths are never today's."""
    for package in ALIASED_PACKAGES:
        real = importlib.util.find_spec(package)
        if real is not None:
            raise NpuConfigError(
                f"a real '{package}' package is importable here ({real.origin}); npu_bridge_compat "
                "will not shadow it. Run the script without the aliases, or in an environment "
                "without the Ascend adapter."
            )
    return True


def _module_spec(
    world: World, fullname: str, todays: importlib.machinery.ModuleSpec | None, finder: WorldFinder
) -> importlib.machinery.ModuleSpec | None:
    """Each of the adapter's modules is loaded from its tree's file."""
    if fullname.startswith(TF1_UNDER_TF2 + "."):
        source = MODULES[TF1_UNDER_TF2].sources[0] + fullname[len(TF1_UNDER_TF2) :]
        real = importlib.util.find_spec(_tree_module(source))
        if real is None:
            return None
        loader = _CopyLoader(source, DROPPED_UNDER_TF2)
        return importlib.util.spec_from_loader(fullname, loader, is_package=real.submodule_search_locations is not None)
    real = importlib.util.find_spec(_tree_module(fullname))
    if real is None:
        return None
    return importlib.util.spec_from_file_location(
        fullname, real.origin, submodule_search_locations=real.submodule_search_locations
    )


def _install_more(world: World) -> None:
    reserve_fusion_flags()  # the adapter's scripts may ask for graph-kernel fusion before TensorFlow starts


def _public_names(module: types.ModuleType) -> list[str]:
    names = [name for name in dir(module) if not name.startswith("_")]
    if hasattr(module, "__path__"):
        names += [info.name for info in pkgutil.iter_modules(module.__path__)]
    return names


def _submodule(module: types.ModuleType, part: str) -> types.ModuleType | None:
    if not hasattr(module, "__path__"):
        return None
    try:
        found = importlib.util.find_spec(f"{module.__name__}.{part}") is not None
    except (ImportError, ValueError):
        return None
    try:
        return importlib.import_module(f"{module.__name__}.{part}") if found else None
    except ImportError:
        return None


def _is_ours(obj: Any) -> bool:
    module = obj.__name__ if isinstance(obj, types.ModuleType) else getattr(obj, "__module__", None)
    if module is None:
        module = type(obj).__module__
    return isinstance(module, str) and (module == PACKAGE or module.startswith(PACKAGE + "."))


def describe(obj: Any) -> str:
    """Where an adapter name lives in npu_bridge_compat, in words."""
    if isinstance(obj, types.ModuleType):
        return obj.__name__
    if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType)):
        return f"{obj.__module__}.{obj.__qualname__}"
    if isinstance(obj, (bool, int, float, str)):
        return repr(obj)
    return f"a {type(obj).__module__}.{type(obj).__qualname__} object"


def _found(name: str, obj: Any) -> NameStatus:
    """The status of an adapter name that `run` serves as `obj`."""
    if is_device_only(obj):
        return NameStatus(Status.MISSING, "Ascend-only, no host equivalent", name=name, value=obj, device_only=True)
    reason = unavailable_reason(obj)
    if reason is not None:  # a class of a door this TensorFlow lacks (the Estimator's from TensorFlow 2.16 on)
        return NameStatus(Status.MISSING, reason, name=name, value=obj)
    return NameStatus(Status.WORKS, describe(obj), name=name, value=obj)


def adapter_status(world: World, dotted: str) -> NameStatus:
    """`npu_bridge.x.y` as `run` serves it (from its tree in npu_bridge_compat.legacy), or `npu_bridge_compat.x.y`
    (the adapter world's `status` rule): the longest part that exists (`NameStatus.name`) and what it is
    (`value`); an unknown part with the closest known name; a module the adapter re-exports (npu_init's `tf`)
    hands the rest of the name to TensorFlow (`continues_in`). Attributes of classes and objects, and TensorFlow
    classes the adapter re-exports (RewriterConfig), are not followed further."""
    parts = dotted.split(".")
    if parts[0] != PACKAGE and parts[0] not in ALIASED_PACKAGES:
        return NameStatus(Status.UNKNOWN, world.unknown_detail)
    obj: Any = importlib.import_module(PACKAGE if parts[0] == PACKAGE else _tree_module(parts[0]))
    for index, part in enumerate(parts[1:], start=1):
        found = ".".join(parts[:index])
        if isinstance(obj, types.ModuleType) and not _is_ours(obj):
            rest = f"tensorflow.{'.'.join(parts[index:])}" if obj.__name__ == "tensorflow" else None
            return dataclasses.replace(_found(found, obj), continues_in=rest)
        if hasattr(obj, part):
            obj = getattr(obj, part)
        elif isinstance(obj, types.ModuleType) and (module := _submodule(obj, part)) is not None:
            obj = module
        elif isinstance(obj, types.ModuleType):
            close = closest_name(part, _public_names(obj))
            suggestion = f"{found}.{close}" if close else None
            hint = f"; did you mean {suggestion}?" if suggestion else ""
            return NameStatus(
                Status.UNKNOWN,
                f"{found} has no '{part}' under `run`: the import or attribute fails{hint}",
                name=".".join(parts[: index + 1]),
                suggestion=suggestion,
            )
        else:
            return _found(found, obj)
        if not _is_ours(obj) and not isinstance(obj, types.ModuleType):
            return _found(".".join(parts[: index + 1]), obj)
    return _found(dotted, obj)


ADAPTER = World(
    name="adapter",
    owner=Owner.ADAPTER_ALIASES,
    era="Ascend's TF Adapter",
    modules=MODULES,
    roots=ALIASED_PACKAGES,
    serves="npu_bridge.*, hccl.* and npu_device.* resolve to npu_bridge_compat",
    rules=Rules(
        own_trees=ALIASED_PACKAGES,
        replaces_todays=lambda world, fullname: True,
        module_spec=_module_spec,
        can_install=_can_install,
        install_more=_install_more,
        status=adapter_status,
    ),
    answers_for=(*ALIASED_PACKAGES, PACKAGE),
    category="adapter name",
)
