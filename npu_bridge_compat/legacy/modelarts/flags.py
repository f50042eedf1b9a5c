"""moxing's flags (`mox.set_flag`, `mox.get_flag`), which tune its training framework only."""

from __future__ import annotations

from typing import Any

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner

FLAG_VALUES = changes.ProcessState("the moxing flags the program set (mox.set_flag)", Owner.MODELARTS_WORLD, dict)


def set_flag(name: str, value: Any) -> None:
    """Keep `value` for flag `name`."""
    changes.state(FLAG_VALUES)[name] = value


def get_flag(name: str) -> Any:
    """The value the program set for flag `name`; KeyError naming the flags set where it set none."""
    values = changes.state(FLAG_VALUES)
    if name not in values:
        raise KeyError(f"mox.get_flag({name!r}): the program set no such flag (set: {sorted(values)})")
    return values[name]
