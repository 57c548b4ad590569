"""The analysis thread's executor, which knows when it has nothing to do.

`Analyses.run` asks `idle` before a keystroke's run: with no work queued or running on the analysis thread,
the run goes inline on the event loop instead of through the thread (`adopter.lsp.documents`). A hand-off to
the thread and back costs two wake-ups, cheap on an idle machine (~0.1 ms) but several milliseconds each on
a loaded one, where a woken thread waits for a core (docs/notes/lat35.md).

`idle` is exact in the direction that matters: the count goes up before a job is queued and down only after
it finished (its future's done callback, which runs after the result is set), so while anything is queued or
running `idle` is False; right after a job ends it may still read False for a moment (the caller then uses
the thread, as it always did).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


class AnalysisExecutor(ThreadPoolExecutor):
    """A `ThreadPoolExecutor` counting the jobs submitted and not yet finished."""

    def __init__(self, max_workers: int = 1, thread_name_prefix: str = "") -> None:
        super().__init__(max_workers=max_workers, thread_name_prefix=thread_name_prefix)
        self._in_flight = 0
        self._count_lock = threading.Lock()

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        with self._count_lock:
            self._in_flight += 1
        try:
            future = super().submit(fn, *args, **kwargs)
        except BaseException:  # shut down: nothing was queued
            with self._count_lock:
                self._in_flight -= 1
            raise
        future.add_done_callback(self._finished)
        return future

    def _finished(self, _future: Future[T]) -> None:
        with self._count_lock:
            self._in_flight -= 1

    @property
    def idle(self) -> bool:
        """Whether no job is queued or running."""
        return self._in_flight == 0
