"""Rule files (`.adl`): the rule under a position and its docs, for hover. Their errors come from the
diagnostics pipeline; saving one reloads the rules (`adopter.lsp.configuration`)."""

from __future__ import annotations

from lsprotocol import types

from adopter.dsl.types import Rule
from adopter.lsp.convert import lsp_markdown
from adopter.lsp.pipeline import Snapshot
from adopter.positions import LspLines


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
    lines = LspLines(snapshot.text)
    if not 0 <= position.line < lines.line_count:
        return None
    rule = rule_at(snapshot.rules, lines.from_lsp(position.line, position.character)[0])
    return types.Hover(contents=lsp_markdown(rule_markdown(rule))) if rule else None
