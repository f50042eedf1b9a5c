"""What a dotted name is on this host, answered by the runtime itself.

- Adapter names (`npu_bridge.*`, `hccl.*`) are looked up in the module tree `run` aliases them to
  (`npu_bridge_compat.legacy`), exactly as the alias finder loads it, so the scan knows every alias `run` installs
  and nothing else. A name implemented with `errors.device_only` is device-only.
- TensorFlow names are looked up in the installed TensorFlow by the worlds' engine (imports/world.py), as `run`
  gives them; what it lacks is a TF 1.15 name (see tf1.py).
- A top-level import that is neither the standard library, nor the script's own project, nor installed here is a
  missing package.

Only npu_bridge_compat's and TensorFlow's own modules are imported; the scanned code never is.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.util
import os
import pkgutil
import sys
import types
from typing import Any

from npu_bridge_compat.errors import closest_name, device_only
from npu_bridge_compat.imports.world import today_has
from npu_bridge_compat.legacy import ALIASED_PACKAGES

_DEVICE_ONLY_CODE = device_only("probe").__code__  # every device_only stand-in runs this code object
_PACKAGE = "npu_bridge_compat"
_LEGACY = f"{_PACKAGE}.legacy"


def is_device_only(obj: Any) -> bool:
    return getattr(obj, "__code__", None) is _DEVICE_ONLY_CODE


@dataclasses.dataclass(frozen=True)
class Resolved:
    """The longest prefix of a name that exists, and what it is; `missing` names the first part that does not."""

    name: str  # the dotted prefix that was found
    obj: Any
    missing: str | None = None
    suggestion: str | None = None
    tensorflow_rest: str | None = None  # the name continues inside TensorFlow (e.g. npu_init's `tf`)


def _public_names(module: types.ModuleType) -> list[str]:
    names = [name for name in dir(module) if not name.startswith("_")]
    if hasattr(module, "__path__"):
        names += [info.name for info in pkgutil.iter_modules(module.__path__)]
    return names


def _import(module_name: str) -> types.ModuleType | None:
    try:
        return importlib.import_module(module_name)
    except ImportError:
        return None


def _submodule(module: types.ModuleType, part: str) -> types.ModuleType | None:
    if not hasattr(module, "__path__"):
        return None
    try:
        found = importlib.util.find_spec(f"{module.__name__}.{part}") is not None
    except (ImportError, ValueError):
        return None
    return _import(f"{module.__name__}.{part}") if found else None


def _is_ours(obj: Any) -> bool:
    module = obj.__name__ if isinstance(obj, types.ModuleType) else getattr(obj, "__module__", None)
    if module is None:
        module = type(obj).__module__
    return isinstance(module, str) and (module == _PACKAGE or module.startswith(_PACKAGE + "."))


@functools.cache
def resolve_adapter(dotted: str) -> Resolved:
    """`npu_bridge.x.y` as `run` serves it (from npu_bridge_compat.legacy), or `npu_bridge_compat.x.y`."""
    parts = dotted.split(".")
    real = _PACKAGE if parts[0] == _PACKAGE else f"{_LEGACY}.{parts[0]}"
    obj: Any = importlib.import_module(real)
    for index, part in enumerate(parts[1:], start=1):
        found = parts[:index]
        if isinstance(obj, types.ModuleType) and not _is_ours(obj):
            # a module the adapter re-exports (npu_init's `tf`): the rest of the name is TensorFlow's
            rest = ".".join(parts[index:]) if obj.__name__ == "tensorflow" else None
            return Resolved(".".join(found), obj, tensorflow_rest=rest)
        if hasattr(obj, part):
            obj = getattr(obj, part)
        elif isinstance(obj, types.ModuleType) and (module := _submodule(obj, part)) is not None:
            obj = module
        elif isinstance(obj, types.ModuleType):
            close = closest_name(part, _public_names(obj))
            return Resolved(
                ".".join(found),
                obj,
                missing=".".join(parts[: index + 1]),
                suggestion=".".join((*found, close)) if close else None,
            )
        else:  # attributes of classes and objects are not followed further
            return Resolved(".".join(found), obj)
        if not _is_ours(obj) and not isinstance(obj, types.ModuleType):
            return Resolved(".".join(parts[: index + 1]), obj)  # a TensorFlow class re-exported (RewriterConfig)
    return Resolved(dotted, obj)


def describe_adapter(obj: Any) -> str:
    """Where an adapter name lives in npu_bridge_compat, for the report."""
    if isinstance(obj, types.ModuleType):
        return obj.__name__
    if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType)):
        return f"{obj.__module__}.{obj.__qualname__}"
    if isinstance(obj, (bool, int, float, str)):
        return repr(obj)
    return f"a {type(obj).__module__}.{type(obj).__qualname__} object"


@functools.cache
def star_names(module: str) -> frozenset[str]:
    """The names `from module import *` binds, for an adapter module (empty for any other)."""
    if module.split(".")[0] not in (*ALIASED_PACKAGES, _PACKAGE):
        return frozenset()
    resolved = resolve_adapter(module)
    if resolved.missing or not isinstance(resolved.obj, types.ModuleType):
        return frozenset()
    exported = getattr(resolved.obj, "__all__", None)
    return frozenset(
        exported if exported is not None else (name for name in dir(resolved.obj) if not name.startswith("_"))
    )


def tensorflow_has(dotted: str) -> bool:
    """Whether this TensorFlow has `dotted` (a module, or a name reached from one), as `run` gives it to a script:
    the worlds' engine answers (imports/world.py `today_has`), so the scan cannot drift from it."""
    return today_has(dotted)


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
