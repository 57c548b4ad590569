"""Every conversion from Adopter's values to LSP types (`lsp_*`), in one place.

Positions go through `adopter.positions` (internal lines and code-point columns -> LSP lines and UTF-16
columns).
"""

from __future__ import annotations

import importlib.metadata
import re
from collections.abc import Iterable, Sequence

from lsprotocol import types

from adopter.dsl.types import Binding, Problem, Severity, Span
from adopter.engine.types import Finding
from adopter.lsp.edits import TextChange
from adopter.positions import LspLines

SOURCE = "adopter"
# The repository the rule reference lives in, when the installed package does not say (package.json
# names the same repository for the VS Code extension).
REPOSITORY_URL = "https://github.com/adopter-dev/adopter"

_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
    Severity.HINT: types.DiagnosticSeverity.Hint,
}


class LspIndex:
    """Internal positions of one text as LSP positions (through `adopter.positions.LspLines`, whose
    line-break rule every conversion here uses); an ASCII text without a lone CR needs no work."""

    def __init__(self, text: str) -> None:
        self.lines = LspLines(text)

    @property
    def is_ascii(self) -> bool:
        """Whether positions need no line text (ASCII, no lone CR): a diagnostic can then be reused."""
        return self.lines.trivial

    def clamp(self, span: Span) -> Span:
        """`span` cut to the text (a span from another version of it must not point outside)."""
        rows = self.lines.rows()
        last = len(rows) - 1

        def point(line: int, col: int) -> tuple[int, int]:
            if line > last:
                return last, len(rows[last])
            line = max(line, 0)
            return line, max(0, min(col, len(rows[line])))

        start, end = point(span.start_line, span.start_col), point(span.end_line, span.end_col)
        return Span(*start, *max(start, end))

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


def _repository_url() -> str:
    try:
        urls = importlib.metadata.metadata("adopter").get_all("Project-URL") or []
    except importlib.metadata.PackageNotFoundError:
        urls = []
    for entry in urls:
        label, _, url = entry.partition(",")
        if label.strip().lower() in ("repository", "source", "homepage"):
            return str(url).strip().rstrip("/")
    return REPOSITORY_URL


_REPO = _repository_url()


def github_anchor(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def rule_docs_href(rule_id: str, title: str | None = None) -> str:
    """The rule's section in docs/rules.md, whose headings read "`<id>` — <title>"."""
    heading = f"{rule_id} — {title}" if title else rule_id
    return f"{_REPO}/blob/main/docs/rules.md#{github_anchor(heading)}"


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
            message=_binding_message(span, bindings),
        )
        for span in finding.init_spans
    ]
    message = finding.message
    if finding.targets:
        message += f" (targets: {', '.join(finding.targets)})"
    elif not finding.fixable and finding.no_fix_reason:
        message += f" (no automatic fix: {finding.no_fix_reason})"
    return types.Diagnostic(
        range=lsp_range(index, finding.span),
        message=message,
        severity=lsp_severity(severity or finding.severity),
        code=finding.rule_id,
        code_description=types.CodeDescription(href=rule_docs_href(finding.rule_id, finding.title)),
        source=SOURCE,
        related_information=related or None,
        data={"rule": finding.rule_id, "fixable": finding.fixable},
    )


def _binding_message(span: Span, bindings: Sequence[Binding]) -> str:
    for binding in bindings:
        if binding.span == span:
            return f"`self.{binding.attr}` is bound here, in __init__"
    return "the __init__ binding this finding involves"


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
