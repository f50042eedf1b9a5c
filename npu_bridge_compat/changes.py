"""The one registry of every change npu_bridge_compat makes outside its own objects.

An attribute of TensorFlow, Keras, Estimator or a user's object replaced, an import finder on `sys.meta_path`, a
`sys` or `builtins` hook, an environment variable: each is made here, by the door or command that needs it, and
recorded as a `Change` (what, why, which part of the package asked). Making the same change again is a no-op, so
doors need no flags of their own; `in_force()` lists what holds now (`python -m npu_bridge_compat explain
--changes` prints it) and `undo()` puts the process back, newest first, as pytest's monkeypatch does. Importing
npu_bridge_compat changes nothing: a user who uses none of it keeps the process as it was.

The registry only records and restores; what each change does and why lives with the code that asks for it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

_MISSING = object()  # an attribute or variable that did not exist before the change


@dataclass(frozen=True)
class Change:
    """One change in force: `target` is what was changed, as a user would name it (`tensorflow.function`,
    `sys.meta_path`, `$TF_XLA_FLAGS`, `<user's Adam>.apply_gradients`)."""

    target: str
    kind: str  # "attribute", "environment", "import finder" or "context"
    owner: str  # the part of the package that asked for it (a door, a world, a command)
    reason: str
    _undo: Callable[[], None] = field(repr=False, compare=False)
    _key: tuple = field(repr=False, compare=False)

    def describe(self) -> str:
        return f"{self.target} ({self.kind}, by {self.owner}): {self.reason}"


_lock = threading.RLock()
_changes: dict[tuple, Change] = {}  # in the order they were made
_made: dict[tuple, int] = {}  # each change's number, counting every change this process made
_count = [0]
# Attributes replaced, by (id(target), name): the value set here and what `target.name` gave before.
_attributes: dict[tuple[int, str], tuple[Any, Any]] = {}


def _name_of(target: Any) -> str:
    if isinstance(target, type(sys)):
        return target.__name__
    if isinstance(target, type):
        return f"{target.__module__}.{target.__qualname__}"
    return f"<{type(target).__name__} object at {id(target):#x}>"


def replace_attribute(
    target: Any, name: str, value: Any, *, owner: str, reason: str, label: str | None = None
) -> Change:
    """Set `target.name = value`, remembering what was there (or that nothing was) so that undoing restores it.
    Replacing an attribute this registry already replaced with the same value is a no-op; with another value it
    is refused: two parts of the package would be fighting over one attribute."""
    key = ("attribute", id(target), name)
    with _lock:
        existing = _changes.get(key)
        if existing is not None:
            current = _attributes[(id(target), name)][0]
            if current is not value:
                raise RuntimeError(f"{existing.target} was already replaced by {existing.owner}; {owner} asked again")
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


def set_environment(name: str, value: str, *, owner: str, reason: str) -> Change:
    """Set environment variable `name`; undoing gives it back its earlier value (or removes it). Setting it again
    to another value updates it and keeps the first original."""
    key = ("environment", name)
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


def _record(key: tuple, target: str, kind: str, owner: str, reason: str, undo: Callable[[], None]) -> Change:
    change = Change(target, kind, owner, reason, undo, key)
    _changes[key] = change
    _made[key] = _count[0]
    _count[0] += 1
    return change


def add_import_finder(finder: Any, *, owner: str, reason: str, packages: tuple[str, ...] = ()) -> Change:
    """Put `finder` first on `sys.meta_path`; undoing takes it off and forgets the modules of `packages` (the
    ones it serves) that were imported meanwhile, so that importing them again goes through the import system."""
    key = ("finder", id(finder))
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

        return _record(key, f"sys.meta_path[{type(finder).__name__}]", "import finder", owner, reason, undo)


def enter(context: contextlib.AbstractContextManager, target: str, *, owner: str, reason: str) -> Change:
    """Enter `context` (a library's own way to change something, such as a profiler trace or the calling thread's
    function-call options) and keep it entered until undone; entering the same `target` again is a no-op."""
    key = ("context", target)
    with _lock:
        existing = _changes.get(key)
        if existing is not None:
            return existing
        context.__enter__()
        return _record(key, target, "context", owner, reason, lambda: context.__exit__(None, None, None))


def in_force(owner: str | None = None) -> list[Change]:
    """The changes in force, oldest first (those of `owner` alone, when given)."""
    with _lock:
        return [change for change in _changes.values() if owner is None or change.owner == owner]


def describe() -> str:
    """The changes in force, for people: one line each, grouped by the part of the package that made them."""
    current = in_force()
    if not current:
        return "npu_bridge_compat changes nothing in this process."
    lines = [
        f"npu_bridge_compat changes in this process ({len(current)}; npu_bridge_compat.changes.undo() undoes them):"
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


def undo(*, owner: str | None = None, since: int = 0, changes: list[Change] | None = None) -> list[Change]:
    """Undo changes, newest first: those given, those of `owner`, or all made after `since`; returns them."""
    with _lock:
        ordered = list(_changes.values())
        if changes is not None:
            chosen = [change for change in ordered if any(change is given for given in changes)]
        else:
            chosen = [
                change for change in ordered if _made[change._key] >= since and (owner is None or change.owner == owner)
            ]
        for change in reversed(chosen):
            change._undo()
            del _changes[change._key]
            del _made[change._key]
            if change.kind == "attribute":
                _attributes.pop(change._key[1:], None)
        return chosen


@contextlib.contextmanager
def undone_after() -> Iterator[None]:
    """Undo whatever is changed inside the block when it ends (tests start each case clean with it)."""
    start = mark()
    try:
        yield
    finally:
        undo(since=start)
