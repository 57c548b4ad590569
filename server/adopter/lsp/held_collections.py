"""The cyclic garbage collector's young collections held off while a keystroke is analysed, run once it is published.

A keystroke's analysis leaves no reference cycles (`tests/session/test_no_garbage_cycles.py`), so the collections
that fire during it free nothing (T5, the LSP bench's 200 edits: 34 young and 3 middle collections, 0 objects
collected) and cost 0.2 ms (young, median) to 1–2 ms (middle) each, landing on the keystrokes that allocate the
most: the slowest. While held, the young threshold is `HELD_YOUNG`; once the keystroke's diagnostics are out it is
set back, so the collector runs at the next allocation by its usual rules, over what the keystroke left: off the
keystroke's path, and cheaper (the keystroke's temporaries are freed by then instead of promoted). What the analysis
computes does not depend on when the collector runs.
"""

from __future__ import annotations

import gc
import threading

__all__ = ["HELD_YOUNG", "HeldCollections"]

# Net new containers allowed before a young collection while a keystroke is held: a T5 keystroke makes up to ~2,400
# (p95 ~1,100; the bench's 200 edits), so none collects; a pasted file may make a hundred times that and still collects
# every `HELD_YOUNG`, which bounds what a held run can add to the heap.
HELD_YOUNG = 50_000


class HeldCollections:
    """Raise the young threshold while keystrokes are in flight (`hold`), restore it once they are published
    (`release`). Only a threshold this object set is restored: another part of the process that changed it meanwhile
    (`analysis.crossfile.jedi_lookup` turns collections off around its pickle loads) keeps its own."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._young: int | None = None  # the threshold to restore; None when not held

    @property
    def held(self) -> bool:
        """Whether a keystroke holds the young collections now."""
        return self._young is not None

    def hold(self) -> None:
        """Hold the young collections (the event loop calls it when a change arrives); idempotent."""
        with self._lock:
            young, middle, old = gc.get_threshold()
            if self._young is None and young < HELD_YOUNG:
                self._young = young
                gc.set_threshold(HELD_YOUNG, middle, old)

    def release(self) -> None:
        """Let the collector run again by its usual rules (after the keystroke's diagnostics are sent)."""
        with self._lock:
            restore, self._young = self._young, None
            young, middle, old = gc.get_threshold()
            if restore is not None and young == HELD_YOUNG:
                gc.set_threshold(restore, middle, old)
