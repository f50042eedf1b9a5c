"""The TF 1.15 modules built from the table: name lookup, the virtual modules, stand-ins, the finder, name status.

A virtual module resolves each name on first access, from the table (table.py) alone. Names with no counterpart
resolve to stand-ins that raise `NoCounterpartError` when used, so `import tensorflow.contrib...` never fails
for them; counterparts that behave differently warn once (`Tf1DifferenceWarning`). `tf1_name_status` answers
from the same lookup, without running any user code.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import importlib.abc
import importlib.machinery
import types
from dataclasses import dataclass
from typing import Any

from npu_bridge_compat import compat
from npu_bridge_compat.errors import NpuCompatWarning, warn
from npu_bridge_compat.legacy.tf1.table import MODULES, ROOTS, Module

PUBLIC_ROOTS = ("contrib", "examples")  # `tensorflow.<root>` is importable once installed; python.keras is per importer


class NoCounterpartError(AttributeError, NotImplementedError):
    """A TF 1.15 name with no counterpart on TensorFlow 2.15 was used.

    It is an AttributeError too, so that TF2 fallbacks written as `except AttributeError:` still run.
    """


class Tf1DifferenceWarning(NpuCompatWarning):
    """A TF 1.15 name runs on a counterpart that behaves differently; said once per name."""


@dataclass(frozen=True)
class NameStatus:
    """What a TF 1.15 dotted name becomes here: works | differs | missing | unknown, and a one-sentence detail."""

    status: str
    detail: str


@dataclass(frozen=True)
class _Found:
    status: str
    detail: str
    value: Any = None  # the counterpart, for works / differs
    module: str | None = None  # the table path, when the name is a module of the tree


_ABSENT = object()
_UNKNOWN_NAME = "not a TF 1.15 name npu_bridge_compat maps"
_UNKNOWN_TREE = NameStatus(
    "unknown",
    "not in the TF 1.15 trees npu_bridge_compat maps (tensorflow.contrib, "
    "tensorflow.python.keras, tensorflow.examples)",
)


_SHOWN_AS = {"tensorflow.": "tf.", "keras.api._v1.keras.": "tf.compat.v1.keras."}


def _pretty(dotted: str) -> str:
    for prefix, shown in _SHOWN_AS.items():
        if dotted.startswith(prefix):
            return shown + dotted[len(prefix) :]
    return dotted


@functools.cache
def _resolve(dotted: str) -> Any:
    """The object a dotted path names: a module, or attributes of the longest importable one. TensorFlow's API
    paths (`tensorflow.distribute`, not `tensorflow.python...`) are walked as attributes, since implementation
    packages of the same names shadow some of them."""
    parent, _, name = dotted.rpartition(".")
    if parent and dotted.startswith("tensorflow.") and not dotted.startswith("tensorflow.python."):
        value = getattr(_resolve(parent), name, _ABSENT)
        if value is not _ABSENT:
            return value
    try:
        return importlib.import_module(dotted)
    except ModuleNotFoundError as error:
        if error.name != dotted:
            raise  # a dependency of that module is missing, not the path itself
    value = getattr(_resolve(parent), name, _ABSENT) if parent else _ABSENT
    if value is _ABSENT:
        raise ImportError(f"{dotted} does not exist in this installation")
    return value


def _submodule(module: Any, name: str) -> types.ModuleType | None:
    """`module.name` when it is a module of `module`'s own library (not one of TensorFlow's it merely imported)."""
    value = getattr(module, name, None)
    if isinstance(value, types.ModuleType):
        return value if _library(value) == _library(module) else None
    if not hasattr(module, "__path__"):
        return None
    try:
        return importlib.import_module(f"{module.__name__}.{name}")
    except ImportError:
        return None


def _library(module: types.ModuleType) -> str:
    return module.__name__.partition(".")[0]


@functools.cache
def module_spec(path: str) -> Module | None:
    """The table entry of a module path, or one derived from its parent's sources; None for an unknown path."""
    if path in MODULES:
        return MODULES[path]
    parent, _, name = path.rpartition(".")
    spec = module_spec(parent) if parent else None
    if spec is None:
        return None
    if spec.gone:
        return Module(gone=spec.gone)
    children = []
    for source in spec.sources:
        try:
            child = _submodule(_resolve(source), name)
        except ImportError:
            continue
        if child is not None:
            children.append(child.__name__)
    return Module(sources=tuple(children)) if children else None


def _module_detail(spec: Module) -> str:
    if spec.note:
        return spec.note
    if spec.sources:
        return ", ".join(_pretty(source) for source in spec.sources)
    return "a package of TF 1.15's module tree"


def _module_found(path: str) -> _Found:
    """The status of a module of the tree (a path module_spec knows)."""
    spec = module_spec(path)
    if spec.gone:
        return _Found("missing", spec.gone, module=path)
    return _Found("works", _module_detail(spec), module=path)


@functools.cache
def _lookup(path: str, name: str) -> _Found:
    """What `tensorflow.<path>.<name>` is, `path` being a module of the tree: the one lookup behind the virtual
    modules and the name status."""
    spec = module_spec(path)
    if spec.gone:
        return _Found("missing", spec.gone)
    if name in spec.names:
        return _counterpart(spec, name, spec.names[name], _pretty(spec.names[name]))
    if name in spec.missing:
        return _Found("missing", spec.missing[name])
    child = f"{path}.{name}"
    unavailable = ""
    for source in spec.sources:  # before the child modules: TF 1.15's packages star-imported over their modules
        try:
            module = _resolve(source)
        except ImportError as error:
            unavailable = unavailable or f"its counterpart {_pretty(source)} cannot be imported here ({error})"
            continue
        exported = getattr(module, "__all__", None)
        value = getattr(module, name, _ABSENT) if exported is None or name in exported else _ABSENT
        if isinstance(value, types.ModuleType):
            if _submodule(module, name) is value:
                return _module_found(child)
        elif value is not _ABSENT:
            return _counterpart(spec, name, f"{source}.{name}", f"{_pretty(source)}.{name}", value)
    if module_spec(child) is not None:  # listed in the table, or a module of a source
        return _module_found(child)
    return _Found("missing", unavailable) if unavailable else _Found("unknown", _UNKNOWN_NAME)


def _counterpart(spec: Module, name: str, target: str, shown: str, value: Any = _ABSENT) -> _Found:
    if value is _ABSENT:
        try:
            value = _resolve(target)
        except ImportError as error:
            return _Found("missing", f"its counterpart {shown} cannot be imported here ({error})")
    if name in spec.differs:
        return _Found("differs", spec.differs[name], value)
    return _Found("works", shown, value)


@functools.cache
def public_names(path: str) -> frozenset[str]:
    """The names a module of the tree answers for (its `dir()` and `__all__`; never a name it does not know)."""
    spec = module_spec(path)
    if spec.gone:
        return frozenset()
    names = set(spec.names) | set(spec.missing)
    names |= {key[len(path) + 1 :] for key in MODULES if key.startswith(path + ".") and "." not in key[len(path) + 1 :]}
    for source in spec.sources:
        try:
            module = _resolve(source)
        except ImportError:
            continue
        names |= set(getattr(module, "__all__", None) or (n for n in dir(module) if not n.startswith("_")))
    return frozenset(name for name in names if _lookup(path, name).status != "unknown")


def _detail(path: str, name: str, found: _Found) -> str:
    """The detail of a lookup, an unknown name with the closest known one."""
    if found.status != "unknown":
        return found.detail
    close = difflib.get_close_matches(name, public_names(path), n=1)
    return found.detail + (f"; did you mean tensorflow.{path}.{close[0]}?" if close else "")


# --- runtime: virtual modules and stand-ins ------------------------------------------------------------------


class Unavailable:
    """What a TF 1.15 name without a counterpart resolves to: importable, an error naming it once it is used."""

    def __init__(self, qualified_name: str, message: str) -> None:
        self._qualified_name = qualified_name
        self._message = message

    def _fail(self):
        raise NoCounterpartError(self._message)

    def __call__(self, *args, **kwargs):
        self._fail()

    def __getattr__(self, attribute: str):
        if attribute.startswith("_"):
            raise AttributeError(attribute)
        self._fail()

    def __mro_entries__(self, bases):
        self._fail()  # subclassing it is using it

    def __repr__(self) -> str:
        return f"<{self._qualified_name}: no counterpart on TensorFlow {compat.tensorflow_version()}>"


_warned: set[str] = set()


def attribute(path: str, name: str) -> Any:
    """The runtime value of `tensorflow.<path>.<name>`: the counterpart, a virtual module or a stand-in."""
    found = _lookup(path, name)
    qualified = f"tensorflow.{path}.{name}"
    if found.module is not None:
        return virtual_module(found.module)  # a gone module too: its names are the stand-ins
    if found.status == "missing":
        return Unavailable(
            qualified, f"{qualified} has no counterpart on TensorFlow {compat.tensorflow_version()}: {found.detail}."
        )
    if found.status == "unknown":
        return Unavailable(qualified, f"{qualified} is {_detail(path, name, found)}.")
    if found.status == "differs" and qualified not in _warned:
        _warned.add(qualified)
        warn(f"{qualified} on TensorFlow {compat.tensorflow_version()}: {found.detail}.", Tf1DifferenceWarning)
    return found.value


class Tf1Module(types.ModuleType):
    """A TF 1.15 module that TensorFlow 2.15 lacks; its names resolve from the table on first access."""

    def __init__(self, path: str) -> None:
        version = compat.tensorflow_version()
        super().__init__(
            f"tensorflow.{path}",
            f"TF 1.15's tensorflow.{path} on TensorFlow {version}: {_module_found(path).detail} (npu_bridge_compat).",
        )
        self.__path__ = []  # a package: its submodules come from the finder
        self.__package__ = self.__name__
        self._tf1_path = path

    def __getattr__(self, name: str) -> Any:
        if name == "__all__":
            return sorted(public_names(self._tf1_path))
        if name.startswith("__"):  # Python's own protocol names; private TF 1.15 names (`_Linear`) resolve below
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        value = attribute(self._tf1_path, name)
        setattr(self, name, value)
        return value

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | public_names(self._tf1_path))

    def __repr__(self) -> str:
        return f"<module {self.__name__!r} ({_module_found(self._tf1_path).detail}; npu_bridge_compat)>"


@functools.cache
def virtual_module(path: str) -> Tf1Module:
    """The one module object of a module path (the same for attribute access, imports and the import hook);
    ModuleNotFoundError when the path is not a module of the tree."""
    if module_spec(path) is None:
        raise ModuleNotFoundError(f"No module named 'tensorflow.{path}'", name=f"tensorflow.{path}")
    return Tf1Module(path)


class Tf1Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves `tensorflow.contrib...` and `tensorflow.examples...` imports with the virtual modules."""

    def find_spec(self, fullname, path=None, target=None):
        tree = fullname.partition(".")[2] if fullname.startswith("tensorflow.") else ""
        if tree.partition(".")[0] not in PUBLIC_ROOTS or module_spec(tree) is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        return virtual_module(spec.name.partition(".")[2])

    def exec_module(self, module) -> None:
        """Nothing to run: the virtual module resolves its names when they are read."""


def in_tree(path: str) -> str | None:
    """The root of ROOTS that a path (below `tensorflow.`) lies in, or None."""
    for root in ROOTS:
        if path == root or path.startswith(root + "."):
            return root
    return None


@functools.cache
def tf1_name_status(dotted_name: str) -> NameStatus:
    """What a TF 1.15 dotted name (`tensorflow.contrib.layers.xavier_initializer`, `tensorflow.contrib.tpu`, ...)
    becomes on TensorFlow 2.15 here. Imports TensorFlow and the counterparts' libraries, never user code."""
    path = dotted_name[len("tensorflow.") :] if dotted_name.startswith("tensorflow.") else ""
    root = in_tree(path)
    if root is None:
        return _UNKNOWN_TREE
    current, found = root, _module_found(root)
    detail = found.detail
    for name in path[len(root) + 1 :].split(".") if path != root else ():
        found = _lookup(current, name)
        detail = _detail(current, name, found)
        if found.module is None:
            break  # an attribute of a counterpart (ModeKeys.INFER): the counterpart's status
        current = found.module
    return NameStatus(found.status, detail)
