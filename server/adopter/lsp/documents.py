"""Open documents, their pending changes and latest analysis, and the debounced analysis runs.

The event loop only queues changes and schedules; the analysis thread (one worker: the work is
CPU-bound Python, so more threads would only contend for the GIL) replays the queued changes on its
own copy of the text and analyses. A run whose document moved on or closed is dropped.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from pygls.uris import to_fs_path

from adopter.lsp.pipeline import (
    Change,
    PythonModel,
    RuleContext,
    Snapshot,
    analyse_python,
    analyse_rule_file,
    failure,
)

log = logging.getLogger(__name__)


def is_rule_file(uri: str, language_id: str | None) -> bool:
    """`.adl` files and documents the client calls language `adopter` are rule files."""
    return language_id == "adopter" or uri.endswith(".adl")


@dataclass
class Document:
    """One open document as the analysis sees it."""

    uri: str
    rule_file: bool
    path: str | None
    text: str  # the text at open; the model keeps the current copy
    version: int | None
    pending: list[tuple[int | None, list[Change]]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    model: PythonModel | None = None
    snapshot: Snapshot | None = None
    task: asyncio.Task[Snapshot | None] | None = None
    closed: bool = False
    needs_reset: bool = False


class Analyses:
    """Open documents and the analysis thread that serves them."""

    def __init__(self, rule_context: Callable[[], RuleContext]) -> None:
        self._rule_context = rule_context
        self.documents: dict[str, Document] = {}
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="adopter-analysis")

    def open(self, uri: str, language_id: str | None, text: str, version: int | None) -> Document:
        path = to_fs_path(uri) if uri.startswith("file:") else None
        doc = Document(uri, is_rule_file(uri, language_id), path, text, version)
        self.close(uri)
        self.documents[uri] = doc
        return doc

    def change(self, uri: str, version: int | None, changes: list[Change]) -> Document | None:
        doc = self.documents.get(uri)
        if doc is not None:
            with doc.lock:
                doc.pending.append((version, changes))
        return doc

    def close(self, uri: str) -> None:
        doc = self.documents.pop(uri, None)
        if doc is not None:
            doc.closed = True
            if doc.task is not None:
                doc.task.cancel()

    def compute(self, doc: Document, reset_to: tuple[int | None, str] | None = None) -> Snapshot:
        """Bring the document's analysis up to date (runs on the analysis thread).

        `reset_to` is the client's (version, full text): the model starts over from it and replays only
        the changes queued after that version.
        """
        with doc.lock:
            pending, doc.pending = doc.pending, []
        if reset_to is not None:
            doc.version, doc.text = reset_to
            pending = [p for p in pending if _newer(p[0], doc.version)]
            doc.model = None
        version = pending[-1][0] if pending else doc.version
        try:
            if doc.model is None:
                doc.model = PythonModel(doc.text, doc.path, parse=not doc.rule_file)
            for _, changes in pending:
                doc.model.replay(changes)
        except Exception as exc:  # never let a bad change kill the thread; the next run re-syncs
            doc.model, doc.needs_reset = None, True
            return Snapshot(version=version, text="", problems=(failure("applying the edit", exc),))
        doc.version = version
        if doc.rule_file:
            return analyse_rule_file(doc.model.text, doc.path, version)
        return analyse_python(doc.model, version, self._rule_context())

    async def run(self, doc: Document, current: Callable[[], tuple[int | None, str] | None]) -> Snapshot | None:
        """Analyse on the thread; re-sync from the client's text when the replayed copy disagrees."""
        loop = asyncio.get_running_loop()
        reset = current() if doc.needs_reset else None
        doc.needs_reset = False
        snapshot = await loop.run_in_executor(self.executor, self.compute, doc, reset)
        now = current()
        if doc.closed or now is None:
            return None
        if snapshot.version == now[0] and snapshot.text != now[1]:
            log.warning("%s: analysed text differs from the client's; re-parsing in full", doc.uri)
            snapshot = await loop.run_in_executor(self.executor, self.compute, doc, now)
        return snapshot

    def shutdown(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)


def _newer(version: int | None, than: int | None) -> bool:
    return version is None or than is None or version > than
