"""The one registry of every change npu_bridge_compat makes outside its own objects.

An attribute of TensorFlow, Keras, Estimator or a user's object replaced, an import finder on `sys.meta_path`, an
entry of `sys.path`, an exit handler, a logging or warnings filter, a TensorFlow process setting, an environment
variable: each is made here, by the door or command that needs it, and recorded as a `Change` (what, of which
`ChangeKind`, why, which part of the package asked: an `Owner`). `in_force()` lists what holds now (`python -m
npu_bridge_compat explain --changes` prints it) and `undo()` puts the process back, newest first, as pytest's
monkeypatch does. What cannot be put back (a device setting once TensorFlow's context started) is recorded as
irreversible: listed, and left in force by `undo()`. Importing npu_bridge_compat changes nothing: a user who uses
none of it keeps the process as it was.

One rule holds for a repeated request, in every kind: the same owner asking for the same value gets back the change
already made (so doors need no flags of their own); another value, or another owner, is a `ChangeConflict` naming
both. Two requests are shaped for what the package needs beyond it: `for_the_call` makes a change for the length
of a block, nested over a lasting one and giving its value back at the end; `add_to_environment_list` is a
variable several owners add items to, one change that names them all and undoes each one's part. Undoing a key
puts back what was there before its first change.

The registry also keeps the package's process-wide state (`ProcessState`: what it has warned about, decided,
met, the groups it created): `state(key)` gives the one value of a key, made on first use, and `forget_state`
drops it, so that no module keeps a mutable global and a test starts a part afresh without touching its module.

The process's registry is one `Registry`, `process_registry`, which the module-level functions use; a test makes a
registry of its own. The registry only records and restores; what each change does and why lives with the code
that asks for it.
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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

NOTHING: Any = object()  # what an attribute or variable held where it did not exist


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
    TIMED_TRIALS = "timed trials"
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
    KERAS2_WORLD = "the standalone Keras 2.2 world"
    ERA_WORLD = "the ports' NumPy and Python era"
    MODELARTS_WORLD = "the ModelArts world (moxing)"
    PROGRAM_IMPORTS = "the program's imports"
    TF_SLIM_NAMES = "tf_slim's names (the TF 1.15 and TF 2.6 worlds)"
    TF1_BEHAVIOUR = "TF1 behaviour (the TF 1.15 world, npu_device.compat.enable_v1)"

    def __str__(self) -> str:
        return self.value


class ChangeKind(str, enum.Enum):
    """What a change changes; its value is its name in words (`ChangeKind.IMPORT_FINDER` is "import finder")."""

    def _generate_next_value_(name: str, start: int, count: int, last_values: list) -> str:
        return name.lower().replace("_", " ")

    ATTRIBUTE = enum.auto()
    ENVIRONMENT = enum.auto()
    ENVIRONMENT_LIST = enum.auto()
    IMPORT_FINDER = enum.auto()
    CONTEXT = enum.auto()
    SETTING = enum.auto()
    IRREVERSIBLE = enum.auto()
    EXIT_HANDLER = enum.auto()
    SYS_PATH = "sys.path"
    LOGGING_FILTER = enum.auto()
    WARNINGS_FILTER = enum.auto()

    def __str__(self) -> str:
        return self.value


class ChangeConflict(RuntimeError):
    """Two requests for one thing that cannot both hold: another value, or another owner."""


class UndoError(RuntimeError):
    """Some changes could not be undone; every other change was."""


@dataclass(frozen=True)
class _Part:
    """One owner's request within a change: most changes have one; a list several owners add to has one each."""

    owner: Owner
    asked: Any  # what was asked for: the value set, the context's value, the finder, the items added
    reason: str
    number: int  # counting every request the registry granted, for `mark()` and the order of undoing


class Change:
    """One change in force: `target` is what was changed, as a user would name it (`tensorflow.function`,
    `sys.meta_path`, `$TF_XLA_FLAGS`, `<user's Adam>.apply_gradients`)."""

    def __init__(self, target: str, kind: ChangeKind, key: tuple, *, before: Any, nested: bool) -> None:
        self.target = target
        self.kind = kind
        self.nested = nested  # made for the length of a call (`for_the_call`)
        self._key = key
        self._undo: Callable[[], None] | None = None  # puts back what was there before; None: irreversible
        # sets the value the parts still in force make (a list several owners add to)
        self._reapply: Callable[[list[_Part]], None] | None = None
        self._before = before  # what an attribute gave before the change (`original`)
        self._parts: list[_Part] = []  # in force
        self._first: _Part | None = None

    @property
    def owner(self) -> Owner:
        """The owner that made the change."""
        return self._first.owner

    @property
    def owners(self) -> tuple[Owner, ...]:
        """Every owner with a part in force, the first first."""
        return tuple(dict.fromkeys(part.owner for part in self._parts))

    @property
    def reason(self) -> str:
        return "; ".join(dict.fromkeys(part.reason for part in self._parts or [self._first]))

    @property
    def irreversible(self) -> bool:
        return self._undo is None

    def describe(self) -> str:
        return f"{self.target} ({self.kind}, by {', '.join(map(str, self.owners))}): {self.reason}"

    def __repr__(self) -> str:
        return f"<Change {self.describe()}>"


def _checked(owner: Owner) -> Owner:
    if not isinstance(owner, Owner):
        raise TypeError(f"owner must be a changes.Owner, not {owner!r}")
    return owner


def _same(first: Any, second: Any) -> bool:
    """Whether two requested values are the same: the same object, or equal values."""
    if first is second:
        return True
    try:
        return bool(first == second)
    except Exception:  # noqa: BLE001 - values without a truth for ==, such as arrays, count as different
        return False


def _name_of(target: Any) -> str:
    if isinstance(target, type(sys)):
        return target.__name__
    if isinstance(target, type):
        return f"{target.__module__}.{target.__qualname__}"
    return f"<{type(target).__name__} object at {id(target):#x}>"


def _attribute_undo(target: Any, name: str, held: Any, untracked: bool = False) -> Callable[[], None]:
    """What puts `target.name` back to `held` (deleting it where `held` is NOTHING), past the class's own
    __setattr__ / __delattr__ where `untracked`."""
    set_attribute, delete_attribute = (object.__setattr__, object.__delattr__) if untracked else (setattr, delattr)

    def undo() -> None:
        if held is NOTHING:
            with contextlib.suppress(AttributeError):
                delete_attribute(target, name)
        else:
            set_attribute(target, name, held)

    return undo


def _environment_restore(name: str, before: str) -> None:
    if before is NOTHING:
        os.environ.pop(name, None)
    else:
        os.environ[name] = before


def _list_value(before: str, parts: list[_Part], separator: str) -> str:
    """The variable's items as they were, then each part's items not there yet."""
    items = [item for item in ("" if before is NOTHING else before).split(separator) if item.strip()]
    for part in parts:
        items += [item for item in part.asked if item not in items]
    return separator.join(items)


@dataclass(frozen=True, eq=False)
class ProcessState:
    """A key to a piece of process-wide state a part of the package keeps (a set, a dict, a list, an object):
    `state(key)` gives its value, made by `make` on first use. Compared by identity: each key is one constant."""

    name: str
    owner: Owner
    make: Callable[[], Any]


class Registry:
    """The changes made in one process, in the order they were made, with what undoes each, and the package's
    process-wide state (ProcessState)."""

    def __init__(self) -> None:
        self._states: dict[ProcessState, Any] = {}
        self._lock = threading.RLock()
        self._in_force: dict[int, Change] = {}  # by id, in the order they were made
        self._lasting: dict[tuple, Change] = {}  # key -> the lasting change of it
        self._nested: dict[tuple, list[Change]] = {}  # key -> the changes for a call over it, innermost last
        self._count = 0
        self._nesting = threading.local()  # whether this thread's request is for the length of a call

    # --- the one rule ------------------------------------------------------------------------------------------

    def _request(
        self,
        key: tuple,
        kind: ChangeKind,
        target: str,
        owner: Owner,
        reason: str,
        asked: Any,
        apply: Callable[[], Callable[[], None] | None],
        before: Callable[[], Any] | None = None,
    ) -> Change:
        """The change `key` under the one rule: the same owner and value give back the change in force; another
        owner or value is a ChangeConflict; else `apply()` makes it and returns what undoes it (None where nothing
        can). Inside `for_the_call` the change nests over one in force instead."""
        _checked(owner)
        with self._lock:
            nested, self._nesting.on = getattr(self._nesting, "on", False), False  # `for_the_call`'s request only
            if not nested:
                held = self._holder(key)
                if held is not None:
                    return self._granted_again(held, owner, asked)
            change = Change(target, kind, key, before=NOTHING if before is None else before(), nested=nested)
            change._undo = apply()
            self._add_part(change, owner, asked, reason)
            self._in_force[id(change)] = change
            if nested:
                self._nested.setdefault(key, []).append(change)
            else:
                self._lasting[key] = change
            return change

    def _holder(self, key: tuple) -> Change | None:
        """The change that holds `key`: the lasting one, else the innermost made for a call."""
        return self._lasting.get(key) or (self._nested.get(key) or [None])[-1]

    def _granted_again(self, held: Change, owner: Owner, asked: Any) -> Change:
        part = next((part for part in held._parts if part.owner is owner), held._parts[0])
        if part.owner is owner and _same(part.asked, asked) and not held.nested:
            return held
        raise ChangeConflict(
            f"{held.target}: {part.owner} set it to {part.asked!r}"
            f"{' for the length of a call' if held.nested else ''}; {owner} asked for {asked!r}. Both cannot hold "
            "in one process"
        )

    def _add_part(self, change: Change, owner: Owner, asked: Any, reason: str) -> None:
        change._parts.append(_Part(owner, asked, reason, self._count))
        change._first = change._first or change._parts[-1]
        self._count += 1

    @contextlib.contextmanager
    def for_the_call(self, make: Callable[..., Change], *arguments: Any, **keywords: Any) -> Iterator[Change]:
        """Make a change for the length of the block (`with registry.for_the_call(registry.set_environment, NAME,
        value, owner=..., reason=...):`) and undo it when the block ends. Where a change holds the same thing, of
        any owner and value, this one nests over it instead of conflicting: at the end the value it set comes back,
        and undoing it still puts back what was there before its first change."""
        if getattr(make, "__self__", None) is not self:
            raise TypeError(f"for_the_call makes a change through this registry's own methods, not {make!r}")
        self._nesting.on = True
        try:
            change = make(*arguments, **keywords)
        finally:
            self._nesting.on = False
        try:
            yield change
        finally:
            self.undo(changes=[change])

    # --- the kinds of change -----------------------------------------------------------------------------------

    def replace_attribute(
        self,
        target: Any,
        name: str,
        value: Any,
        *,
        owner: Owner,
        reason: str,
        label: str | None = None,
        untracked: bool = False,
    ) -> Change:
        """Set `target.name = value`, remembering what was there (or that nothing was) so that undoing restores
        it. `untracked`: set and put back past the class's own __setattr__ / __delattr__ (a Keras model tracks
        what it holds, which makes each assignment costly; a function it holds for the length of one call needs
        none of that, and the model's own tracking stays as it was)."""

        def apply() -> Callable[[], None]:
            # Undo gives back what the object itself held; an attribute it only inherited (from its class, a base
            # class) is deleted again rather than copied onto it. An instance's __class__ is its type, and a
            # property (Keras' jit_compile, steps_per_execution) is set back through its setter.
            own = getattr(target, "__dict__", None)
            through_setter = not isinstance(target, type) and hasattr(getattr(type(target), name, None), "__set__")
            if own is None or name == "__class__" or through_setter:
                held = getattr(target, name, NOTHING)
            else:
                held = own.get(name, NOTHING)
            (object.__setattr__ if untracked else setattr)(target, name, value)
            # The target is kept alive by the undo closure, so id(target) stays unique while the change is in force.
            return _attribute_undo(target, name, held, untracked)

        return self._request(
            (ChangeKind.ATTRIBUTE, id(target), name),
            ChangeKind.ATTRIBUTE,
            f"{label or _name_of(target)}.{name}",
            owner,
            reason,
            value,
            apply,
            before=lambda: getattr(target, name, NOTHING),
        )

    def record_library_rewrites(
        self, before: dict[tuple[type, str], Any], *, owner: Owner, reason: str
    ) -> list[Change]:
        """Record what a library rewrote in classes while the package loaded it for a program (tensorflow-estimator
        wraps the constructors of TensorFlow classes it exports in deprecation notices): `before` maps (class,
        name) to what the class itself held before (`NOTHING` where it held nothing). Each attribute that now
        holds something else, and that no change holds, becomes a change of `owner`, so that undoing puts the
        class back as it was."""
        made = []
        with self._lock:
            for (target, name), held in before.items():
                value = target.__dict__.get(name, NOTHING)
                if value is held or self.is_replaced(target, name):
                    continue
                made.append(
                    self._request(
                        (ChangeKind.ATTRIBUTE, id(target), name),
                        ChangeKind.ATTRIBUTE,
                        f"{_name_of(target)}.{name}",
                        owner,
                        reason,
                        value,
                        lambda target=target, name=name, held=held: _attribute_undo(target, name, held),
                        before=lambda held=held: held,
                    )
                )
        return made

    def set_environment(self, name: str, value: str, *, owner: Owner, reason: str) -> Change:
        """Set environment variable `name`; undoing gives it back its earlier value (or removes it)."""

        def apply() -> Callable[[], None]:
            before = os.environ.get(name, NOTHING)
            os.environ[name] = value
            return lambda: _environment_restore(name, before)

        return self._request(
            (ChangeKind.ENVIRONMENT, name), ChangeKind.ENVIRONMENT, f"${name}", owner, reason, value, apply
        )

    def add_to_environment_list(
        self, name: str, items: Sequence[str], *, owner: Owner, reason: str, separator: str = " "
    ) -> Change:
        """Add `items` to environment variable `name`, a list of items split by `separator` (TF_XLA_FLAGS):
        several owners may add to it, as one change that names them all; the items already there stay where
        they are. Undoing an owner's part takes its items off again; undoing the last part puts back what the
        variable held before. An owner adds one part: other items again are a ChangeConflict."""
        key = (ChangeKind.ENVIRONMENT, name)
        items = tuple(items)
        with self._lock:
            held = self._holder(key)
            joining = held is not None and held.kind is ChangeKind.ENVIRONMENT_LIST and not held.nested
            if joining and _checked(owner) not in held.owners and not getattr(self._nesting, "on", False):
                self._add_part(held, owner, items, reason)
                held._reapply(held._parts)
                return held
            before = os.environ.get(name, NOTHING)

            def apply() -> Callable[[], None]:
                os.environ[name] = _list_value(before, [_Part(owner, items, reason, 0)], separator)
                return lambda: _environment_restore(name, before)

            change = self._request(key, ChangeKind.ENVIRONMENT_LIST, f"${name}", owner, reason, items, apply)
            if change._reapply is None:  # made now
                change._reapply = lambda parts: os.environ.__setitem__(name, _list_value(before, parts, separator))
            return change

    def add_import_finder(
        self,
        finder: Any,
        *,
        owner: Owner,
        reason: str,
        packages: tuple[str, ...] = (),
        forget: Callable[[], None] | None = None,
    ) -> Change:
        """Put `finder` first on `sys.meta_path`; undoing takes it off and forgets the modules of `packages` (the
        ones it serves) that were imported meanwhile, so that importing them again goes through the import system.
        A finder whose trees it shares with today's modules names no packages and gives `forget`, which takes out
        of `sys.modules` the modules it created itself."""

        def apply() -> Callable[[], None]:
            sys.meta_path.insert(0, finder)

            def undo() -> None:
                if finder in sys.meta_path:
                    sys.meta_path.remove(finder)
                served = [name for name in sys.modules if any(name == p or name.startswith(p + ".") for p in packages)]
                for name in served:
                    del sys.modules[name]
                if forget is not None:
                    forget()

            return undo

        target = f"sys.meta_path[{type(finder).__name__}]"
        return self._request(
            (ChangeKind.IMPORT_FINDER, id(finder)), ChangeKind.IMPORT_FINDER, target, owner, reason, finder, apply
        )

    def enter(
        self,
        context: contextlib.AbstractContextManager,
        target: str,
        *,
        owner: Owner,
        reason: str,
        value: Any = None,
    ) -> Change:
        """Enter `context` (a library's own way to change something, such as a profiler trace or the calling
        thread's function-call options) and keep it entered until undone; `value` is what the context sets."""

        def apply() -> Callable[[], None]:
            context.__enter__()
            return lambda: context.__exit__(None, None, None)

        return self._request((ChangeKind.CONTEXT, target), ChangeKind.CONTEXT, target, owner, reason, value, apply)

    def change_setting(
        self,
        target: str,
        value: Any,
        *,
        read: Callable[[], Any],
        write: Callable[[Any], None],
        owner: Owner,
        reason: str,
    ) -> Change:
        """Set a process setting (a TensorFlow switch such as TF32 execution) through its own reader and writer;
        undoing writes back what `read()` gave before."""

        def apply() -> Callable[[], None]:
            before = read()
            write(value)
            return lambda: write(before)

        return self._request((ChangeKind.SETTING, target), ChangeKind.SETTING, target, owner, reason, value, apply)

    def change_irreversibly(
        self, target: str, value: Any, apply: Callable[[], None], *, owner: Owner, reason: str
    ) -> Change:
        """Make a change that cannot be put back (TensorFlow's visible devices or thread pools, which it fixes when
        its context starts): it is listed as irreversible and `undo()` leaves it in force."""

        def applied() -> None:
            apply()

        return self._request(
            (ChangeKind.IRREVERSIBLE, target), ChangeKind.IRREVERSIBLE, target, owner, reason, value, applied
        )

    def add_exit_handler(self, function: Callable[[], Any], *, owner: Owner, reason: str, label: str) -> Change:
        """Register `function` to run at interpreter exit (atexit); undoing unregisters it."""

        def apply() -> Callable[[], None]:
            atexit.register(function)
            return lambda: atexit.unregister(function)

        key = (ChangeKind.EXIT_HANDLER, id(function))
        return self._request(key, ChangeKind.EXIT_HANDLER, f"atexit[{label}]", owner, reason, function, apply)

    def add_to_sys_path(self, path: str, *, owner: Owner, reason: str) -> Change:
        """Put `path` first on `sys.path`; undoing takes that entry off again."""

        def apply() -> Callable[[], None]:
            sys.path.insert(0, path)

            def undo() -> None:
                with contextlib.suppress(ValueError):
                    sys.path.remove(path)

            return undo

        return self._request(
            (ChangeKind.SYS_PATH, path), ChangeKind.SYS_PATH, f"sys.path[{path}]", owner, reason, path, apply
        )

    def add_logging_filter(
        self,
        target: logging.Logger | logging.Handler,
        log_filter: logging.Filter,
        *,
        owner: Owner,
        reason: str,
        label: str,
    ) -> Change:
        """Add `log_filter` to a logger or handler (`label` names it for people); undoing removes it."""

        def apply() -> Callable[[], None]:
            target.addFilter(log_filter)
            return lambda: target.removeFilter(log_filter)

        return self._request(
            (ChangeKind.LOGGING_FILTER, id(target), id(log_filter)),
            ChangeKind.LOGGING_FILTER,
            f"{label} filter {type(log_filter).__name__}",
            owner,
            reason,
            log_filter,
            apply,
        )

    def filter_warnings(self, action: str, *, owner: Owner, reason: str, **criteria: Any) -> Change:
        """`warnings.filterwarnings(action, **criteria)`; undoing removes that filter again (filters added since
        stay). A filter equal to one already there (Python's own `ignore::DeprecationWarning`) is moved to the
        front, as `filterwarnings` does; undoing puts it back where it was."""

        def apply() -> Callable[[], None]:
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

            return undo

        asked = (action, tuple(sorted((name, repr(value)) for name, value in criteria.items())))
        described = ", ".join(f"{name}={value!r}" for name, value in criteria.items())
        target = f"warnings filter {action}({described})"
        return self._request(
            (ChangeKind.WARNINGS_FILTER, *asked), ChangeKind.WARNINGS_FILTER, target, owner, reason, asked, apply
        )

    # --- what is in force, and undoing it ----------------------------------------------------------------------

    def is_in_force(self, change: Change) -> bool:
        """Whether `change` has not been undone."""
        return self._in_force.get(id(change)) is change

    def attribute_change(self, target: Any, name: str) -> Change | None:
        """The change in force that replaced `target.name`, or None."""
        return self._holder((ChangeKind.ATTRIBUTE, id(target), name))

    def is_replaced(self, target: Any, name: str) -> bool:
        """Whether this registry replaced `target.name` and the replacement is in force."""
        return self.attribute_change(target, name) is not None

    def original(self, target: Any, name: str) -> Any:
        """What `target.name` was before this registry replaced it (the attribute itself when it was not
        replaced)."""
        change = self._holder((ChangeKind.ATTRIBUTE, id(target), name))
        if change is None or change._before is NOTHING:
            return getattr(target, name)
        return change._before

    # --- process-wide state ------------------------------------------------------------------------------------

    def state(self, key: ProcessState) -> Any:
        """The value `key` holds in this process, made on first use."""
        try:
            return self._states[key]
        except KeyError:
            with self._lock:
                return self._states.setdefault(key, key.make())

    def forget_state(self, *keys: ProcessState, owner: Owner | None = None) -> None:
        """Drop the values of `keys` (of every key of `owner`, or of all, when none are given): the next
        `state(key)` makes a new one, as in a process that has not used that part yet."""
        with self._lock:
            for key in list(keys or self._states):
                if keys or owner in (None, key.owner):
                    self._states.pop(key, None)

    def kept_state(self) -> list[ProcessState]:
        """The keys whose values are kept now, oldest first."""
        return list(self._states)

    def in_force(self, owner: Owner | None = None) -> list[Change]:
        """The changes in force, oldest first (those `owner` has a part in, when given)."""
        with self._lock:
            return [change for change in self._in_force.values() if owner is None or owner in change.owners]

    def describe(self) -> str:
        """The changes in force, for people: one line each, grouped by the parts of the package that made them."""
        current = self.in_force()
        kept = [f"  {key.name} ({key.owner})" for key in self._states]
        state = ["npu_bridge_compat keeps this state in the process:", *kept] if kept else []
        if not current:
            return "\n".join(["npu_bridge_compat changes nothing in this process.", *state])
        reversible = sum(not change.irreversible for change in current)
        undone = f"{reversible} of them, the rest are irreversible" if reversible < len(current) else "them"
        lines = [
            f"npu_bridge_compat changes in this process ({len(current)}; npu_bridge_compat.changes.undo() undoes "
            f"{undone}):"
        ]
        for owners in dict.fromkeys(change.owners for change in current):
            lines.append(f"  {' and '.join(map(str, owners))}:")
            lines += [
                f"    {change.target} ({change.kind}): {change.reason}" for change in current if change.owners == owners
            ]
        return "\n".join(lines + state)

    def mark(self) -> int:
        """A point to undo back to: `undo(since=mark())` undoes the changes made after it."""
        return self._count

    def undo(
        self,
        *,
        owner: Owner | None = None,
        since: int = 0,
        changes: list[Change] | None = None,
        target: str | None = None,
    ) -> list[Change]:
        """Undo changes, newest first: of the changes given (all, without) or of `target`, the parts of `owner`
        (every part, without) made after `since`; returns the changes undone wholly or in part. A change undone
        wholly takes the changes made for a call over it with it. Irreversible changes stay in force. Every undo
        is tried; where some fail, an UndoError names them after the others were undone. An owner that sets a
        thing anew (a value it keeps current) undoes its change of it first: `undo(owner=..., target=...)`."""
        with self._lock:
            chosen: dict[int, list[_Part]] = {}
            # the given changes that are in force (a Keras call undoes its few among many), else every one
            candidates = (
                self._in_force.values()
                if changes is None
                else [given for given in changes if self._in_force.get(id(given)) is given]
            )
            for change in candidates:
                if change.irreversible:
                    continue
                if target is not None and change.target != target:
                    continue
                parts = [part for part in change._parts if part.number >= since and owner in (None, part.owner)]
                if parts:
                    chosen[id(change)] = parts
            for change in [self._in_force[key] for key in chosen]:
                if len(chosen[id(change)]) == len(change._parts) and not change.nested:
                    chosen.update({id(over): over._parts for over in self._nested.get(change._key, [])})
            ordered = sorted(
                (self._in_force[key] for key in chosen),
                key=lambda change: max(part.number for part in chosen[id(change)]),
                reverse=True,
            )
            failures = []
            for change in ordered:
                change._parts = [part for part in change._parts if part not in chosen[id(change)]]
                if not change._parts:
                    self._forget(change)
                try:
                    change._reapply(change._parts) if change._parts else change._undo()
                except Exception as error:  # noqa: BLE001 - every other change must still be undone
                    failures.append(f"{change.target} ({change.owner}): {type(error).__name__}: {error}")
            if failures:
                raise UndoError("these changes could not be undone (the others were): " + "; ".join(failures))
            return ordered

    def _forget(self, change: Change) -> None:
        del self._in_force[id(change)]
        if self._lasting.get(change._key) is change:
            del self._lasting[change._key]
        nested = self._nested.get(change._key, [])
        if change in nested:
            nested.remove(change)
            if not nested:
                del self._nested[change._key]

    @contextlib.contextmanager
    def undone_after(self) -> Iterator[None]:
        """Undo whatever is changed inside the block when it ends (tests start each case clean with it)."""
        start = self.mark()
        try:
            yield
        finally:
            self.undo(since=start)


process_registry = Registry()  # this process's changes: the module-level functions are its methods

replace_attribute = process_registry.replace_attribute
record_library_rewrites = process_registry.record_library_rewrites
set_environment = process_registry.set_environment
add_to_environment_list = process_registry.add_to_environment_list
add_import_finder = process_registry.add_import_finder
enter = process_registry.enter
change_setting = process_registry.change_setting
change_irreversibly = process_registry.change_irreversibly
add_exit_handler = process_registry.add_exit_handler
add_to_sys_path = process_registry.add_to_sys_path
add_logging_filter = process_registry.add_logging_filter
filter_warnings = process_registry.filter_warnings
for_the_call = process_registry.for_the_call
is_in_force = process_registry.is_in_force
attribute_change = process_registry.attribute_change
is_replaced = process_registry.is_replaced
original = process_registry.original
in_force = process_registry.in_force
describe = process_registry.describe
mark = process_registry.mark
undo = process_registry.undo
undone_after = process_registry.undone_after
state = process_registry.state
forget_state = process_registry.forget_state
kept_state = process_registry.kept_state
