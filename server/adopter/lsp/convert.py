"""Every conversion from Adopter's values to LSP types (`lsp_*`), in one place.

Positions go through `adopter.positions` (internal lines and code-point columns -> LSP lines and UTF-16
columns).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from lsprotocol import types

from adopter.dsl.types import Binding, Problem, Severity, Span
from adopter.engine.types import Finding
from adopter.lsp import wire
from adopter.lsp.edits import TextChange
from adopter.lsp.wire import SOURCE, github_anchor, rule_docs_href

__all__ = ["SOURCE", "LspIndex", "github_anchor", "rule_docs_href"]

_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
    Severity.HINT: types.DiagnosticSeverity.Hint,
}


class LspIndex(wire.LspIndex):
    """`adopter.lsp.wire.LspIndex` with positions as lsprotocol's types."""

    def position(self, line: int, col: int) -> types.Position:
        lsp_line, character = self.lines.to_lsp(line, col)
        return types.Position(line=lsp_line, character=character)


def lsp_range(index: LspIndex, span: Span) -> types.Range:
    """An internal span as an LSP range."""
    return types.Range(
        start=index.position(span.start_line, span.start_col),
        end=index.position(span.end_line, span.end_col),
    )


def lsp_severity(severity: Severity | str) -> types.DiagnosticSeverity:
    return _SEVERITY[Severity(severity)]


def lsp_finding_diagnostic(
    finding: Finding,
    index: LspIndex,
    uri: str,
    bindings: Sequence[Binding] = (),
    severity: str | None = None,
) -> types.Diagnostic:
    """One finding as a diagnostic: rule id as code, docs link, the __init__ lines as related info."""
    related = [
        types.DiagnosticRelatedInformation(
            location=types.Location(uri=uri, range=lsp_range(index, span)),
            message=wire.binding_message(span, bindings),
        )
        for span in finding.init_spans
    ]
    return types.Diagnostic(
        range=lsp_range(index, finding.span),
        message=wire.finding_message(finding),
        severity=lsp_severity(severity or finding.severity),
        code=finding.rule_id,
        code_description=types.CodeDescription(href=rule_docs_href(finding.rule_id, finding.title)),
        source=SOURCE,
        related_information=related or None,
        data=wire.finding_data(finding),
    )


def lsp_problem_diagnostic(problem: Problem, index: LspIndex) -> types.Diagnostic:
    """An analysis or rule problem (syntax error region, failed class, broken rule file) as a diagnostic."""
    # Never let a problem's span point past a line's end or the last line, whatever produced it.
    span = index.clamp(problem.span or Span(0, 0, 0, 0))
    return types.Diagnostic(
        range=lsp_range(index, span),
        message=problem.message,
        severity=lsp_severity(problem.severity),
        code=problem.code,
        source=SOURCE,
    )


def lsp_text_edits(changes: Iterable[TextChange], index: LspIndex) -> list[types.TextEdit]:
    """Internal text changes (old-text positions) as LSP text edits."""
    return [types.TextEdit(range=lsp_range(index, c.span), new_text=c.new_text) for c in changes]


def lsp_workspace_edit(uri: str, version: int | None, edits: list[types.TextEdit]) -> types.WorkspaceEdit:
    """A versioned edit: the client rejects it when the document has moved past `version`."""
    document = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
    return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(text_document=document, edits=edits)])


def lsp_markdown(value: str) -> types.MarkupContent:
    return types.MarkupContent(kind=types.MarkupKind.Markdown, value=value)
