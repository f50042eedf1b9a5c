"""Applying the process-wide part of a plan: environment variables that TensorFlow reads.

Grappler reads its mixed-precision lists (and XLA its flags) from the environment each time it optimises a
graph, for the whole process. They are set here, in one place, and a second configuration that needs other
values in the same process is refused, since the first one's graphs would silently change.
"""

from __future__ import annotations

import contextlib
import os
import threading
from typing import Iterator

from npu_bridge_compat.errors import NpuCompatWarning, NpuOptionValueError, warn

# Variables holding space-separated flags: ours are added to what the user already set.
FLAG_VARIABLES = ("TF_XLA_FLAGS", "XLA_FLAGS")

_lock = threading.Lock()
_applied: dict[str, tuple[str, str]] = {}  # variable -> (value we set, source of the configuration)


def apply_environment(plan) -> None:
    """Set the plan's environment variables; refuse values that contradict an earlier configuration's."""
    with _lock:
        for name, value in plan.environment.items():
            previous = _applied.get(name)
            if previous and previous[0] != value:
                raise NpuOptionValueError(
                    f"{plan.options.source} needs {name}={value!r}, but {previous[1]} already set it to "
                    f"{previous[0]!r} in this process. Grappler reads it process-wide, so two configurations "
                    "with different values cannot be used in one process.")
        for name, value in plan.environment.items():
            if name in FLAG_VARIABLES and value not in os.environ.get(name, "").split():
                os.environ[name] = f"{os.environ.get(name, '')} {value}".strip()
            elif name not in FLAG_VARIABLES:
                os.environ[name] = value
            _applied[name] = (value, plan.options.source)


@contextlib.contextmanager
def applied_environment(plan) -> Iterator[None]:
    """The plan's environment for the duration of a block (a Keras fit), restored afterwards."""
    saved = {name: os.environ.get(name) for name in plan.environment}
    apply_environment(plan)
    try:
        yield
    finally:
        with _lock:
            for name, value in saved.items():
                _applied.pop(name, None)
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


_warned_unapplied: set[tuple[str, str]] = set()


def warn_unapplied(plan, door: str, applied: tuple[type, ...]) -> None:
    """Say, once per door and feature kind, which planned host effects this door does not carry out yet."""
    for feature in plan.features:
        key = (door, type(feature).__name__)
        if not isinstance(feature, applied) and key not in _warned_unapplied:
            _warned_unapplied.add(key)
            warn(f"{door} does not apply {type(feature).__name__} yet ({feature}); the report lists it as planned, "
                 "but it has no effect through this door.", NpuCompatWarning)
