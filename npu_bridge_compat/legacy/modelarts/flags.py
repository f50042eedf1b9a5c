"""moxing's flags (`mox.set_flag`, `mox.get_flag`), which tune its training framework only."""

from __future__ import annotations

from typing import Any


class MoxFlags:
    """The flags the program set, read back by `get_flag`."""

    def __init__(self) -> None:
        self._values: dict[str, Any] = {}

    def set_flag(self, name: str, value: Any) -> None:
        """Keep `value` for flag `name`."""
        self._values[name] = value

    def get_flag(self, name: str) -> Any:
        """The value the program set for flag `name`; KeyError naming the flags set where it set none."""
        if name not in self._values:
            raise KeyError(f"mox.get_flag({name!r}): the program set no such flag (set: {sorted(self._values)})")
        return self._values[name]
