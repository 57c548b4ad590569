"""Diagnostics as the JSON the client receives, without lsprotocol (the server's first diagnostics are
published before lsprotocol is imported: `adopter.lsp.early`).

What a diagnostic says (message, code, link, related lines, severity) is decided here once;
`adopter.lsp.convert` builds lsprotocol's types from the same pieces, and a test checks that both give
the same JSON for real files.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from adopter.dsl.types import Binding, Problem, Severity, Span
from adopter.engine.types import Finding
from adopter.positions import LspLines

SOURCE = "adopter"
# The repository the rule reference lives in, when the installed package does not say (package.json
# names the same repository for the VS Code extension).
REPOSITORY_URL = "https://github.com/adopter-dev/adopter"

# LSP's DiagnosticSeverity numbers.
SEVERITY_NUMBER = {Severity.ERROR: 1, Severity.WARNING: 2, Severity.INFO: 3, Severity.HINT: 4}


def frame(body: str) -> bytes:
    """One JSON-RPC message framed as pygls frames it; `body` is ASCII (`json.dumps` escapes the rest), so its
    length in characters is its length in bytes."""
    return (f"Content-Length: {len(body)}\r\n"
            f"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{body}").encode()


class RowStarts(Protocol):
    """Where each line of a text starts, by line number (`adopter.lsp.sync.LineStarts`)."""

    def __len__(self) -> int: ...

    def __getitem__(self, line: int) -> int: ...


class LspIndex:
    """Internal positions of one text as LSP positions (through `adopter.positions.LspLines`, whose
    line-break rule every conversion uses); an ASCII text without a lone CR needs no work."""

    def __init__(self, text: str, row_starts: RowStarts | None = None) -> None:
        """`row_starts`: where each line of `text` split at `\n` starts, when the caller keeps that index (the
        server's `LineStarts` of a text without `\r`): `clamp` then need not split the whole text."""
        self.lines = LspLines(text)
        self._size = len(text)
        self._row_starts = row_starts

    @property
    def is_ascii(self) -> bool:
        """Whether positions need no line text (ASCII, no lone CR): a diagnostic can then be reused."""
        return self.lines.trivial

    def _row_lengths(self) -> tuple[int, Callable[[int], int]]:
        """(index of the last `\n`-line, the length of line n)."""
        starts = self._row_starts
        if starts is None:
            rows = self.lines.rows()
            return len(rows) - 1, lambda n: len(rows[n])
        last, size = len(starts) - 1, self._size
        return last, lambda n: (starts[n + 1] - 1 if n < last else size) - starts[n]

    def clamp(self, span: Span) -> Span:
        """`span` cut to the text (a span from another version of it must not point outside)."""
        last, length = self._row_lengths()

        def point(line: int, col: int) -> tuple[int, int]:
            if line > last:
                return last, length(last)
            line = max(line, 0)
            return line, max(0, min(col, length(line)))

        start, end = point(span.start_line, span.start_col), point(span.end_line, span.end_col)
        return Span(*start, *max(start, end))

    def range_json(self, span: Span) -> dict[str, Any]:
        """An internal span as an LSP range, in JSON."""
        start = self.lines.to_lsp(span.start_line, span.start_col)
        end = self.lines.to_lsp(span.end_line, span.end_col)
        return {"start": {"line": start[0], "character": start[1]}, "end": {"line": end[0], "character": end[1]}}


@functools.cache
def repository_url() -> str:
    """The repository named by the installed package's metadata, else `REPOSITORY_URL` (read once)."""
    for entry in _project_urls():
        label, _, url = entry.partition(",")
        if label.strip().lower() in ("repository", "source", "homepage"):
            return str(url).strip().rstrip("/")
    return REPOSITORY_URL


def _project_urls() -> list[str]:
    """The `Project-URL` fields of the first `adopter-*.dist-info` on `sys.path`, the distribution
    `importlib.metadata` would pick. Read directly: importing `importlib.metadata` and its lookup cost about
    as much as analysing a small file, on the way to the first diagnostics."""
    for folder in sys.path:
        try:
            names = [e.name for e in os.scandir(folder or ".")
                     if e.name.startswith("adopter-") and e.name.endswith(".dist-info")]
        except OSError:
            continue
        for name in sorted(names):
            try:
                with open(os.path.join(folder or ".", name, "METADATA"), encoding="utf-8") as handle:
                    head = handle.read().split("\n\n", 1)[0]  # the headers end at the first blank line
            except OSError:
                continue
            return [line.partition(":")[2].strip() for line in head.splitlines()
                    if line.lower().startswith("project-url:")]
    return []


def github_anchor(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def rule_docs_href(rule_id: str, title: str | None = None) -> str:
    """The rule's section in docs/rules.md, whose headings read "`<id>` — <title>"."""
    heading = f"{rule_id} — {title}" if title else rule_id
    return f"{repository_url()}/blob/main/docs/rules.md#{github_anchor(heading)}"


def finding_message(finding: Finding) -> str:
    """A finding's diagnostic message: its text, then its targets or why it has no fix."""
    message = finding.message
    if finding.targets:
        message += f" (targets: {', '.join(finding.targets)})"
    elif not finding.fixable and finding.no_fix_reason:
        message += f" (no automatic fix: {finding.no_fix_reason})"
    return message


def binding_message(span: Span, bindings: Sequence[Binding]) -> str:
    """The related-information text of an __init__ line a finding involves."""
    for binding in bindings:
        if binding.span == span:
            return f"`self.{binding.attr}` is bound here, in __init__"
    for binding in bindings:
        if span in binding.item_spans:
            return f"`self.{binding.attr}[{binding.item_spans.index(span)}]` is built here, in __init__"
    return "the __init__ binding this finding involves"


def finding_data(finding: Finding) -> dict[str, Any]:
    """The diagnostic's `data`, which code actions read back."""
    return {"rule": finding.rule_id, "fixable": finding.fixable}


def severity_override(settings: Any, rule_id: str, family: int) -> str | None:
    """The user's severity for a rule (`settings.severity`), by id or by family number."""
    severity: Mapping[str, str] = settings.severity
    return severity.get(rule_id) or severity.get(str(family))


def module_bindings(module_file: Any) -> list[Binding]:
    """Every __init__ binding of the module's classes (a finding's related lines are among them)."""
    bindings: list[Binding] = []
    for arch in module_file.architectures if module_file else ():
        bindings.extend(arch.init.bindings if arch.init else ())
    return bindings


def finding_diagnostic(
    finding: Finding, index: LspIndex, uri: str, bindings: Sequence[Binding] = (), severity: str | None = None
) -> dict[str, Any]:
    """One finding as a diagnostic (JSON): rule id as code, docs link, the __init__ lines as related info."""
    diagnostic: dict[str, Any] = {
        "range": index.range_json(finding.span),
        "message": finding_message(finding),
        "severity": SEVERITY_NUMBER[Severity(severity or finding.severity)],
        "code": finding.rule_id,
        "codeDescription": {"href": rule_docs_href(finding.rule_id, finding.title)},
        "source": SOURCE,
    }
    related = [
        {"location": {"uri": uri, "range": index.range_json(span)}, "message": binding_message(span, bindings)}
        for span in finding.init_spans
    ]
    if related:
        diagnostic["relatedInformation"] = related
    diagnostic["data"] = finding_data(finding)
    return diagnostic


def problem_diagnostic(problem: Problem, index: LspIndex) -> dict[str, Any]:
    """An analysis or rule problem as a diagnostic (JSON), its span cut to the text."""
    span = index.clamp(problem.span or Span(0, 0, 0, 0))
    return {
        "range": index.range_json(span),
        "message": problem.message,
        "severity": SEVERITY_NUMBER[Severity(problem.severity)],
        "code": problem.code,
        "source": SOURCE,
    }
