"""Open documents, their pending edits and latest analysis, and the debounced analysis runs.

The event loop applies each content change to the document text (with a line index: a change costs
a few slices, not a pass over the lines like pygls' own sync) and queues the tree-sitter edit. The
analysis thread (one worker: the work is CPU-bound Python, so more threads would only contend for
the GIL) takes the queued edits, re-parses incrementally and analyses. A run whose document moved on
or closed is dropped.

Memory: a document's tree-sitter trees are most of what it holds (about 2 MB for a 100 KB modeling
file, 20 times its text). Only the `TREES_KEPT` documents most recently opened or edited keep them, so
their next edit re-parses incrementally; the others are released after their analysis
(`adopter.session.OpenText.release`) and their line index compacted: they keep their text, findings
and per-class analyses, and the next edit of one parses its whole text again (about 12 ms of CPU for
the largest transformers file) and re-analyses only the classes that changed. Answers do not depend on it (`tests/lsp/test_memory.py`).
The other files read to resolve imported base classes keep their parse within `RESOLVER_PARSED_KEPT`.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.uris import to_fs_path

from adopter.lsp.held_collections import HeldCollections
from adopter.lsp.pipeline import (
    Configured,
    Snapshot,
    analyse_python,
    analyse_rule_file,
    failure,
    is_rule_file,
)
from adopter.lsp.sync import ByteEdit, LineStarts, byte_edit
from adopter.session import OpenText

if TYPE_CHECKING:
    from adopter.analysis.crossfile.reach import CrossFileReach

log = logging.getLogger(__name__)


Change = types.TextDocumentContentChangePartial | types.TextDocumentContentChangeWholeDocument
__all__ = ["TREES_KEPT", "Analyses", "Change", "OpenDocument", "is_rule_file"]

TREES_KEPT = 2  # documents whose parse trees are kept: the most recently opened or edited ones
_touches = itertools.count(1)
# Source bytes of the other files (imported base classes' modules) whose parse the server keeps: about
# 5 MB of trees. The answers they gave stay cached (`ModuleResolver`); one dropped is parsed again only
# for a class nobody asked about yet.
RESOLVER_PARSED_KEPT = 256 * 1024


@dataclass
class OpenDocument:
    """One open document: the client's current text (event loop side) and its analysis state."""

    uri: str
    rule_file: bool
    path: str | None
    text: str
    version: int | None
    lines: LineStarts
    lock: threading.Lock = field(default_factory=threading.Lock)
    # Edits since the analysis thread last looked, each with the whole text after it; `reset` when it
    # must start over from `text`.
    edits: list[tuple[ByteEdit, str]] = field(default_factory=list)
    reset: bool = True
    model: OpenText | None = None  # a Python document's incremental analysis (analysis thread only)
    snapshot: Snapshot | None = None
    task: asyncio.Task[Snapshot | None] | None = None
    closed: bool = False
    changed_at: float | None = None  # perf_counter() when the last change arrived (for latency figures)
    touched: int = field(default_factory=lambda: next(_touches))  # order of the last open or change
    # The diagnostic of each finding last published (its JSON text and range end), by finding identity (see
    # `adopter.lsp.publish.build_diagnostics`).
    published: dict[int, tuple[object, str | None, tuple[str, tuple[int, int]]]] = field(default_factory=dict)
    # A notebook cell: how many leading lines are the cell's own; the rest is the notebook's other cells,
    # read for context (`adopter.lsp.notebooks`). None for a file: every line is its own.
    own_lines: int | None = None
    # Opened and analysed, its `OpenText.prepare` not run yet (`Analyses.prepare`; analysis thread, then the
    # event loop once the run is done).
    unprepared: bool = False

    def owns(self, rng: types.Range) -> bool:
        """Whether `rng` lies in the document's own lines: diagnostics elsewhere are not published, and a
        fix that edits elsewhere is offered disabled."""
        return self.owns_end(rng.end.line, rng.end.character)

    def owns_end(self, line: int, character: int) -> bool:
        """`owns` for a range ending at LSP position (`line`, `character`)."""
        n = self.own_lines
        return n is None or line < n or (line == n and character == 0)


class Analyses:
    """Open documents and the analysis thread that serves them."""

    def __init__(self, rule_context: Callable[[], Configured]) -> None:
        self._rule_context = rule_context
        self.documents: dict[str, OpenDocument] = {}
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="adopter-analysis")
        self._reach: CrossFileReach | None = None
        self._reach_made = False
        self._reach_lock = threading.Lock()
        self.collections = HeldCollections()  # held from a change's arrival to its diagnostics (`Publisher`)

    def reach(self) -> CrossFileReach | None:
        """The server's cross-file reach, made on first use: deferred, so an analysis queues the imported
        names jedi has not resolved yet instead of waiting (`adopter.lsp.reach` resolves them after a
        publish); None when `ADOPTER_CROSSFILE=0`. Every analysis of the server uses this one."""
        with self._reach_lock:
            if not self._reach_made:
                from adopter.analysis.analyser import default_resolver, deferred_reach
                from adopter.analysis.parse.source import share_names

                default_resolver().parsed_budget = RESOLVER_PARSED_KEPT
                share_names()
                self._reach, self._reach_made = deferred_reach(), True
            return self._reach

    def open(self, uri: str, language_id: str | None, text: str, version: int | None) -> OpenDocument:
        self.close(uri)
        path = to_fs_path(uri) if uri.startswith("file:") else None
        doc = OpenDocument(uri, is_rule_file(uri, language_id), path, text, version, LineStarts(text))
        self.documents[uri] = doc
        return doc

    def change(self, uri: str, version: int | None, changes: list[Change]) -> OpenDocument | None:
        """Apply the client's changes, in order, to the document text; queue the parse edits."""
        doc = self.documents.get(uri)
        if doc is None:
            return None
        self.collections.hold()
        with doc.lock:
            for change in changes:
                if isinstance(change, types.TextDocumentContentChangeWholeDocument):
                    doc.text, doc.lines, doc.reset = change.text, LineStarts(change.text), True
                    doc.edits.clear()
                    continue
                start = (change.range.start.line, change.range.start.character)
                end = (change.range.end.line, change.range.end.character)
                doc.text, edit = byte_edit(doc.text, start, end, change.text, doc.lines)
                if not doc.reset:
                    doc.edits.append((edit, doc.text))
            doc.version = version
        doc.changed_at = time.perf_counter()
        doc.touched = next(_touches)
        return doc

    def close(self, uri: str) -> None:
        doc = self.documents.pop(uri, None)
        if doc is not None:
            doc.closed = True
            self.collections.release()  # its run, if one holds them, publishes nothing
            if doc.task is not None:
                doc.task.cancel()

    def compute(self, doc: OpenDocument) -> Snapshot:
        """Bring the document's analysis up to date (runs on the analysis thread)."""
        started = time.perf_counter()
        opened = False
        with doc.lock:
            text, version, edits, reset = doc.text, doc.version, doc.edits, doc.reset
            doc.edits, doc.reset = [], False
        try:
            if doc.rule_file:
                doc.model = None
            elif reset or doc.model is None:
                doc.model = OpenText(text, doc.path, reach=self.reach())
                opened = True
            else:
                # Several edits (one didChange with several changes, or changes that came while the
                # thread was busy) go in one at a time: each is a small edit the incremental analysis
                # handles exactly. Diffing first and last text instead made one region spanning every
                # edit, which the analysis could mask as a whole and keep masked after it parsed again.
                for edit, after in edits:
                    doc.model.apply(edit.start_byte, edit.old_end_byte, edit.new_end_byte, edit.start_point,
                                    edit.old_end_point, edit.new_end_point, after)
        except Exception as exc:  # never let a bad edit kill the thread: start over next run
            doc.model = None
            with doc.lock:
                doc.reset = True
            return Snapshot(version=version, text=text, problems=(failure("applying the edit", exc),))
        if doc.model is None:
            snapshot = analyse_rule_file(text, doc.path, version)
        else:
            snapshot = analyse_python(doc.model, version, self._rule_context())
        snapshot.elapsed_ms = (time.perf_counter() - started) * 1000  # re-parse included
        doc.unprepared = opened and doc.model is not None
        self.release_trees()
        if opened:
            # A whole file's analysis leaves reference cycles behind (3 MB over the 20 largest files) that
            # would wait for a full collection: freed now, the next document's analysis reuses the memory.
            gc.collect(1)  # the young generations only: a full one walks every open document (65 ms for 20)
        return snapshot

    def release_trees(self, keep: int = TREES_KEPT) -> None:
        """Drop the parse trees of every document but the `keep` most recently opened or edited ones
        (analysis thread only: it owns the models)."""
        docs = [d for d in list(self.documents.values()) if d.model is not None]
        if len(docs) <= keep:
            return
        docs.sort(key=lambda d: d.touched)
        for doc in docs[: len(docs) - keep]:
            model = doc.model
            if model is not None and not model.released:
                model.release()
                with doc.lock:  # the event loop applies changes to the line index under it
                    doc.lines.compact()

    def prepare(self, doc: OpenDocument) -> Future[None] | None:
        """Queue the opened document's `OpenText.prepare` on the analysis thread (the event loop calls it once
        the open's diagnostics are published): the work the first keystroke that breaks the text would do
        first (25 ms for a 100 KB file, pure Python), on neither the open's path nor a keystroke's. A
        keystroke that comes meanwhile waits for it, as for any run before it."""
        if not doc.unprepared:
            return None
        doc.unprepared = False
        return self.executor.submit(self._prepare, doc)

    @staticmethod
    def _prepare(doc: OpenDocument) -> None:
        model = doc.model
        if model is not None and not doc.closed:
            model.prepare()

    async def run(self, doc: OpenDocument) -> Snapshot | None:
        """Analyse on the thread; None when the document closed meanwhile."""
        snapshot = await asyncio.get_running_loop().run_in_executor(self.executor, self.compute, doc)
        return None if doc.closed else snapshot

    def shutdown(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)
