"""Verifying a rewrite before anyone sees it: it parses, re-analyses, and the fixed sites are gone."""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Sequence

from adopter.engine.types import Finding
from adopter.synth.types import Reading, Reanalyse


def site_counts(findings: Sequence[Finding], rule_ids: set[str]) -> Counter[tuple[str, str]]:
    """Findings per (rule id, scope) among `findings`, for the rules in `rule_ids`."""
    return Counter((f.rule_id, f.scope_name) for f in findings if f.rule_id in rule_ids)


def verify(before: Reading, new: str, applied: Sequence[Finding], *, reanalyse: Reanalyse) -> str | None:
    """Why `new` is not an acceptable rewrite of `before` fixing `applied`, or None when it is.

    `reanalyse` reads `new` (the caller's cache keeps it, so it is ready when the editor applies the fix).
    """
    try:
        ast.parse(new)  # Python's own parser, on the whole rewritten text
    except SyntaxError as exc:
        return f"the rewritten file does not parse: {exc.msg} (line {exc.lineno})"
    after = reanalyse(new)
    lost = {a.name for a in before.module_file.architectures} - {a.name for a in after.module_file.architectures}
    if lost:
        return f"the rewritten file lost model classes: {', '.join(sorted(lost))}"
    used = {f.rule_id for f in applied}
    was, now = site_counts(before.findings, used), site_counts(after.findings, used)
    fixed = Counter((f.rule_id, f.scope_name) for f in applied)
    for key, n in fixed.items():
        if now[key] > was[key] - n:
            return f"rule {key[0]} still matches at a fixed site in {key[1]} after the rewrite"
    return None
