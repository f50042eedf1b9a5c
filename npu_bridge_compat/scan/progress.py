"""A one-line progress bar on stderr while a large tree is read (only on a terminal: logs and pipes stay clean)."""

from __future__ import annotations

import sys
import time
from typing import TextIO

LARGE_TREE = 500  # files; smaller trees are read before a bar would be worth drawing


class ProgressBar:
    """Called with (files done, files in all) after each file; draws at most every `interval` seconds."""

    def __init__(
        self, stream: TextIO | None = None, width: int = 30, interval: float = 0.1, terminal_only: bool = True
    ) -> None:
        self.stream = stream or sys.stderr
        self.width = width
        self.interval = interval
        self.enabled = not terminal_only or self.stream.isatty()
        self._drawn_at = 0.0
        self._drawn = False

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if not self.enabled or total < LARGE_TREE or (done < total and now - self._drawn_at < self.interval):
            return
        self._drawn_at = now
        self._drawn = True
        filled = self.width * done // total
        self.stream.write(f"\rscan [{'#' * filled}{'.' * (self.width - filled)}] {done}/{total} files")
        self.stream.flush()

    def close(self) -> None:
        if self._drawn:  # leave the terminal line as it was
            self.stream.write("\r" + " " * (self.width + 40) + "\r")
            self.stream.flush()
