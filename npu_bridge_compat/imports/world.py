"""The one engine of the worlds a ported program's imports are served from: the adapter's import paths, TF 1.15,
TF 2.6, the standalone Keras 2.2 and the ports' NumPy and Python era (legacy/), and tensorflow-estimator 2.15 on
TensorFlow 2.16 and later (estimator_library.py). A world is data: a table of `Module` rows and a `Rules` object
(what it does besides reading its table, as data and functions it supplies), served by one class, `World`, with
one finder class, `WorldFinder`; no world subclasses them. legacy/runs.py lists every world a run serves.

- A module path of the table, or one derived from it (a child module of its sources, a path the world redirects),
  is served by the world's import finder: as today's module itself where it is one (an alias), else as a
  `WorldModule` whose names resolve from the table on first access.
- Today's modules that lack names of the era (the world's `filled` table) get them through their module
  `__getattr__` (PEP 562), resolved from the table each time: nothing is written into the foreign module.
- A name with no counterpart resolves to a stand-in (`Unavailable`) that raises `NoCounterpartError`, naming it and
  what replaces it, once it is used; a counterpart that behaves differently warns once, with the program's line.
- `World.status(dotted)` answers for a name of the world without running user code, from the same lookup (or the
  world's own rule, `Rules.status`): what `scan` reports, under the category and the command the world carries.

A module serves, in this order: its `names`, its `missing` names, the public names of its `sources` (first match
wins), then its child modules (listed in the table, or child modules of its sources).
"""

from __future__ import annotations

import contextlib
import difflib
import enum
import functools
import importlib
import importlib.abc
import importlib.machinery
import inspect
import sys
import threading
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.compat.keras import TF1_KERAS_APIS, tf1_keras_api
from npu_bridge_compat.compat.versions import ESTIMATOR_TENSORFLOW, tensorflow_version, version_tuple
from npu_bridge_compat.errors import NpuCompatWarning, TensorFlowVersionError, warn
from npu_bridge_compat.imports.program import NOT_SERVED, PROGRAM_IMPORTS

KERAS = "{keras}"  # in a source: the Keras 2 of this line, `keras` (TensorFlow 2.15) or `tf_keras` (2.16 and later)


@dataclass(frozen=True)
class Module:
    """One module of the era a program was written for, and where its names live today."""

    sources: tuple[str, ...] = ()
    names: Mapping[str, str] = field(default_factory=dict)
    differs: Mapping[str, str] = field(default_factory=dict)
    missing: Mapping[str, str] = field(default_factory=dict)
    gone: str = ""  # the whole module has no counterpart: why
    note: str = ""  # the counterpart in words, when its sources do not say it

    @property
    def is_alias(self) -> bool:
        """Served as its one source itself rather than as a module of its own."""
        return len(self.sources) == 1 and not (self.names or self.differs or self.missing or self.gone)


class NoCounterpartError(AttributeError, NotImplementedError):
    """A name of the program's era with no counterpart here was used.

    It is an AttributeError too, so that fallbacks written as `except AttributeError:` still run.
    """


class DifferenceWarning(NpuCompatWarning):
    """A name of the program's era runs on a counterpart that behaves differently (or is spelled differently
    today); said once per name, at the program's line that used it."""


class Status(enum.StrEnum):
    """What a name of a world becomes here, for `run` and `scan` alike."""

    WORKS = "works"  # served by a counterpart that behaves as the era's name did
    DIFFERS = "differs"  # served by a counterpart that behaves differently: a warning at the program's line
    MISSING = "missing"  # no counterpart: imports, and raises NoCounterpartError naming the replacement when used
    UNKNOWN = "unknown"  # not a name the world maps
    CURRENT = "current"  # today has it under the same name


@dataclass(frozen=True)
class NameStatus:
    """What a dotted name of an era becomes here, and a sentence saying why; what else a world knows of it."""

    status: Status
    detail: str
    name: str | None = None  # the part of the dotted name the answer is for, where not all of it (`numpy.float`)
    suggestion: str | None = None  # an unknown name's closest known name
    value: Any = field(default=None, compare=False, repr=False)  # what the name is under `run`, where the world says
    device_only: bool = False  # no host equivalent: calling it raises DeviceOnlyFeatureError (the adapter's names)
    continues_in: str | None = None  # the rest of the name is another library's (npu_init's `tf`: `tensorflow.<rest>`)


CURRENT = NameStatus(Status.CURRENT, "this line has it under the same name")


@dataclass(frozen=True)
class Found:
    status: Status  # any but CURRENT
    detail: str
    value: Any = None  # the counterpart, for works / differs
    module: str | None = None  # a module path the world serves, when the name is one


ABSENT = object()


@functools.cache
def keras_root() -> str:
    """The package of the Keras 2 that tf.keras is on this line: `keras` (TensorFlow 2.15) or `tf_keras`."""
    if version_tuple(tensorflow_version()) <= version_tuple(ESTIMATOR_TENSORFLOW):
        return "keras"
    return "tf_keras"


def keras_is_aliased() -> bool:
    """Whether `keras` itself is served as tf_keras (from TensorFlow 2.16, where the keras package is Keras 3)."""
    return keras_root() != "keras"


def source(path: str) -> str:
    """A table path as this line names it (`{keras}` made the Keras 2 package; nothing imported otherwise)."""
    return path.replace(KERAS, keras_root()) if KERAS in path else path


_SHOWN_AS = {
    "tensorflow.": "tf.",
    "keras.api._v1.keras.": "tf.compat.v1.keras.",
    "tf_keras.api._v1.keras.": "tf.compat.v1.keras.",
}


def pretty(dotted: str) -> str:
    for prefix, shown in _SHOWN_AS.items():
        if dotted.startswith(prefix):
            return shown + dotted[len(prefix) :]
    return dotted


class _LookingUp(threading.local):
    """The module paths this thread is looking up: a counterpart can have the era's path as its own name
    (keras.utils is both on TensorFlow 2.15), and looking it up must find today's module, not a world's finder."""

    def __init__(self) -> None:
        self.paths: set[str] = set()

    @contextlib.contextmanager
    def todays_only(self, path: str) -> Iterator[None]:
        added = path not in self.paths
        self.paths.add(path)
        try:
            yield
        finally:
            if added:
                self.paths.discard(path)


looking_up = _LookingUp()


def fills_names(module: types.ModuleType) -> bool:
    """Whether `module`'s `__getattr__` is one a world gave it (World.filled_getattr)."""
    return getattr(inspect.getattr_static(module, "__getattr__", None), "fills_world_names", False)


def todays_attribute(obj: Any, name: str) -> Any:
    """`obj.name` as today has it, without the names a world fills in (`ABSENT` when there is none)."""
    if isinstance(obj, WorldModule):
        return inspect.getattr_static(obj, name, ABSENT)  # a served module is no module of today's
    if isinstance(obj, types.ModuleType) and fills_names(obj):
        value = inspect.getattr_static(obj, name, ABSENT)  # what the module holds, never a world's answer
        if value is ABSENT:
            with contextlib.suppress(AttributeError):
                value = inspect.getattr_static(obj, "__getattr__").previous(name)  # the module's own __getattr__
        return value
    return getattr(obj, name, ABSENT)


@functools.cache
def resolve(dotted: str) -> Any:
    """The object a dotted path names: a module, or attributes of the longest importable one; ImportError when
    there is none. TensorFlow's API paths (`tensorflow.distribute`, not `tensorflow.python...`) are walked as
    attributes, since implementation packages of the same names shadow some of them; the parts of tf.compat.v1
    that Keras 2 implements are the Keras 2 that `run` selects (tf_keras where tf.keras is Keras 3)."""
    for api in TF1_KERAS_APIS:
        if dotted == f"tensorflow.compat.v1.{api}":
            try:
                return tf1_keras_api(api)
            except TensorFlowVersionError as error:
                raise ImportError(str(error)) from error
    parent, _, name = dotted.rpartition(".")
    if parent and dotted.startswith("tensorflow.") and not dotted.startswith("tensorflow.python."):
        value = todays_attribute(resolve(parent), name)
        if value is not ABSENT:
            return value
    try:
        with looking_up.todays_only(dotted):  # today's module of that name, never the one a world serves
            return importlib.import_module(dotted)
    except ModuleNotFoundError as error:
        if error.name is not None and not dotted.startswith(error.name):
            raise  # a dependency of that module is missing, not the path itself
    value = todays_attribute(resolve(parent), name) if parent else ABSENT
    if value is ABSENT:
        raise ImportError(f"{dotted} does not exist in this installation")
    return value


def today_has(dotted: str) -> bool:
    """Whether this installation has `dotted` as a program gets it without a world: a module, or a name reached
    from one (past the first object that is not a module, the rest is the object's own business, not checked)."""
    parts = dotted.split(".")
    for cut in range(1, len(parts) + 1):
        try:
            value = resolve(".".join(parts[:cut]))
        except Exception:  # noqa: BLE001 - not there, or a lazily loaded module that cannot load here
            return False
        if not isinstance(value, types.ModuleType):
            return True
    return True


def importable(dotted: str) -> bool:
    try:
        return isinstance(resolve(dotted), types.ModuleType)
    except ImportError:
        return False


def _library(module: types.ModuleType) -> str:
    return module.__name__.partition(".")[0]


def submodule(module: Any, name: str) -> types.ModuleType | None:
    """`module.name` when it is a module of `module`'s own library (not one it merely imported)."""
    value = todays_attribute(module, name)
    if isinstance(value, types.ModuleType):
        return value if _library(value) == _library(module) else None
    if not hasattr(module, "__path__"):
        return None
    child = f"{module.__name__}.{name}"
    try:
        with looking_up.todays_only(child):  # today's child module, never one a world would serve
            return importlib.import_module(child)
    except ImportError:
        return None


class Unavailable:
    """What a name without a counterpart resolves to: importable, an error naming it once it is used."""

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
        return f"<{self._qualified_name}: no counterpart here ({self._message})>"


class WorldModule(types.ModuleType):
    """A module of an era that today lacks under its name; its names resolve from the world's table when read."""

    def __init__(self, world: World, path: str) -> None:
        found = world.module_found(path)
        super().__init__(path, f"{world.era}'s {path} on {world.where(path)}: {found.detail} (npu_bridge_compat).")
        self.__path__ = []  # a package: its submodules come from the finder
        self.__package__ = path
        self._world = world
        if "__version__" in getattr(world.modules.get(path), "names", ()):  # a module's dunder names are not looked up
            self.__version__ = world.attribute(path, "__version__")  # (the standalone Keras' keras.__version__)

    def __getattr__(self, name: str) -> Any:
        if name == "__all__":
            return sorted(self._world.public_names(self.__name__))
        if name.startswith("__"):  # Python's own protocol names; private names of the era (`_Linear`) resolve
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        value = self._world.attribute(self.__name__, name)
        setattr(self, name, value)  # this module's own namespace, as an import would fill it
        return value

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | self._world.public_names(self.__name__))

    def __repr__(self) -> str:
        return f"<module {self.__name__!r} ({self._world.module_found(self.__name__).detail}; npu_bridge_compat)>"


ENGINE_DEFAULT: Any = object()  # a rule's answer that leaves the question to the engine


@dataclass(frozen=True)
class Rules:
    """What a world does besides reading its table: data, and functions of the world that supply it, each asked
    by the one server (`World`) where it has a default of its own. A function returning ENGINE_DEFAULT leaves that
    case to the engine.

    - `module_class`: the class of the modules it serves (WorldModule, or a subclass that only names the world);
    - `program_tops` + `program_import(world, name, globals, locals, fromlist, original)`: its view of the program's
      own imports of those packages (NOT_SERVED leaves an import to the next world);
    - `own_trees`: trees whose every module in sys.modules is the world's (undoing its finder forgets them all);
    - `finder_paths`: single paths its finder takes part in besides its trees (a library whose import it prepares);
    - `where(path)`: what a name of `path` runs on, for messages;
    - `redirect(path)`: another module path whose entry this one is; `fallback(path)`: the entry of a path neither
      listed nor derived from its parent;
    - `replaces_todays(world, fullname)`: its finder serves `fullname` even where today has a module of that name;
    - `module_spec(world, fullname, todays, finder)`: how the import system gets a path of its trees (a module
      loaded its own way, a wrapped loader); `module_for_import(world, fullname)`: the module its finder creates;
    - `module_found(world, path)`: the status of a module it serves;
    - `can_install(world)`: whether it may be served in this process (False, or an NpuConfigError naming why not);
    - `filled_modules(world, key)`: today's modules that get the names of its `filled` entry `key`;
      `fill_reason(world, key)`: why, in the registry's words;
    - `install_more(world)`: what it serves besides its modules and filled names; `serve_more(world)`: what `run`
      serves with it besides the program's view (`World.serve`);
    - `status(world, dotted)`: what a name of the trees it answers for becomes (`World.status`), where its table's
      walk (`World.table_status`) is not all of the answer: TF 1.15's `tf.X` as `tf.compat.v1.X`, the era's
      shortest served part, the adapter's names as this package's objects.
    """

    module_class: type[WorldModule] = WorldModule
    program_tops: tuple[str, ...] = ()
    program_import: Callable[..., Any] | None = None
    own_trees: tuple[str, ...] = ()
    finder_paths: tuple[str, ...] = ()
    where: Callable[[str], str] | None = None
    redirect: Callable[[str], str | None] | None = None
    fallback: Callable[[str], Module | None] | None = None
    replaces_todays: Callable[[World, str], bool] | None = None
    module_spec: Callable[..., Any] | None = None
    module_for_import: Callable[[World, str], Any] | None = None
    module_found: Callable[[World, str], Any] | None = None
    can_install: Callable[[World], bool] | None = None
    filled_modules: Callable[[World, str], Any] | None = None
    fill_reason: Callable[[World, str], str] | None = None
    install_more: Callable[[World], None] | None = None
    serve_more: Callable[[World], None] | None = None
    status: Callable[[World, str], NameStatus] | None = None


class World:
    """One era's modules and names, from its table, and how they are served here: the one server of every world
    (its finder, the names it fills into today's modules, its view of the program's imports), configured by the
    world's `rules`.

    `modules`: the era's module paths (full dotted paths) and where their names live. `filled`: today's modules that
    lack names of the era. `roots`: the trees the world answers for; `finder_roots`: the ones its finder serves
    where today has no module of the name (all of `roots` unless given); `program_roots`: trees served to the
    program's own imports even where today has modules of those names (TensorFlow's own code keeps today's).
    `stand_in_unknown`: names the table does not know resolve to stand-ins too (a closed tree such as
    tensorflow.contrib) rather than raising AttributeError. `aliases`: a module with one source and nothing else is
    served as that module itself (monkeypatching it patches the library); else every module is one of its own.
    `first_child_only`: a module derived from its parent's sources is the first source's child (else the children
    of all sources, merged).

    What `scan` needs to report the world's names, as data: `answers_for`, the trees whose names `status` answers
    (its `roots` unless given); `category`, the category of their findings (scan/report.py's `Category`, by value;
    empty for a world whose names scan does not report), with `categories` for roots of another one; and
    `unknown_reported_as`, the status reported for a name of its trees that its table does not know (None: no
    finding; a closed tree's unknown names fail under `run`)."""

    def __init__(
        self,
        *,
        name: str,
        owner: Owner,
        era: str,
        modules: Mapping[str, Module],
        warning: type[DifferenceWarning] = DifferenceWarning,
        filled: Mapping[str, Module] | None = None,
        roots: tuple[str, ...] = (),
        finder_roots: tuple[str, ...] | None = None,
        program_roots: tuple[str, ...] = (),
        label: str = "",
        stand_in_unknown: bool = False,
        first_child_only: bool = False,
        aliases: bool = True,
        serves: str = "",
        rules: Rules = Rules(),
        answers_for: tuple[str, ...] | None = None,
        category: str = "",
        categories: Mapping[str, str] | None = None,
        unknown_reported_as: Status | None = None,
    ) -> None:
        self.name, self.owner = name, owner
        self.era, self.modules, self.warning = era, modules, warning
        self.serves = serves or f"{era}'s module paths that this line lacks, from its table"
        self.filled = filled or {}
        self.roots = roots
        self.finder_roots = roots if finder_roots is None else finder_roots
        self.program_roots = program_roots
        self.label = label  # after a name in messages: " (TF 2.6)"
        self.stand_in_unknown = stand_in_unknown
        self.first_child_only = first_child_only
        self.aliases = aliases
        self.rules = rules
        self.answers_for = roots if answers_for is None else answers_for
        self.category, self.categories = category, categories or {}
        self.unknown_reported_as = unknown_reported_as
        self.program_tops = rules.program_tops  # the packages whose imports by the program its view answers
        self.unknown_detail = f"not a {era} name npu_bridge_compat maps"
        self.warned: set[str] = set()
        self.entry = functools.cache(self._entry)
        self.lookup_in = functools.cache(self._lookup_in)
        self.served_module = functools.cache(self._served_module)
        self.public_names = functools.cache(self._public_names)
        self.table_status = functools.cache(self._table_status)
        self.status = functools.cache(self._status)
        self.finder = WorldFinder(self)

    # --- installing ------------------------------------------------------------------------------------------

    def installed(self) -> bool:
        return self.finder in sys.meta_path

    def can_install(self) -> bool:
        """Whether the world can be served in this process (its rule: True by default; a world raises
        NpuConfigError for a process it must not touch)."""
        return self.rules.can_install is None or self.rules.can_install(self)

    def install(self) -> bool:
        """Serve the world for the rest of the process (idempotent), every change through the registry under the
        world's owner, so that `changes.undo(owner=world.owner)` takes it all back: its finder (and the modules it
        served), the names it fills into today's modules, then what else the world serves (`install_more`).
        False, with nothing changed, where `can_install` says no."""
        if self.installed():
            return True
        if not self.can_install():
            return False
        changes.add_import_finder(
            self.finder,
            owner=self.owner,
            reason=self.serves,
            packages=self.rules.own_trees,
            forget=self.finder.forget_created,
        )
        self.fill_names()
        if self.rules.install_more is not None:
            self.rules.install_more(self)
        return True

    def serve(self) -> bool:
        """What `run` does with the world: `install()`, and the program's own imports get the world's view (its
        `program_import`, through the one hook of program.py) while the world is installed."""
        if not self.install():
            return False
        if self.program_tops:
            PROGRAM_IMPORTS.serve(self)
        if self.rules.serve_more is not None:
            self.rules.serve_more(self)
        return True

    def filled_modules(self, key: str) -> list[types.ModuleType]:
        """Today's modules that get the names of the `filled` entry `key` (its rule; the module `key`)."""
        if self.rules.filled_modules is not None:
            modules = self.rules.filled_modules(self, key)
            if modules is not ENGINE_DEFAULT:
                return modules
        return [importlib.import_module(key)]

    def fill_reason(self, key: str) -> str:
        if self.rules.fill_reason is not None:
            return self.rules.fill_reason(self, key)
        return f"{self.era}'s {key} had names this line keeps elsewhere"

    def fill_names(self) -> None:
        """Give today's modules that lack names of the era a PEP 562 `__getattr__` resolving them (filled_getattr)."""
        for key in self.filled:
            for module in {id(m): m for m in self.filled_modules(key)}.values():
                if fills_names(module) or inspect.getattr_static(type(module), "__getattr__", None) is not None:
                    continue  # filled already, or a module class that resolves names of its own (a lazy loader)
                previous = inspect.getattr_static(module, "__getattr__", None)  # the module's own, asked after
                changes.replace_attribute(
                    module,
                    "__getattr__",
                    self.filled_getattr(key, module, previous),
                    owner=self.owner,
                    label=module.__name__,
                    reason=self.fill_reason(key),
                )

    def program_import(
        self, name: str, globals: dict | None, locals: Any, fromlist: Any, original: Callable[..., Any]
    ) -> Any:
        """What the program's `import name` (absolute, from its own code) gets in this world, or NOT_SERVED to leave
        it to the next world (its rule: none by default)."""
        if self.rules.program_import is None:
            return NOT_SERVED
        return self.rules.program_import(self, name, globals, locals, fromlist, original)

    # --- the table -------------------------------------------------------------------------------------------

    def where(self, path: str) -> str:
        """What a name of `path` runs on here, for messages: 'TensorFlow 2.15.1' unless the world says."""
        return self.rules.where(path) if self.rules.where else f"TensorFlow {tensorflow_version()}"

    @staticmethod
    def in_tree(path: str, roots: tuple[str, ...]) -> bool:
        return any(path == root or path.startswith(root + ".") for root in roots)

    def redirect(self, path: str) -> str | None:
        """Another module path whose entry this one is (its rule; none by default)."""
        return self.rules.redirect(path) if self.rules.redirect else None

    def _entry(self, path: str) -> Module | None:
        """The table entry of a module path, or one derived from it; None for a path the world does not serve."""
        with looking_up.todays_only(path):
            if path in self.modules:
                return self.modules[path]
            redirected = self.redirect(path)
            if redirected is not None:
                return self.entry(redirected)
            parent, _, name = path.rpartition(".")
            parent_entry = self.entry(parent) if parent else None
            if parent_entry is not None:
                if parent_entry.gone:
                    return Module(gone=parent_entry.gone)
                children = []
                for candidate in parent_entry.sources:
                    try:
                        child = submodule(resolve(source(candidate)), name)
                    except ImportError:
                        continue
                    if child is not None and child.__name__ not in children:
                        children.append(child.__name__)
                        if self.first_child_only:
                            break
                if children:
                    return Module(sources=tuple(children))
            return self.rules.fallback(path) if self.rules.fallback else None

    def module_found(self, path: str) -> Found:
        """The status of a module the world serves."""
        if self.rules.module_found is not None:
            found = self.rules.module_found(self, path)
            if found is not ENGINE_DEFAULT:
                return found
        entry = self.entry(path)
        if entry.gone:
            return Found(Status.MISSING, entry.gone, module=path)
        detail = entry.note or ", ".join(pretty(source(s)) for s in entry.sources) or f"a package of {self.era}'s tree"
        return Found(Status.WORKS, detail, module=path)

    def _lookup_in(self, path: str, name: str) -> Found:
        """What `<path>.<name>` is, `path` being a module the world serves (an alias of today's module has the
        names the world fills into that module too)."""
        found = self.lookup(self.entry(path), path, name)
        key = self.filled_key(path) if found.status is Status.UNKNOWN else None
        return self.lookup(self.filled[key], key, name) if key is not None else found

    def lookup(self, entry: Module, path: str, name: str) -> Found:
        """What `<path>.<name>` is, `entry` being the table row of the module `path`: the one lookup behind served
        modules, filled names and the name status."""
        if entry.gone:
            return Found(Status.MISSING, entry.gone)
        if name in entry.names:
            return self._counterpart(entry, name, entry.names[name])
        if name in entry.missing:
            return Found(Status.MISSING, entry.missing[name])
        unavailable = ""
        for candidate in entry.sources:  # before the child modules: packages star-imported over their modules
            try:
                module = resolve(source(candidate))
            except ImportError as error:
                unavailable = unavailable or f"its counterpart {pretty(source(candidate))} cannot be imported ({error})"
                continue
            exported = getattr(module, "__all__", None)
            if exported is not None and name not in exported:
                continue
            value = todays_attribute(module, name)
            if value is not ABSENT and not isinstance(value, types.ModuleType):
                return self._counterpart(entry, name, f"{candidate}.{name}", value)
        child = f"{path}.{name}"
        if self.entry(child) is not None:
            return self.module_found(child)
        return Found(Status.MISSING, unavailable) if unavailable else Found(Status.UNKNOWN, self.unknown_detail)

    def _counterpart(self, entry: Module, name: str, target: str, value: Any = ABSENT) -> Found:
        if target in self.modules:  # a module of the era's own tree
            return self.module_found(target)
        shown = pretty(source(target))
        if value is ABSENT:
            try:
                value = resolve(source(target))
            except ImportError as error:
                return Found(Status.MISSING, f"its counterpart {shown} cannot be imported here ({error})")
        if name in entry.differs:
            return Found(Status.DIFFERS, entry.differs[name], value)
        return Found(Status.WORKS, shown, value)

    def _public_names(self, path: str) -> frozenset[str]:
        """The names a served module answers for (its `dir()` and `__all__`; never a name it does not know)."""
        entry = self.entry(path)
        if entry.gone:
            return frozenset()
        names = set(entry.names) | set(entry.missing)
        names |= {key[len(path) + 1 :] for key in self.modules if key.startswith(path + ".")}
        for candidate in entry.sources:
            try:  # a lazy loader whose module cannot load here (Keras 3's TF1 layers) lists nothing
                module = resolve(source(candidate))
                names |= set(getattr(module, "__all__", None) or (n for n in dir(module) if not n.startswith("_")))
            except ImportError:
                continue
        known = (name for name in names if "." not in name)
        return frozenset(name for name in known if self.lookup_in(path, name).status is not Status.UNKNOWN)

    def detail_of(self, path: str, name: str, found: Found) -> str:
        """The detail of a lookup, an unknown name with the closest known one."""
        if found.status is not Status.UNKNOWN or path not in self.modules and self.entry(path) is None:
            return found.detail
        close = difflib.get_close_matches(name, self.public_names(path), n=1)
        return found.detail + (f"; did you mean {path}.{close[0]}?" if close else "")

    # --- run time ------------------------------------------------------------------------------------------

    def attribute(self, path: str, name: str) -> Any:
        """The runtime value of `<path>.<name>`, `path` being a module the world serves."""
        return self.runtime_value(path, name, self.lookup_in(path, name))

    def runtime_value(self, path: str, name: str, found: Found) -> Any:
        """The object a found name gives a program: its counterpart, a module, or a stand-in that raises."""
        qualified = f"{path}.{name}"
        if found.module is not None:
            return self.served_module(found.module)  # a gone module too: its names are the stand-ins
        if found.status is Status.MISSING:
            return Unavailable(
                qualified, f"{qualified}{self.label} has no counterpart on {self.where(path)}: {found.detail}."
            )
        if found.status is Status.UNKNOWN:
            detail = self.detail_of(path, name, found)
            if self.stand_in_unknown:
                return Unavailable(qualified, f"{qualified} is {detail}.")
            raise AttributeError(f"module {path!r} ({self.era}) has no attribute {name!r}: {detail}")
        if found.status is Status.DIFFERS and qualified not in self.warned:
            self.warned.add(qualified)
            warn(f"{qualified} on {self.where(path)}: {found.detail}.", self.warning)
        return found.value

    def _served_module(self, path: str) -> types.ModuleType:
        """The module object a module path gives: today's module itself for an alias, else one of its own."""
        entry = self.entry(path)
        if entry is None:
            raise ModuleNotFoundError(f"No module named '{path}'", name=path)
        if self.aliases and entry.is_alias:
            return importlib.import_module(source(entry.sources[0]))
        return self.rules.module_class(self, path)

    def module_for_import(self, fullname: str) -> types.ModuleType:
        """What `import fullname` gives through the world's finder."""
        if self.rules.module_for_import is not None:
            module = self.rules.module_for_import(self, fullname)
            if module is not ENGINE_DEFAULT:
                return module
        return self.served_module(fullname)

    def finder_serves(self, fullname: str) -> bool:
        """Whether the world's finder takes part in importing `fullname`: a path in its `finder_roots`' trees, or
        one of its rules' single `finder_paths`."""
        return fullname in self.rules.finder_paths or self.in_tree(fullname, self.finder_roots)

    def replaces_todays(self, fullname: str) -> bool:
        """Whether the finder serves `fullname` even where today has a module of that name (its rule)."""
        return self.rules.replaces_todays is not None and self.rules.replaces_todays(self, fullname)

    def module_spec(
        self, fullname: str, todays: importlib.machinery.ModuleSpec | None, finder: WorldFinder
    ) -> importlib.machinery.ModuleSpec | None:
        """How the import system gets `fullname`, a path in the finder's trees; `todays` is today's spec of it
        (None where today has none, or the world replaces it). Today's module wins; a path of the table is the
        finder's to create (`module_for_import`); None leaves the path to the import system. The world's rule may
        load a module of its own way (the adapter's files under their import paths) or wrap today's loader."""
        if self.rules.module_spec is not None:
            spec = self.rules.module_spec(self, fullname, todays, finder)
            if spec is not ENGINE_DEFAULT:
                return spec
        if todays is not None or self.entry(fullname) is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, finder, is_package=True)

    def filled_key(self, path: str) -> str | None:
        """The `filled` entry of today's module `path` (directly, or through the world's redirect)."""
        if path in self.filled:
            return path
        redirected = self.redirect(path)
        return redirected if redirected in self.filled else None

    def filled_getattr(self, key: str, module: types.ModuleType, previous: Callable[[str], Any] | None = None):
        """A PEP 562 `__getattr__` for today's `module`, which lacks some names of the era: they resolve from the
        `filled` entry `key` each time they are read (nothing is written into the module). The table's own names
        come first; then the module's `previous` `__getattr__`; then the entry's sources. Any other name is the
        AttributeError it was."""
        entry = self.filled[key]

        def __getattr__(name: str) -> Any:
            if not name.startswith("__"):
                if name in entry.names or name in entry.missing:
                    return self.runtime_value(key, name, self.lookup(entry, key, name))
                if previous is None:
                    found = self.lookup(entry, key, name)
                    if found.status is not Status.UNKNOWN:
                        return self.runtime_value(key, name, found)
                else:
                    try:
                        return previous(name)
                    except AttributeError:
                        found = self.lookup(entry, key, name)
                        if found.status is Status.UNKNOWN:
                            raise
                        return self.runtime_value(key, name, found)
            if previous is not None:
                return previous(name)
            raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")

        __getattr__.fills_world_names = True
        __getattr__.previous = previous or _no_attribute(module)
        return __getattr__

    # --- name status (scan) ---------------------------------------------------------------------------------

    def answers(self, dotted: str) -> str | None:
        """The tree of `answers_for` that `dotted` is in (the longest), or None."""
        return max((root for root in self.answers_for if self.in_tree(dotted, (root,))), key=len, default=None)

    def category_of(self, dotted: str) -> str:
        """The category of `scan`'s finding for a name of the world: its root's, else the world's."""
        return self.categories.get(dotted.split(".")[0], self.category)

    def _status(self, dotted: str) -> NameStatus:
        """What a dotted name of the trees the world answers for becomes here: works | differs | missing | unknown |
        current, with a one-sentence detail: the world's rule, else its table's walk. Pure: imports the
        counterparts' libraries, never user code, and changes nothing; cached."""
        if self.rules.status is not None:
            return self.rules.status(self, dotted)
        return self.table_status(dotted)

    def is_todays(self, path: str) -> bool:
        """Whether a module path is read as today's module (rather than the table's) by the name status."""
        if self.in_tree(path, self.program_roots):
            return False
        if self.in_tree(path, self.finder_roots) and self.replaces_todays(path):
            return False
        return importable(path) and not isinstance(resolve(path), WorldModule)

    def _table_status(self, dotted: str) -> NameStatus:
        """What a dotted name of the era becomes here: works | differs | missing | unknown | current (today has
        it as it is), with a one-sentence detail. Imports the counterparts' libraries, never user code, and
        changes nothing."""
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            path = ".".join(parts[:cut])
            if self.is_todays(path):
                return self._walk_todays(path, parts[cut:])
            if self.in_tree(path, self.roots) and self.entry(path) is not None:
                return self._walk(path, parts[cut:])
        return NameStatus(Status.UNKNOWN, self.unknown_detail)

    def _walk(self, path: str, rest: list[str]) -> NameStatus:
        found = self.module_found(path)
        detail = found.detail
        for name in rest:
            found = self.lookup_in(path, name)
            detail = self.detail_of(path, name, found)
            if found.module is None:
                break  # an attribute of a counterpart (ModeKeys.INFER): the counterpart's status
            path = found.module
        return NameStatus(found.status, detail)

    def _walk_todays(self, path: str, rest: list[str]) -> NameStatus:
        """A name under today's module `path`: today's attribute, or the name the world fills in, in the order
        `filled_getattr` answers: a name the module does not hold is the table's own first (numpy.bool8, which
        NumPy 1.26 still answers with a deprecation), then the module's, then the table's sources'."""
        obj: Any = resolve(path)
        for index, name in enumerate(rest):
            if not isinstance(obj, types.ModuleType):
                break
            key = self.filled_key(path)
            row = self.filled[key] if key is not None else None
            held = inspect.getattr_static(obj, name, ABSENT)
            in_table = row is not None and (name in row.names or name in row.missing)
            value = ABSENT if held is ABSENT and in_table else todays_attribute(obj, name)
            if value is ABSENT:
                if row is None:
                    return NameStatus(Status.UNKNOWN, f"{path} has no {name} here, and the {self.era} world maps none")
                found = self.lookup(row, key, name)
                if found.module is not None:
                    return self._walk(found.module, rest[index + 1 :])
                return NameStatus(found.status, found.detail)
            obj, path = value, f"{path}.{name}"
        return CURRENT


def _no_attribute(module: types.ModuleType) -> Callable[[str], Any]:
    def missing(name: str) -> Any:
        raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")

    return missing


class WorldFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """The one import finder of the package: serves a world's module paths that today lacks (or that the world
    replaces), as its `module_spec` says; remembers what it created, so that undoing its registration forgets
    those modules."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.created: dict[str, types.ModuleType] = {}
        self._own_specs: dict[str, Any] = {}

    def find_spec(self, fullname, path=None, target=None):
        world = self.world
        if not world.finder_serves(fullname) or fullname in looking_up.paths:
            return None
        with looking_up.todays_only(fullname):
            todays = None if world.replaces_todays(fullname) else self._todays_spec(fullname, path)
            return world.module_spec(fullname, todays, self)

    def _todays_spec(self, fullname, path):
        for finder in sys.meta_path:
            if finder is self or isinstance(finder, WorldFinder) or not hasattr(finder, "find_spec"):
                continue
            found = finder.find_spec(fullname, path, None)
            if found is not None:
                return found
        return None

    def create_module(self, spec):
        module = self.world.module_for_import(spec.name)
        self.created[spec.name] = module
        if module.__name__ != spec.name:  # today's module under another name (`keras` served as tf_keras)
            self._own_specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module) -> None:
        """Nothing to run: today's module is loaded, or the served module resolves its names when read. Today's
        module served under another name keeps its own `__spec__`, which the import system just overwrote with
        this finder's (it would read as served by this finder after undoing)."""
        own_spec = self._own_specs.pop(module.__spec__.name, None)
        if own_spec is not None:
            module.__spec__ = own_spec

    def forget_created(self) -> None:
        """Take the modules this finder created out of `sys.modules` (where they are still the ones it made)."""
        parents = {**sys.modules, **self.created}  # a parent it created (`keras`, served as tf_keras) included
        for name, module in self.created.items():
            parent, _, child = name.rpartition(".")  # the import system bound it to its parent package too
            if parent in parents and inspect.getattr_static(parents[parent], child, None) is module:
                with contextlib.suppress(AttributeError, TypeError):
                    delattr(parents[parent], child)
        for name, module in self.created.items():
            if sys.modules.get(name) is module:
                del sys.modules[name]
        self.created.clear()
