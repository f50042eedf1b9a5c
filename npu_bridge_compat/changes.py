"""The one registry of every change npu_bridge_compat makes outside its own objects.

An attribute of TensorFlow, Keras, Estimator or a user's object replaced, an import finder on `sys.meta_path`, an
entry of `sys.path`, an exit handler, a logging or warnings filter, a TensorFlow process setting, an environment
variable: each is made here, by the door or command that needs it, and recorded as a `Change` (what, why, which
part of the package asked: an `Owner`). Making the same change again is a no-op, so doors need no flags of their
own; asking for the same thing with another value is refused (`ChangeConflict`). `in_force()` lists what holds
now (`python -m npu_bridge_compat explain --changes` prints it) and `undo()` puts the process back, newest first,
as pytest's monkeypatch does. What cannot be put back (a device setting once TensorFlow's context started) is
recorded as irreversible: listed, and left in force by `undo()`. Importing npu_bridge_compat changes nothing: a
user who uses none of it keeps the process as it was.

The registry only records and restores; what each change does and why lives with the code that asks for it.
"""

from __future__ import annotations

import atexit
import contextlib
import enum
import logging
import os
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

_MISSING = object()  # an attribute or variable that did not exist before the change


class Owner(str, enum.Enum):
    """The parts of the package that change the process; `undo(owner=...)` and `explain --changes` go by them."""

    RUN = "run"
    LAUNCH = "launch"
    MAIN_MODULE = "python -m npu_bridge_compat"
    SCAN = "scan"
    SCAN_TRIAL = "scan --try"
    LOGGING = "logging"
    PLAN_ENVIRONMENT = "plan (environment)"
    PLAN_SETTINGS = "plan (process settings)"
    STEP_LOOP = "N-step loop"
    KERAS_CALL = "Keras call under a plan"
    KERAS_2 = "Keras 2 for ported scripts"
    GRAPH_KERNEL_FUSION = "graph-kernel fusion"
    PRECISION = "mixed precision (measured)"
    BATCH_NORM_HORIZON = "mixed compute (FusedBatchNormV3 horizon)"
    ESTIMATOR_DOOR = "Estimator door"
    ESTIMATOR_LIBRARY = "tf.estimator on the newest TensorFlow"
    SESSION_DOOR = "session door"
    TF2_DOOR = "TF2 door (npu_device)"
    TF2_DISTRIBUTE = "npu_device.distribute"
    RANKS = "ranks"
    DISTRIBUTED_OPTIMIZER = "distributed optimizer"
    NPU_INIT = "npu_bridge.npu_init"
    ADAPTER_ALIASES = "npu_bridge aliases"
    ADAPTER_HOOKS = "the adapter's hooks"
    TF1_WORLD = "the TF 1.15 world"
    TF26_WORLD = "the TF 2.6 world"
    ERA_WORLD = "the ports' NumPy and Python era"
    PROGRAM_IMPORTS = "the program's imports"

    def __str__(self) -> str:
        return self.value


class ChangeConflict(RuntimeError):
    """Two parts of the package asked for the same thing with different values."""


class UndoError(RuntimeError):
    """Some changes could not be undone; every other change was."""


@dataclass(frozen=True)
class Change:
    """One change in force: `target` is what was changed, as a user would name it (`tensorflow.function`,
    `sys.meta_path`, `$TF_XLA_FLAGS`, `<user's Adam>.apply_gradients`)."""

    target: str
    kind: str  # "attribute", "environment", "import finder", "context", "sys.path", "exit handler", ...
    owner: Owner
    reason: str
    _undo: Callable[[], None] | None = field(repr=False, compare=False)  # None: irreversible
    _key: tuple = field(repr=False, compare=False)
    _asked: Any = field(default=None, repr=False, compare=False)  # what was asked for, for conflicts

    @property
    def irreversible(self) -> bool:
        return self._undo is None

    def describe(self) -> str:
        return f"{self.target} ({self.kind}, by {self.owner}): {self.reason}"


_lock = threading.RLock()
_changes: dict[tuple, Change] = {}  # in the order they were made
_made: dict[tuple, int] = {}  # each change's number, counting every change this process made
_count = [0]
# Attributes replaced, by (id(target), name): the value set here and what `target.name` gave before.
_attributes: dict[tuple[int, str], tuple[Any, Any]] = {}


def _checked(owner: Owner) -> Owner:
    if not isinstance(owner, Owner):
        raise TypeError(f"owner must be a changes.Owner, not {owner!r}")
    return owner


def _name_of(target: Any) -> str:
    if isinstance(target, type(sys)):
        return target.__name__
    if isinstance(target, type):
        return f"{target.__module__}.{target.__qualname__}"
    return f"<{type(target).__name__} object at {id(target):#x}>"


def _existing(key: tuple, asked: Any, target: str, owner: Owner) -> Change | None:
    """The change in force under `key`: the same request again is a no-op; another value is a conflict."""
    existing = _changes.get(key)
    if existing is not None and existing._asked != asked:
        raise ChangeConflict(
            f"{target}: {existing.owner} set it to {existing._asked!r}; {owner} asked for {asked!r}. Both cannot "
            "hold in one process"
        )
    return existing


def replace_attribute(
    target: Any, name: str, value: Any, *, owner: Owner, reason: str, label: str | None = None
) -> Change:
    """Set `target.name = value`, remembering what was there (or that nothing was) so that undoing restores it.
    Replacing an attribute this registry already replaced with the same value is a no-op; the owner that replaced
    it may replace it again (a class swapped once more for a subclass of the first: undoing still restores the
    original); another owner is refused: two parts of the package would be fighting over one attribute."""
    key = ("attribute", id(target), name)
    _checked(owner)
    with _lock:
        existing = _changes.get(key)
        if existing is not None:
            current, before = _attributes[(id(target), name)]
            if current is value:
                return existing
            if existing.owner is not owner:
                raise ChangeConflict(f"{existing.target} was already replaced by {existing.owner}; {owner} asked again")
            setattr(target, name, value)
            _attributes[(id(target), name)] = (value, before)
            return existing
        # Undo gives back what the object itself held; an attribute it only inherited (from its class, a base
        # class) is deleted again rather than copied onto it. An instance's __class__ is its type, and a property
        # (Keras' jit_compile, steps_per_execution) is set back through its setter.
        own = getattr(target, "__dict__", None)
        before = getattr(target, name, _MISSING)
        through_setter = not isinstance(target, type) and hasattr(getattr(type(target), name, None), "__set__")
        held = before if own is None or name == "__class__" or through_setter else own.get(name, _MISSING)
        setattr(target, name, value)

        def undo() -> None:
            if held is _MISSING:
                with contextlib.suppress(AttributeError):
                    delattr(target, name)
            else:
                setattr(target, name, held)

        change = _record(key, f"{label or _name_of(target)}.{name}", "attribute", owner, reason, undo)
        _attributes[(id(target), name)] = (value, before)
        # The target is kept alive by the undo closure, so id(target) stays unique while the change is in force.
        return change


def record_library_rewrites(before: dict[tuple[type, str], Any], *, owner: Owner, reason: str) -> list[Change]:
    """Record what a library rewrote in classes while the package loaded it for a program (tensorflow-estimator
    wraps the constructors of TensorFlow classes it exports in deprecation notices): `before` maps (class, name)
    to what the class itself held before (`_MISSING`-free: None for nothing). Each attribute that now holds
    something else becomes a change of `owner`, so that undoing puts the class back as it was."""
    made = []
    with _lock:
        for (target, name), held in before.items():
            value = target.__dict__.get(name)
            key = ("attribute", id(target), name)
            if value is held or key in _changes:
                continue

            def undo(target: type = target, name: str = name, held: Any = held) -> None:
                if held is None:
                    with contextlib.suppress(AttributeError):
                        delattr(target, name)
                else:
                    setattr(target, name, held)

            made.append(_record(key, f"{_name_of(target)}.{name}", "attribute", owner, reason, undo))
            _attributes[(id(target), name)] = (value, held if held is not None else _MISSING)
    return made


def is_in_force(change: Change) -> bool:
    """Whether `change` has not been undone."""
    return _changes.get(change._key) is change


def is_replaced(target: Any, name: str) -> bool:
    """Whether this registry replaced `target.name` and the replacement is in force."""
    return ("attribute", id(target), name) in _changes


def original(target: Any, name: str) -> Any:
    """What `target.name` was before this registry replaced it (the attribute itself when it was not replaced)."""
    entry = _attributes.get((id(target), name))
    if entry is None or entry[1] is _MISSING:
        return getattr(target, name)
    return entry[1]


def set_environment(name: str, value: str, *, owner: Owner, reason: str) -> Change:
    """Set environment variable `name`; undoing gives it back its earlier value (or removes it). Setting it again
    to another value updates it and keeps the first original (runtime/process.py combines what plans ask of one
    variable before it sets it)."""
    key = ("environment", name)
    _checked(owner)
    with _lock:
        existing = _changes.get(key)
        before = os.environ.get(name, _MISSING)
        os.environ[name] = value
        if existing is not None:
            return existing

        def undo() -> None:
            if before is _MISSING:
                os.environ.pop(name, None)
            else:
                os.environ[name] = before

        return _record(key, f"${name}", "environment", owner, reason, undo)


def _record(
    key: tuple,
    target: str,
    kind: str,
    owner: Owner,
    reason: str,
    undo: Callable[[], None] | None,
    asked: Any = None,
) -> Change:
    change = Change(target, kind, _checked(owner), reason, undo, key, asked)
    _changes[key] = change
    _made[key] = _count[0]
    _count[0] += 1
    return change


def add_import_finder(
    finder: Any,
    *,
    owner: Owner,
    reason: str,
    packages: tuple[str, ...] = (),
    forget: Callable[[], None] | None = None,
) -> Change:
    """Put `finder` first on `sys.meta_path`; undoing takes it off and forgets the modules of `packages` (the
    ones it serves) that were imported meanwhile, so that importing them again goes through the import system.
    A finder whose trees it shares with today's modules names no packages and gives `forget`, which takes out of
    `sys.modules` the modules it created itself."""
    key = ("finder", id(finder))
    _checked(owner)
    with _lock:
        existing = _changes.get(key)
        if existing is not None:
            return existing
        sys.meta_path.insert(0, finder)

        def undo() -> None:
            if finder in sys.meta_path:
                sys.meta_path.remove(finder)
            for name in [name for name in sys.modules if any(name == p or name.startswith(p + ".") for p in packages)]:
                del sys.modules[name]
            if forget is not None:
                forget()

        return _record(key, f"sys.meta_path[{type(finder).__name__}]", "import finder", owner, reason, undo)


def enter(
    context: contextlib.AbstractContextManager, target: str, *, owner: Owner, reason: str, value: Any = None
) -> Change:
    """Enter `context` (a library's own way to change something, such as a profiler trace or the calling thread's
    function-call options) and keep it entered until undone. Entering the same `target` again with the same
    `value` (what the context sets) is a no-op; with another value it is a ChangeConflict."""
    key = ("context", target)
    _checked(owner)
    with _lock:
        existing = _existing(key, value, target, owner)
        if existing is not None:
            return existing
        context.__enter__()
        return _record(key, target, "context", owner, reason, lambda: context.__exit__(None, None, None), value)


def change_setting(
    target: str,
    value: Any,
    *,
    read: Callable[[], Any],
    write: Callable[[Any], None],
    owner: Owner,
    reason: str,
) -> Change:
    """Set a process setting (a TensorFlow switch such as TF32 execution) through its own reader and writer;
    undoing writes back what `read()` gave before. The same value again is a no-op; another is a conflict."""
    key = ("setting", target)
    _checked(owner)
    with _lock:
        existing = _existing(key, value, target, owner)
        if existing is not None:
            return existing
        before = read()
        write(value)
        return _record(key, target, "setting", owner, reason, lambda: write(before), value)


def change_irreversibly(target: str, value: Any, apply: Callable[[], None], *, owner: Owner, reason: str) -> Change:
    """Make a change that cannot be put back (TensorFlow's visible devices or thread pools, which it fixes when its
    context starts): it is listed as irreversible and `undo()` leaves it in force. The same value again is a
    no-op; another is a conflict."""
    key = ("irreversible", target)
    _checked(owner)
    with _lock:
        existing = _existing(key, value, target, owner)
        if existing is not None:
            return existing
        apply()
        return _record(key, target, "irreversible", owner, reason, None, value)


def add_exit_handler(function: Callable[[], Any], *, owner: Owner, reason: str, label: str) -> Change:
    """Register `function` to run at interpreter exit (atexit); undoing unregisters it."""
    key = ("exit handler", id(function))
    _checked(owner)
    with _lock:
        existing = _changes.get(key)
        if existing is not None:
            return existing
        atexit.register(function)
        return _record(key, f"atexit[{label}]", "exit handler", owner, reason, lambda: atexit.unregister(function))


def add_to_sys_path(path: str, *, owner: Owner, reason: str) -> Change:
    """Put `path` first on `sys.path`; undoing takes that entry off again."""
    key = ("sys.path", path)
    _checked(owner)
    with _lock:
        existing = _changes.get(key)
        if existing is not None:
            return existing
        sys.path.insert(0, path)

        def undo() -> None:
            with contextlib.suppress(ValueError):
                sys.path.remove(path)

        return _record(key, f"sys.path[{path}]", "sys.path", owner, reason, undo)


def add_logging_filter(
    target: logging.Logger | logging.Handler, log_filter: logging.Filter, *, owner: Owner, reason: str, label: str
) -> Change:
    """Add `log_filter` to a logger or handler (`label` names it for people); undoing removes it."""
    key = ("logging filter", id(target), id(log_filter))
    _checked(owner)
    with _lock:
        existing = _changes.get(key)
        if existing is not None:
            return existing
        target.addFilter(log_filter)
        return _record(
            key,
            f"{label} filter {type(log_filter).__name__}",
            "logging filter",
            owner,
            reason,
            lambda: target.removeFilter(log_filter),
        )


def filter_warnings(action: str, *, owner: Owner, reason: str, **criteria: Any) -> Change:
    """`warnings.filterwarnings(action, **criteria)`; undoing removes that filter again (filters added since stay).
    A filter equal to one already there (Python's own `ignore::DeprecationWarning`) is moved to the front, as
    `filterwarnings` does; undoing puts it back where it was."""
    key = ("warnings filter", action, tuple(sorted((name, repr(value)) for name, value in criteria.items())))
    _checked(owner)
    with _lock:
        existing = _changes.get(key)
        if existing is not None:
            return existing
        before = list(warnings.filters)
        warnings.filterwarnings(action, **criteria)
        added = warnings.filters[0]
        was_at = before.index(added) if added in before else None

        def undo() -> None:
            with contextlib.suppress(ValueError):
                warnings.filters.remove(added)
            if was_at is not None:
                warnings.filters.insert(was_at, added)
            # Warnings already let through or ignored are remembered until the filters change (stdlib's own hook)
            mutated = getattr(warnings, "_filters_mutated", None) or warnings._filters_mutated_lock_held
            mutated()

        described = ", ".join(f"{name}={value!r}" for name, value in criteria.items())
        return _record(key, f"warnings filter {action}({described})", "warnings filter", owner, reason, undo)


def in_force(owner: Owner | None = None) -> list[Change]:
    """The changes in force, oldest first (those of `owner` alone, when given)."""
    with _lock:
        return [change for change in _changes.values() if owner is None or change.owner == owner]


def describe() -> str:
    """The changes in force, for people: one line each, grouped by the part of the package that made them."""
    current = in_force()
    if not current:
        return "npu_bridge_compat changes nothing in this process."
    reversible = sum(not change.irreversible for change in current)
    lines = [
        f"npu_bridge_compat changes in this process ({len(current)}; npu_bridge_compat.changes.undo() undoes "
        f"{reversible} of them, the rest are irreversible):"
        if reversible < len(current)
        else f"npu_bridge_compat changes in this process ({len(current)}; npu_bridge_compat.changes.undo() undoes "
        "them):"
    ]
    for owner in dict.fromkeys(change.owner for change in current):
        lines.append(f"  {owner}:")
        lines += [
            f"    {change.target} ({change.kind}): {change.reason}" for change in current if change.owner == owner
        ]
    return "\n".join(lines)


def mark() -> int:
    """A point to undo back to: `undo(since=mark())` undoes the changes made after it."""
    return _count[0]


def undo(*, owner: Owner | None = None, since: int = 0, changes: list[Change] | None = None) -> list[Change]:
    """Undo changes, newest first: those given, those of `owner`, or all made after `since`; returns them.
    Irreversible changes stay in force. Every undo is tried; where some fail, an UndoError names them after the
    others were undone."""
    with _lock:
        ordered = [change for change in _changes.values() if not change.irreversible]
        if changes is not None:
            chosen = [change for change in ordered if any(change is given for given in changes)]
        else:
            chosen = [
                change for change in ordered if _made[change._key] >= since and (owner is None or change.owner == owner)
            ]
        failures = []
        for change in reversed(chosen):
            try:
                change._undo()
            except Exception as error:  # noqa: BLE001 - every other change must still be undone
                failures.append(f"{change.target} ({change.owner}): {type(error).__name__}: {error}")
            del _changes[change._key]
            del _made[change._key]
            if change.kind == "attribute":
                _attributes.pop(change._key[1:], None)
        if failures:
            raise UndoError("these changes could not be undone (the others were): " + "; ".join(failures))
        return chosen


@contextlib.contextmanager
def undone_after() -> Iterator[None]:
    """Undo whatever is changed inside the block when it ends (tests start each case clean with it)."""
    start = mark()
    try:
        yield
    finally:
        undo(since=start)
