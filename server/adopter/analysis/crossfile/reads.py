"""Which other files an analysis read: what a result kept across runs (`adopter check`'s cache) depends on.

The analysis reads other files to resolve base classes (`ModuleResolver.symbols`) and imported layers
(`CrossFileReach`). While `recording()` is active (on one thread: the CLI's), each such read, whether
it hit an in-process cache or not, adds the file to the innermost set. Off, it costs one list test.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

_STACK: list[set[str]] = []


def active() -> bool:
    """Whether reads are being recorded (in-process caches whose hits hide reads must then be bypassed)."""
    return bool(_STACK)


def note(paths: Iterable[str]) -> None:
    """Record that the current analysis read `paths`."""
    if _STACK:
        _STACK[-1].update(paths)


@contextmanager
def recording() -> Iterator[set[str]]:
    """Collect the files read inside the block into the set it yields."""
    read: set[str] = set()
    _STACK.append(read)
    try:
        yield read
    finally:
        _STACK.pop()
