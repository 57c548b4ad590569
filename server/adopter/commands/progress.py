"""A one-line progress bar on stderr for `check` and `fix`: only on a terminal, only after a second.

Nothing is drawn when stderr is not a terminal (CI logs, `2> file`, an editor's task), when `--quiet` is
given, or before the run has taken `DELAY_S`; the line is erased when the run ends, so what the command
prints is the same with or without it (with `--format json > out` the bar still shows on the terminal).
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

DELAY_S = 1.0  # runs shorter than this draw nothing
REDRAW_S = 0.1  # at most ten redraws a second
WIDTH = 30  # characters of the bar itself


class Progress:
    """Counts files done out of `total`; draws `[#####.....] 12/40 files` when allowed."""

    def __init__(self, total: int, *, enabled: bool, stream: TextIO | None = None) -> None:
        self.total = total
        self.done = 0
        self.stream = stream or sys.stderr
        self.enabled = enabled and total > 0
        self.start = time.monotonic()
        self._drawn = 0.0  # when the line was last drawn (0: never)

    @staticmethod
    def wanted(quiet: bool) -> bool:
        """Whether a bar may be drawn: not `--quiet`, and stderr a terminal."""
        return not quiet and _tty(sys.stderr)

    def advance(self, n: int = 1) -> None:
        self.done += n
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.start < DELAY_S or now - self._drawn < REDRAW_S:
            return
        filled = WIDTH * self.done // self.total
        self.stream.write(f"\r[{'#' * filled}{'.' * (WIDTH - filled)}] {self.done}/{self.total} files")
        self.stream.flush()
        self._drawn = now

    def close(self) -> None:
        """Erase the line, if one was drawn."""
        if self._drawn:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self._drawn = 0.0


def _tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
