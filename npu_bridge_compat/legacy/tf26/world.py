"""The TF 2.6 world built from the table: module lookup, the modules it serves, filled-in names, name status.

A TF 2.6 module path resolves, from the table (table.py) and Keras' one move (`keras.<path>` is
`{keras}.src.<path>`), to a real module of this line (served as itself) or to a module of its own whose names
resolve on first access. Names with no counterpart resolve to stand-ins that raise `NoCounterpartError` when
used; counterparts that behave differently warn once (`Tf26DifferenceWarning`). `tf26_name_status` answers from
the same lookup without running user code.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.abc
import importlib.machinery
import inspect
import sys
import threading
import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from npu_bridge_compat import compat
from npu_bridge_compat.errors import NpuCompatWarning, warn
from npu_bridge_compat.legacy.tf1.world import NameStatus, NoCounterpartError, Unavailable
from npu_bridge_compat.legacy.tf26.table import FILLED, KERAS, MODULES, Module

__all__ = ["NameStatus", "NoCounterpartError", "Tf26DifferenceWarning", "Tf26Finder", "tf26_name_status"]

# The module trees whose TF 2.6 paths this world answers for.
ROOTS = ("keras", "tf_keras", "tensorflow.keras", "tensorflow.python", "tensorflow.tools", "tensorflow.estimator")
# Read as `keras.<path>` where they lack a module: TF 2.6's stale Keras copy, tf.keras, and tf_keras, the name
# `from keras.utils import np_utils` asks for where `keras` is tf_keras.
KERAS_MIRRORS = ("tensorflow.python.keras", "tensorflow.keras", "tf_keras")
UNKNOWN = NameStatus("unknown", "not a TF 2.6 name npu_bridge_compat maps")
CURRENT = NameStatus("current", "this line has it under the same name")


class Tf26DifferenceWarning(NpuCompatWarning):
    """A TF 2.6 name runs on a counterpart that behaves differently; said once per name."""


@functools.cache
def keras_root() -> str:
    """The package of the Keras 2 that tf.keras is on this line: `keras` (TensorFlow 2.15) or `tf_keras`."""
    if compat.version_tuple(compat.tensorflow_version()) <= compat.version_tuple(compat.ESTIMATOR_TENSORFLOW):
        return "keras"
    return "tf_keras"


def keras_is_aliased() -> bool:
    """Whether `keras` itself is served as tf_keras (from TensorFlow 2.16, where the keras package is Keras 3)."""
    return keras_root() != "keras"


def source(path: str) -> str:
    return path.replace(KERAS, keras_root())


_ABSENT = object()


class _LookingUp(threading.local):
    """The module paths this thread is looking up: on TensorFlow 2.15 a counterpart can have the TF 2.6 path's
    own name (keras.utils is both), and looking it up must find today's module, not come back to the finder."""

    def __init__(self) -> None:
        self.paths: set[str] = set()

    @contextlib.contextmanager
    def todays_only(self, path: str) -> Iterator[None]:
        self.paths.add(path)
        try:
            yield
        finally:
            self.paths.discard(path)


_looking_up = _LookingUp()


@functools.cache
def resolve(dotted: str) -> Any:
    """The object a dotted path names: a module, or attributes of the longest importable one; ImportError when
    there is none."""
    try:
        with _looking_up.todays_only(dotted):  # today's module of that name, never the one this world serves
            return importlib.import_module(dotted)
    except ModuleNotFoundError as error:
        if error.name is not None and not dotted.startswith(error.name):
            raise  # a dependency of that module is missing, not the path itself
    parent, _, name = dotted.rpartition(".")
    value = todays_attribute(resolve(parent), name) if parent else _ABSENT
    if value is _ABSENT:
        raise ImportError(f"{dotted} does not exist in this installation")
    return value


def todays_attribute(obj: Any, name: str) -> Any:
    """`obj.name` as this line has it, without the names this world fills in (`_ABSENT` when there is none)."""
    if isinstance(obj, types.ModuleType) and fills_tf26_names(obj):
        return inspect.getattr_static(obj, name, _ABSENT)  # what the module holds, never its __getattr__'s answer
    return getattr(obj, name, _ABSENT)


def fills_tf26_names(module: types.ModuleType) -> bool:
    """Whether `module`'s `__getattr__` is the one this world gave it (filled_getattr)."""
    return getattr(inspect.getattr_static(module, "__getattr__", None), "fills_tf26_names", False)


def _importable(dotted: str) -> bool:
    try:
        return isinstance(resolve(dotted), types.ModuleType)
    except ImportError:
        return False


def _tree(path: str) -> bool:
    return any(path == root or path.startswith(root + ".") for root in ROOTS)


@functools.cache
def module_spec(path: str) -> Module | None:
    """The table entry of a TF 2.6 module path, or one derived from Keras' move or its parent's sources; None
    for a path the world does not serve (then it is today's module, or nothing)."""
    with _looking_up.todays_only(path):
        return _module_spec(path)


def _module_spec(path: str) -> Module | None:
    if path in MODULES:
        return MODULES[path]
    for mirror in KERAS_MIRRORS:
        if path.startswith(mirror + "."):
            return module_spec("keras" + path[len(mirror) :])
    if path == "keras":
        return Module(sources=(KERAS,)) if keras_is_aliased() else None
    parent, _, name = path.rpartition(".")
    spec = module_spec(parent) if parent else None
    if spec is not None:
        if spec.gone:
            return Module(gone=spec.gone)
        # the first source's child: TF 2.6's module, later sources' children are other modules of that name
        child = next((f"{s}.{name}" for s in spec.sources if _importable(source(f"{s}.{name}"))), None)
        if child is not None:
            return Module(sources=(child,))
    if path.startswith("keras."):
        rest = path[len("keras.") :]
        for candidate in (f"{KERAS}.{rest}", f"{KERAS}.src.{rest}"):
            if _importable(source(candidate)):
                return Module(sources=(candidate,))
    return None


@dataclass(frozen=True)
class Found:
    status: str  # works | differs | missing | unknown
    detail: str
    value: Any = None
    module: str | None = None  # a TF 2.6 module path the world serves, when the name is one


def _counterpart(spec: Module, name: str, target: str, value: Any = _ABSENT) -> Found:
    if target in MODULES:
        return Found("works", target, module=target)
    shown = source(target)
    if value is _ABSENT:
        try:
            value = resolve(shown)
        except ImportError as error:
            return Found("missing", f"its counterpart {shown} cannot be imported here ({error})")
    if name in spec.differs:
        return Found("differs", spec.differs[name], value)
    return Found("works", shown, value)


def lookup(spec: Module, path: str, name: str) -> Found:
    """What `<path>.<name>` is, `spec` being the table entry of the module `path`."""
    if spec.gone:
        return Found("missing", spec.gone)
    if name in spec.names:
        return _counterpart(spec, name, spec.names[name])
    if name in spec.missing:
        return Found("missing", spec.missing[name])
    for candidate in spec.sources:
        try:
            module = resolve(source(candidate))
        except ImportError:
            continue
        value = todays_attribute(module, name)
        if value is not _ABSENT and not isinstance(value, types.ModuleType):
            return _counterpart(spec, name, f"{candidate}.{name}", value)
    child = f"{path}.{name}"
    if module_spec(child) is not None:
        return Found("works", child, module=child)
    return Found("unknown", f"{name} is not in {', '.join(map(source, spec.sources)) or path}")


# --- runtime: served modules, stand-ins and filled names ---------------------------------------------------

_warned: set[str] = set()


def runtime_value(path: str, name: str, found: Found) -> Any:
    """The object a found name gives a program: its counterpart, a module, or a stand-in that raises."""
    qualified = f"{path}.{name}"
    if found.module is not None:
        return served_module(found.module)
    if found.status == "missing":
        return Unavailable(
            qualified,
            f"{qualified} (TF 2.6) has no counterpart on TensorFlow {compat.tensorflow_version()}: {found.detail}.",
        )
    if found.status == "differs" and qualified not in _warned:
        _warned.add(qualified)
        warn(f"{qualified} on TensorFlow {compat.tensorflow_version()}: {found.detail}.", Tf26DifferenceWarning)
    return found.value


class Tf26Module(types.ModuleType):
    """A TF 2.6 module that this line lacks under its name; its names resolve from the table on first access."""

    def __init__(self, path: str, spec: Module) -> None:
        where = spec.gone or ", ".join(map(source, spec.sources)) or "written in npu_bridge_compat"
        super().__init__(path, f"TF 2.6's {path} on TensorFlow {compat.tensorflow_version()}: {where}.")
        self.__path__ = []  # a package: its submodules come from the finder
        self.__package__ = path
        self._tf26_spec = spec

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        found = lookup(self._tf26_spec, self.__name__, name)
        if found.status == "unknown":
            raise AttributeError(f"module {self.__name__!r} (TF 2.6) has no attribute {name!r}: {found.detail}")
        value = runtime_value(self.__name__, name, found)
        setattr(self, name, value)
        return value

    def __dir__(self) -> list[str]:
        names = set(super().__dir__()) | set(self._tf26_spec.names) | set(self._tf26_spec.missing)
        for candidate in self._tf26_spec.sources:
            try:
                names |= {n for n in dir(resolve(source(candidate))) if not n.startswith("_")}
            except ImportError:
                continue
        return sorted(names)


@functools.cache
def served_module(path: str) -> types.ModuleType:
    """The module object a TF 2.6 module path gives: today's module itself for an alias, else one of its own."""
    spec = module_spec(path)
    if spec is None:
        raise ModuleNotFoundError(f"No module named '{path}'", name=path)
    if spec.is_alias:
        return importlib.import_module(source(spec.sources[0]))
    return Tf26Module(path, spec)


class Tf26Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the TF 2.6 module paths this line lacks (and, from TensorFlow 2.16, `keras` as tf_keras)."""

    def find_spec(self, fullname, path=None, target=None):
        if not _tree(fullname) or fullname in _looking_up.paths:
            return None
        with _looking_up.todays_only(fullname):
            return self._find(fullname, path)

    def _find(self, fullname, path):
        if tf_keras_module(fullname) is not None:  # the tf.keras module itself, not a second copy of its file
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        aliased = keras_is_aliased() and (fullname == "keras" or fullname.startswith("keras."))
        if not aliased and self._real_spec(fullname, path) is not None:
            return None  # today's module of that name wins
        if module_spec(fullname) is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def _real_spec(self, fullname, path):
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            found = finder.find_spec(fullname, path, None)
            if found is not None:
                return found
        return None

    def create_module(self, spec):
        return tf_keras_module(spec.name) or served_module(spec.name)

    def exec_module(self, module) -> None:
        """Nothing to run: today's module is loaded, or the served module resolves its names when read."""


def tf_keras_module(fullname: str) -> types.ModuleType | None:
    """`tensorflow.keras.<path>` as the module `tf.keras.<path>` is (with the names this world fills in), or None."""
    if not (fullname + ".").startswith("tensorflow.keras.") or "tensorflow" not in sys.modules:
        return None
    module: Any = sys.modules["tensorflow"].keras
    if fullname == "tensorflow.keras":
        return importlib.import_module(module.__name__)  # the module behind a lazy loader (TensorFlow 2.16 on)
    for part in fullname.split(".")[2:]:
        module = getattr(module, part, None)
    return module if isinstance(module, types.ModuleType) else None


def filled_getattr(path: str, module: types.ModuleType):
    """A PEP 562 `__getattr__` for today's `module`, which lacks some of TF 2.6's names: they resolve from the
    FILLED table entry of `path`; any other name is an AttributeError as before."""
    spec = FILLED[path]

    def __getattr__(name: str) -> Any:
        if not name.startswith("__"):
            found = lookup(spec, path, name)
            if found.status != "unknown":
                value = runtime_value(path, name, found)
                setattr(module, name, value)  # resolved once; the module's own namespace, as an import would
                return value
        raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")

    __getattr__.fills_tf26_names = True
    return __getattr__


# --- name status (scan) ------------------------------------------------------------------------------------


def _filled_key(dotted: str) -> str | None:
    """The FILLED entry of today's module `dotted` (its tf.keras and stale-copy names read as keras.<path>)."""
    if dotted in FILLED:
        return dotted
    for mirror in KERAS_MIRRORS:
        if dotted.startswith(mirror + ".") and "keras" + dotted[len(mirror) :] in FILLED:
            return "keras" + dotted[len(mirror) :]
    return None


@functools.cache
def tf26_name_status(dotted: str) -> NameStatus:
    """What a TF 2.6 dotted name (`keras.utils.control_flow_util.smart_cond`, `tensorflow.keras.__version__`)
    becomes in the TF 2.6 world here: works | differs | missing | unknown | current, with a one-sentence detail. Names
    today's TensorFlow or Keras 2 have as they are are `current`. Imports TensorFlow and Keras, never user
    code, and changes nothing."""
    parts = dotted.split(".")
    if keras_is_aliased() and parts[0] == "keras":  # `keras` is tf_keras here: its own names are current
        today = tf26_name_status(".".join((keras_root(), *parts[1:])))
        if today is CURRENT:
            return today
    for cut in range(len(parts), 0, -1):
        path = ".".join(parts[:cut])
        if not (keras_is_aliased() and parts[0] == "keras") and _importable(path):
            return _walk_real(path, parts[cut:])
        spec = module_spec(path) if _tree(path) else None
        if spec is not None:
            if spec.gone:
                return NameStatus("missing", spec.gone)
            return _walk(path, spec, parts[cut:])
    return UNKNOWN


def _walk(path: str, spec: Module, rest: list[str]) -> NameStatus:
    detail = ", ".join(map(source, spec.sources)) or path
    for name in rest:
        found = lookup(spec, path, name)
        if found.module is None:
            return NameStatus(found.status, found.detail)
        path, spec, detail = found.module, module_spec(found.module), found.detail
    return NameStatus("works", detail)


def _walk_real(path: str, rest: list[str]) -> NameStatus:
    """A name under today's module `path`: today's attribute, or the name the world fills in."""
    obj: Any = resolve(path)
    for index, name in enumerate(rest):
        if not isinstance(obj, types.ModuleType):
            break
        value = todays_attribute(obj, name)
        if value is _ABSENT:
            key = _filled_key(path)
            if key is None:
                return NameStatus("unknown", f"{path} has no {name} here, and the TF 2.6 world maps no such name")
            found = lookup(FILLED[key], key, name)
            if found.module is not None:
                return _walk(found.module, module_spec(found.module), rest[index + 1 :])
            return NameStatus(found.status, found.detail)
        obj, path = value, f"{path}.{name}"
    return CURRENT
