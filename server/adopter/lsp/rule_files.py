"""Rule files (`.adl`): their errors come from the diagnostics pipeline; hover shows a rule's docs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.uris import to_fs_path

from adopter.dsl.types import Rule
from adopter.lsp.convert import lsp_markdown
from adopter.lsp.pipeline import Snapshot

if TYPE_CHECKING:
    from adopter.lsp.server import AdopterServer


def rule_at(rules: tuple[Rule, ...], line: int) -> Rule | None:
    """The rule whose text covers `line` (the innermost start before it when spans are missing)."""
    best: Rule | None = None
    for rule in rules:
        span = rule.span
        if span is None:
            continue
        if span.start_line <= line <= span.end_line:
            return rule
        if span.start_line <= line and (best is None or (best.span and span.start_line > best.span.start_line)):
            best = rule
    return best


def rule_markdown(rule: Rule) -> str:
    """A rule's reference: title, id, family, severity, targets and its docs."""
    lines = [f"**{rule.title}** — `{rule.id}` (family {rule.family}, {rule.severity.value})", "", rule.message]
    if rule.targets:
        lines += ["", "Targets:"]
        for target in rule.targets:
            needs = ", ".join(target.packages) or "torch only"
            star = " (preferred)" if target.preferred else ""
            lines.append(f"- `{target.name}`{star}: {target.kernel} — {'/'.join(target.devices)}; needs {needs}")
    if rule.docs:
        lines += ["", rule.docs.strip()]
    return "\n".join(lines)


def rule_hover(snapshot: Snapshot, position: types.Position) -> types.Hover | None:
    """Hover in a rule file: the docs of the rule under the cursor."""
    lines = snapshot.text.split("\n")
    if not 0 <= position.line < len(lines):
        return None
    rule = rule_at(snapshot.rules, position.line)
    return types.Hover(contents=lsp_markdown(rule_markdown(rule))) if rule else None


def did_save(ls: AdopterServer, params: types.DidSaveTextDocumentParams) -> None:
    """A saved rule file may be one the server loads: reload the rules and re-analyse open documents.
    A saved Python file may be imported by open documents: `reach.files_changed` refreshes them."""
    doc = ls.analyses.documents.get(params.text_document.uri)
    if doc is not None and doc.rule_file:
        ls.invalidate_rules()
        ls.reanalyse_all()
    elif params.text_document.uri.startswith("file:"):
        from adopter.lsp.reach import files_changed

        files_changed(ls, [to_fs_path(params.text_document.uri) or ""])


def register(server: AdopterServer) -> None:
    """Rule files share the sync, diagnostics and hover handlers; saving one reloads the rules."""
    server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))(did_save)
