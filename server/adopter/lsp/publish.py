"""The one owner of change -> schedule -> publish: debounced analysis runs and their diagnostics.

Lifecycle: the document sync handlers (`adopter.lsp.diagnostics`, `adopter.lsp.notebooks`) apply a
change through `Analyses` and call `Publisher.schedule`; a run waits for the debounce, analyses on
the analysis thread, and publishes the diagnostics of the version it analysed, unless the document
moved on or closed (a newer run publishes). Features that need the current analysis (code actions,
hover, commands, lenses) ask `Publisher.snapshot`, which runs it now. Settings and rule reloads call
`reanalyse_all`. The server is reached only through `Client` (what the publisher needs of it), so
this module does not import the server, and the server does not import any feature.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any, Protocol

from lsprotocol import types

from adopter.dsl.types import Problem
from adopter.lsp.documents import Analyses, OpenDocument
from adopter.lsp.pipeline import UNAVAILABLE, Snapshot, published_problems
from adopter.lsp.settings import Settings
from adopter.lsp.wire import (
    LspIndex,
    finding_diagnostic,
    module_bindings,
    problem_diagnostic,
    severity_override,
)

ANALYSIS_DONE = "adopter/analysisDone"  # custom notification: uri, version, elapsed_ms (for benchmarks)
PUBLISH_DIAGNOSTICS = types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS


class Notifier(Protocol):
    def notify(self, method: str, params: Any | None = None) -> Any: ...


class Client(Protocol):
    """What publishing needs of the server (`adopter.lsp.server.AdopterServer` has it)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def reported_problems(self) -> set[Problem]: ...

    @property
    def protocol(self) -> Notifier: ...

    def show(self, message: str, kind: types.MessageType = types.MessageType.Warning) -> None: ...

    def notify_json(self, *notifications: tuple[str, str]) -> None: ...


class Publisher:
    """Per document: at most one pending analysis run; its diagnostics published with its version."""

    def __init__(self, analyses: Analyses, client: Client) -> None:
        self.analyses = analyses
        self.client = client
        self.after_publish: list[Callable[[], None]] = []  # called after each publication (cross-file reach)

    def schedule(self, doc: OpenDocument, delay_ms: int) -> None:
        """(Re)start the document's debounced analysis; a superseded run is cancelled."""
        if doc.task is not None and not doc.task.done():
            doc.task.cancel()
        doc.task = asyncio.ensure_future(self._analyse_and_publish(doc, delay_ms))

    def reanalyse_all(self) -> None:
        """Analyse every open document again now (settings or rules changed)."""
        for doc in list(self.analyses.documents.values()):
            self.schedule(doc, 0)

    async def snapshot(self, uri: str) -> Snapshot | None:
        """The analysis of the document's current version, running it now if needed (no debounce)."""
        doc = self.analyses.documents.get(uri)
        if doc is None:
            return None
        if doc.snapshot is not None and doc.snapshot.version == doc.version:
            return doc.snapshot
        if doc.task is not None and not doc.task.done():
            doc.task.cancel()
        doc.task = asyncio.ensure_future(self._analyse_and_publish(doc, 0))
        try:
            return await asyncio.shield(doc.task)
        except asyncio.CancelledError:
            # A newer edit superseded the run we waited for; answer from the latest state, if current.
            latest = doc.snapshot
            return latest if latest is not None and latest.version == doc.version else None

    async def _analyse_and_publish(self, doc: OpenDocument, delay_ms: int) -> Snapshot | None:
        if delay_ms > 0:
            await asyncio.sleep(delay_ms / 1000)
        snapshot = await self.analyses.run(doc)
        if snapshot is None or doc.closed or doc.version != snapshot.version:
            return None  # the document moved on or closed: a newer run publishes
        doc.snapshot = snapshot
        self.publish(doc, snapshot)
        self.analyses.collections.release()  # the keystroke's diagnostics are out: collect what it left, now
        for hook in self.after_publish:
            hook()
        self.analyses.prepare(doc)  # once the open's diagnostics are out
        return snapshot

    def publish(self, doc: OpenDocument, snapshot: Snapshot) -> None:
        """Publish the snapshot's diagnostics with its version, then announce the run for benchmarks.

        Both go out as JSON text built here (`notify_json`): pygls' `notify` would turn lsprotocol objects
        into dicts with cattrs and encode them, about 0.25 ms per keystroke for BERT's ten findings, while
        the diagnostic of an unchanged finding is the JSON text published before."""
        self.report_rule_problems(snapshot)
        with doc.lock:  # the analysis thread may `compact` the line index meanwhile
            diagnostics = ", ".join(build_diagnostics(self.client.settings, doc, snapshot))
        head = json.dumps({"uri": doc.uri, "version": snapshot.version})
        since_change = None if doc.changed_at is None else (time.perf_counter() - doc.changed_at) * 1000
        done = {
            "uri": doc.uri,
            "version": snapshot.version,
            "elapsedMs": snapshot.elapsed_ms,  # re-parse + analysis + rule matching on the analysis thread
            "sinceChangeMs": since_change,  # the change's arrival -> diagnostics sent
            "reparse": snapshot.reparsed,
        }
        self.client.notify_json(  # one write, so one wake-up of the client
            (PUBLISH_DIAGNOSTICS, f'{head[:-1]}, "diagnostics": [{diagnostics}]}}'),
            (ANALYSIS_DONE, json.dumps(done)),
        )

    def report_rule_problems(self, snapshot: Snapshot) -> None:
        """Show each broken rule file once per rule load (they are not part of the open document)."""
        for problem in snapshot.rule_problems:
            if problem.code != UNAVAILABLE and problem not in self.client.reported_problems:
                self.client.reported_problems.add(problem)
                self.client.show(f"Adopter rules: {problem.render()}")


def build_diagnostics(settings: Settings, doc: OpenDocument, snapshot: Snapshot) -> list[str]:
    """Every finding and problem of a snapshot as LSP diagnostics, each as its JSON text (`adopter.lsp.wire`
    builds the JSON lsprotocol's types would give)."""
    lines = doc.lines  # the event loop's line index of the document's current text
    index = LspIndex(snapshot.text, lines if lines.rows_are_lines and doc.text is snapshot.text else None)
    module_file = snapshot.module_file
    bindings = module_bindings(module_file)
    # The rule engine hands back the very same Finding for a class the edit did not touch, so in an
    # ASCII text (positions need no line text) its diagnostic is the one published before.
    reuse = index.is_ascii
    published: dict[int, tuple[object, str | None, Published]] = {}
    diagnostics: list[Published] = []
    for f in snapshot.findings:
        severity = severity_override(settings, f.rule_id, f.family)
        cached = doc.published.get(id(f)) if reuse else None
        if cached is not None and cached[0] is f and cached[1] == severity:
            diagnostic = cached[2]
        else:
            diagnostic = _published(finding_diagnostic(f, index, doc.uri, bindings, severity))
        published[id(f)] = (f, severity, diagnostic)
        diagnostics.append(diagnostic)
    doc.published = published
    diagnostics += [_published(problem_diagnostic(p, index)) for p in published_problems(snapshot, doc.rule_file)]
    if doc.own_lines is not None:  # a notebook cell reports its own lines; the other cells report theirs
        diagnostics = [d for d in diagnostics if doc.owns_end(*d[1])]
    return [d[0] for d in diagnostics]


Published = tuple[str, tuple[int, int]]  # a diagnostic's JSON text and where its range ends (line, character)


def _published(diagnostic: dict[str, Any]) -> Published:
    end = diagnostic["range"]["end"]
    return json.dumps(diagnostic), (end["line"], end["character"])
