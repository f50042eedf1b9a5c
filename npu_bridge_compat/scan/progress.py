"""A one-line progress bar on stderr while a large tree is read or its scripts are tried (only on a terminal:
logs and pipes stay clean)."""

from __future__ import annotations

import sys
import time
from typing import TextIO

LARGE_TREE = 500  # files; smaller trees are read before a bar would be worth drawing


class ProgressBar:
    """Called with (items done, items in all) after each item; draws at most every `interval` seconds, once there
    are at least `minimum` items."""

    def __init__(
        self,
        stream: TextIO | None = None,
        width: int = 30,
        interval: float = 0.1,
        terminal_only: bool = True,
        unit: str = "files",
        minimum: int = LARGE_TREE,
    ) -> None:
        self.stream = stream or sys.stderr
        self.unit = unit
        self.minimum = minimum
        self.width = width
        self.interval = interval
        self.enabled = not terminal_only or self.stream.isatty()
        self._drawn_at = 0.0
        self._drawn = False

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if not self.enabled or total < self.minimum or (done < total and now - self._drawn_at < self.interval):
            return
        self._drawn_at = now
        self._drawn = True
        filled = self.width * done // total
        self.stream.write(f"\rscan [{'#' * filled}{'.' * (self.width - filled)}] {done}/{total} {self.unit}")
        self.stream.flush()

    def close(self) -> None:
        if self._drawn:  # leave the terminal line as it was
            self.stream.write("\r" + " " * (self.width + 40) + "\r")
            self.stream.flush()
