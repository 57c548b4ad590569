"""Document sync handlers and diagnostics: findings and analysis problems, published per version."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from lsprotocol import types

from adopter.dsl.types import Binding
from adopter.lsp.convert import LineIndex, lsp_finding_diagnostic, lsp_problem_diagnostic
from adopter.lsp.documents import Document
from adopter.lsp.pipeline import UNAVAILABLE, Snapshot

if TYPE_CHECKING:
    from adopter.lsp.server import AdopterServer


def did_open(ls: AdopterServer, params: types.DidOpenTextDocumentParams) -> None:
    """Analyse a newly opened document at once (no debounce: nothing is being typed yet)."""
    item = params.text_document
    doc = ls.analyses.open(item.uri, item.language_id, item.text, item.version)
    ls.schedule(doc, 0)


def did_change(ls: AdopterServer, params: types.DidChangeTextDocumentParams) -> None:
    """(Re)start the document's debounced analysis (the protocol has already applied the changes)."""
    doc = ls.analyses.documents.get(params.text_document.uri)
    if doc is not None:
        ls.schedule(doc, ls.settings.debounce_ms)


def did_close(ls: AdopterServer, params: types.DidCloseTextDocumentParams) -> None:
    """Forget the document and clear its diagnostics."""
    ls.analyses.close(params.text_document.uri)
    clear = types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[])
    ls.text_document_publish_diagnostics(clear)


def severity_override(ls: AdopterServer, rule_id: str, family: int) -> str | None:
    """The user's severity for a rule, by id or by family number."""
    overrides = ls.settings.severity
    return overrides.get(rule_id) or overrides.get(str(family))


def build_diagnostics(ls: AdopterServer, doc: Document, snapshot: Snapshot) -> list[types.Diagnostic]:
    """Every finding and problem of a snapshot as LSP diagnostics."""
    index = LineIndex(snapshot.text)
    module_file = snapshot.module_file
    bindings: list[Binding] = []
    for arch in module_file.architectures if module_file else ():
        bindings.extend(arch.init.bindings if arch.init else ())
    # The rule engine hands back the very same Finding for a class the edit did not touch, so in an
    # ASCII text (positions need no line text) its diagnostic is the one published before.
    reuse = index.is_ascii
    published: dict[int, tuple[object, str | None, types.Diagnostic]] = {}
    diagnostics: list[types.Diagnostic] = []
    for f in snapshot.findings:
        severity = severity_override(ls, f.rule_id, f.family)
        cached = doc.published.get(id(f)) if reuse else None
        if cached is not None and cached[0] is f and cached[1] == severity:
            diagnostic = cached[2]
        else:
            diagnostic = lsp_finding_diagnostic(f, index, doc.uri, bindings, severity)
        published[id(f)] = (f, severity, diagnostic)
        diagnostics.append(diagnostic)
    doc.published = published
    problems = list(snapshot.problems) + list(module_file.problems if module_file else ())
    if not doc.rule_file:
        # A missing engine concerns every Python document; other rule problems (a broken rule file,
        # a selector matching nothing) are shown once as a message (see `report_rule_problems`).
        problems += [p for p in snapshot.rule_problems if p.code == UNAVAILABLE]
    diagnostics += [lsp_problem_diagnostic(p, index) for p in problems]
    return diagnostics


def report_rule_problems(ls: AdopterServer, snapshot: Snapshot) -> None:
    """Show each broken rule file once per rule load (they are not part of the open document)."""
    for problem in snapshot.rule_problems:
        if problem.code != UNAVAILABLE and problem not in ls.reported_problems:
            ls.reported_problems.add(problem)
            ls.show(f"Adopter rules: {problem.render()}")


def publish(ls: AdopterServer, doc: Document, snapshot: Snapshot) -> None:
    """Publish the snapshot's diagnostics with its version, then announce the run for benchmarks."""
    report_rule_problems(ls, snapshot)
    diagnostics = build_diagnostics(ls, doc, snapshot)
    params = types.PublishDiagnosticsParams(uri=doc.uri, version=snapshot.version, diagnostics=diagnostics)
    ls.text_document_publish_diagnostics(params)
    since_change = None if doc.changed_at is None else (time.perf_counter() - doc.changed_at) * 1000
    ls.protocol.notify(
        "adopter/analysisDone",
        {
            "uri": doc.uri,
            "version": snapshot.version,
            "elapsedMs": snapshot.elapsed_ms,  # re-parse + analysis + rule matching on the analysis thread
            "sinceChangeMs": since_change,  # the change's arrival -> diagnostics sent
            "reparse": snapshot.reparsed,
        },
    )


def register(server: AdopterServer) -> None:
    server.feature(types.TEXT_DOCUMENT_DID_OPEN)(did_open)
    server.feature(types.TEXT_DOCUMENT_DID_CHANGE)(did_change)
    server.feature(types.TEXT_DOCUMENT_DID_CLOSE)(did_close)
