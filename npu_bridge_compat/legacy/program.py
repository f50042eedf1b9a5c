"""The program's view of imports, which the worlds' import hooks give the user's own modules.

Every module whose file lies outside the Python installation and site-packages (the script, its folder, sibling
packages on PYTHONPATH, a launcher and what it runs with runpy) is the program; installed libraries and TensorFlow
itself keep today's modules. npu_bridge_compat's own modules are library code, except the adapter's module tree,
which re-exports `tf` to scripts as the adapter did.
"""

from __future__ import annotations

import functools
import os
import site
import sysconfig
from collections.abc import Callable
from typing import Any

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # npu_bridge_compat/
_ADAPTER_TREES = tuple(os.path.join(_PACKAGE, "legacy", tree) + os.sep for tree in ("npu_bridge", "hccl"))


@functools.cache
def _library_roots() -> tuple[str, ...]:
    """The Python installation, site-packages and npu_bridge_compat itself: code that keeps today's modules."""
    paths = sysconfig.get_paths()
    roots = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots.update(site.getsitepackages())
    roots.add(site.getusersitepackages())
    roots.add(_PACKAGE)
    return tuple(os.path.abspath(root) + os.sep for root in roots)


@functools.cache
def is_program_file(filename: str) -> bool:
    """Whether the module in `filename` is the user's program rather than an installed library."""
    path = os.path.abspath(filename)
    return path.startswith(_ADAPTER_TREES) or not path.startswith(_library_roots())


def importer_is_program(globals: dict | None) -> bool:
    filename = (globals or {}).get("__file__")
    return bool(filename) and is_program_file(filename)


class Overlay:
    """The object `import tensorflow.a.b` binds to `tensorflow`: answers `a` itself, the rest from `base`."""

    def __init__(self, base: Any, name: str, value: Any) -> None:
        self._base, self._name, self._value = base, name, value

    def __getattr__(self, attribute: str) -> Any:
        return self._value if attribute == self._name else getattr(self._base, attribute)

    def __repr__(self) -> str:
        return repr(self._base)


def bound_by_import(top: Any, parts: list[str], module_for: Callable[[str], Any]) -> Any:
    """What `import top.parts...` (no fromlist) binds: `top`, whose attribute chain leads to the modules that
    `module_for(dotted path below top)` gives."""
    chain = [top] + [module_for(".".join(parts[:depth])) for depth in range(1, len(parts) + 1)]
    bound = chain[-1]
    for depth in range(len(parts) - 1, -1, -1):
        bound = Overlay(chain[depth], parts[depth], bound)
    return bound


def with_child(module: Any, path: str, children: dict[str, Callable[[], Any]]) -> Any:
    """`module` (the one at `path`), with the children `children` names (full paths) answered by their makers:
    `from tensorflow.python import keras` gets the redirected one too."""
    for child, make in children.items():
        parent, _, name = child.rpartition(".")
        if parent == path:
            module = Overlay(module, name, make())
    return module
