"""Python < 3.12's `imp` module, for the functions ported programs use, on importlib (public APIs only). What
has no faithful counterpart is left out of here and raises, naming its replacement (era/table.py)."""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys
import types
from typing import IO, Any

SEARCH_ERROR, PY_SOURCE, PY_COMPILED, C_EXTENSION, PY_RESOURCE, PKG_DIRECTORY, C_BUILTIN, PY_FROZEN = range(8)

reload = importlib.reload
cache_from_source = importlib.util.cache_from_source
source_from_cache = importlib.util.source_from_cache


def new_module(name: str) -> types.ModuleType:
    """An empty module named `name` (not put in sys.modules)."""
    return types.ModuleType(name)


def get_magic() -> bytes:
    return importlib.util.MAGIC_NUMBER


def get_suffixes() -> list[tuple[str, str, int]]:
    """(suffix, mode, type) for extension modules, sources and bytecode, as imp listed them."""
    return (
        [(suffix, "rb", C_EXTENSION) for suffix in importlib.machinery.EXTENSION_SUFFIXES]
        + [(suffix, "r", PY_SOURCE) for suffix in importlib.machinery.SOURCE_SUFFIXES]
        + [(suffix, "rb", PY_COMPILED) for suffix in importlib.machinery.BYTECODE_SUFFIXES]
    )


def find_module(name: str, path: list[str] | None = None) -> tuple[IO | None, str, tuple[str, str, int]]:
    """(open file or None, path, (suffix, mode, type)) of the top-level module `name` in `path` (sys.path when
    None); ImportError when there is none. Built-in modules come back as (None, name, ('', '', C_BUILTIN))."""
    if not isinstance(name, str) or "." in name:
        raise ImportError(f"imp.find_module takes a top-level module name, not {name!r}", name=str(name))
    if path is None and name in sys.builtin_module_names:
        return None, name, ("", "", C_BUILTIN)
    for entry in sys.path if path is None else path:
        package = os.path.join(entry, name)
        if os.path.isfile(os.path.join(package, "__init__.py")):
            return None, package, ("", "", PKG_DIRECTORY)
        for suffix, mode, kind in get_suffixes():
            file_path = os.path.join(entry, name + suffix)
            if os.path.isfile(file_path):
                encoding = None if "b" in mode else "utf-8"
                return open(file_path, mode, encoding=encoding), file_path, (suffix, mode, kind)
    raise ImportError(f"No module named {name!r}", name=name)


def _load_from(name: str, loader: Any, pathname: str, is_package: bool = False) -> types.ModuleType:
    search = [pathname] if is_package else None
    spec = importlib.util.spec_from_file_location(name, pathname, loader=loader, submodule_search_locations=search)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # as imp did: the module is in sys.modules while (and after) it runs
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def load_source(name: str, pathname: str, file: IO | None = None) -> types.ModuleType:
    """Run the Python source `pathname` as module `name` (in sys.modules) and return it."""
    return _load_from(name, importlib.machinery.SourceFileLoader(name, pathname), pathname)


def load_compiled(name: str, pathname: str, file: IO | None = None) -> types.ModuleType:
    """Run the bytecode file `pathname` as module `name` (in sys.modules) and return it."""
    return _load_from(name, importlib.machinery.SourcelessFileLoader(name, pathname), pathname)


def load_dynamic(name: str, pathname: str, file: IO | None = None) -> types.ModuleType:
    """Load the extension module `pathname` as module `name` (in sys.modules) and return it."""
    return _load_from(name, importlib.machinery.ExtensionFileLoader(name, pathname), pathname)


def load_package(name: str, path: str) -> types.ModuleType:
    """Run the package in folder `path` as module `name` (in sys.modules) and return it."""
    init = os.path.join(path, "__init__.py")
    spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[path])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_module(name: str, file: IO | None, pathname: str, description: tuple[str, str, int]) -> Any:
    """Load what `find_module` found (its file is closed here, as imp's callers expected)."""
    kind = description[2]
    try:
        if kind == PY_SOURCE:
            return load_source(name, pathname)
        if kind == PY_COMPILED:
            return load_compiled(name, pathname)
        if kind == C_EXTENSION:
            return load_dynamic(name, pathname)
        if kind == PKG_DIRECTORY:
            return load_package(name, pathname)
        if kind == C_BUILTIN:
            return importlib.import_module(name)
        raise ImportError(f"imp.load_module cannot load module type {kind} ({pathname})", name=name)
    finally:
        if file is not None:
            file.close()


def acquire_lock() -> None:
    """Nothing to take: importlib locks per module (imp's global import lock is gone)."""


def release_lock() -> None:
    """Nothing to release: importlib locks per module."""


def lock_held() -> bool:
    return False


def is_builtin(name: str) -> int:
    return 1 if name in sys.builtin_module_names else 0


def is_frozen(name: str) -> bool:
    return importlib.machinery.FrozenImporter.find_spec(name) is not None
