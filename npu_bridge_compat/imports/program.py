"""The program's imports: one hook (`PROGRAM_IMPORTS`, `builtins.__import__`) gives the user's own modules the
worlds' views of their imports, asking the worlds in the order they were served (`run` serves them in the order
of the one list of worlds, legacy/runs.py's `WORLDS`).

Every module whose file lies outside the Python installation and site-packages (the script, its folder, sibling
packages on PYTHONPATH, vendored libraries in them, a launcher and what it runs with runpy) is the program;
installed libraries and TensorFlow itself keep today's modules. npu_bridge_compat's own modules are library code,
except the trees that count as the program (`count_as_program`: the adapter's, which re-exports `tf` to scripts).
"""

from __future__ import annotations

import builtins
import functools
import os
import site
import sysconfig
from collections.abc import Callable
from typing import Any, Protocol

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # npu_bridge_compat/
# Folders of this package whose modules count as the program (count_as_program).
PROGRAM_TREES = changes.ProcessState(
    "the package's folders whose modules count as the program", Owner.PROGRAM_IMPORTS, list
)


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
    return path.startswith(tuple(changes.state(PROGRAM_TREES))) or not path.startswith(_library_roots())


def count_as_program(folder: str) -> None:
    """Modules in `folder`, a tree of this package, count as the program: the adapter's module tree re-exports
    `tf` to scripts as the adapter did, so its imports get the program's view."""
    entry = os.path.abspath(folder) + os.sep
    trees = changes.state(PROGRAM_TREES)
    if entry not in trees:
        trees.append(entry)
        is_program_file.cache_clear()


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


NOT_SERVED = object()  # a view's answer for an import it leaves to the next view (or to today's import system)


class ProgramView(Protocol):
    """A world's view of the program's imports (imports/world.py's World is one)."""

    name: str
    program_tops: tuple[str, ...]  # the top-level packages whose imports it may answer

    def installed(self) -> bool: ...

    def program_import(
        self, name: str, globals: dict | None, locals: Any, fromlist: Any, original: Callable[..., Any]
    ) -> Any: ...


class ProgramImports:
    """The one hook of the program's imports. An absolute import by the program's own code of a package some
    installed view answers for is asked of those views in the order they were served (the one list's, under
    `run`), the first answer winning; every other import (relative ones, libraries' ones, other packages) goes
    straight to the import function it replaced."""

    def __init__(self) -> None:
        self._views: dict[str, ProgramView] = {}
        self._tops: frozenset[str] = frozenset()
        self._original: Callable[..., Any] = builtins.__import__
        self._hook = self._import  # one object, so that installing again is the same change

    def serve(self, view: ProgramView) -> None:
        """Give the program's imports `view` while it is installed (its undo, through its own owner, ends it),
        after the views served before it."""
        self._views = {name: known for name, known in self._views.items() if known.installed()}  # undone ones go
        self._views.setdefault(view.name, view)
        self._tops = frozenset(top for known in self._views.values() for top in known.program_tops)
        if builtins.__import__ is not self._hook:
            self._original = builtins.__import__
            changes.replace_attribute(
                builtins,
                "__import__",
                self._hook,
                owner=Owner.PROGRAM_IMPORTS,
                reason="the program's own imports (not libraries') get its worlds' views",
            )

    def views(self) -> list[ProgramView]:
        """The installed views, in the order they were served."""
        return [view for view in self._views.values() if view.installed()]

    def _import(self, name, globals=None, locals=None, fromlist=(), level=0):
        original = self._original
        if level or name.partition(".")[0] not in self._tops or not importer_is_program(globals):
            return original(name, globals, locals, fromlist, level)
        top = name.partition(".")[0]
        for view in self.views():
            if top in view.program_tops:
                module = view.program_import(name, globals, locals, fromlist, original)
                if module is not NOT_SERVED:
                    return module
        return original(name, globals, locals, fromlist, level)


PROGRAM_IMPORTS = ProgramImports()
