"""Verifying a rewrite before anyone sees it: it parses, re-analyses, and the fixed sites are gone."""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Sequence

import libcst as cst

from adopter.dsl.types import Rule
from adopter.engine import Environment, find
from adopter.engine.types import Finding


def site_counts(source: str, path: str | None, rules: Sequence[Rule], env: Environment) -> Counter[tuple[str, str]]:
    """Findings per (rule id, scope) in `source`."""
    from adopter.analysis import analyse

    return Counter((f.rule_id, f.scope_name) for f in find(analyse(source, path), rules, env))


def verify(old: str, new: str, applied: Sequence[Finding], *, path: str | None, rules: Sequence[Rule],
           env: Environment, before: Counter[tuple[str, str]] | None = None) -> str | None:
    """Why `new` is not an acceptable rewrite of `old` fixing `applied`, or None when it is."""
    try:
        ast.parse(new)
        cst.parse_module(new)
    except SyntaxError as exc:
        return f"the rewritten file does not parse: {exc.msg} (line {exc.lineno})"
    except cst.ParserSyntaxError as exc:
        return f"the rewritten file does not parse: {exc.message} (line {exc.raw_line})"
    from adopter.analysis import analyse

    old_mf, new_mf = analyse(old, path), analyse(new, path)
    lost = {a.name for a in old_mf.architectures} - {a.name for a in new_mf.architectures}
    if lost:
        return f"the rewritten file lost model classes: {', '.join(sorted(lost))}"
    used = [r for r in rules if r.id in {f.rule_id for f in applied}]
    if before is None:
        before = Counter((f.rule_id, f.scope_name) for f in find(old_mf, used, env))
    after = Counter((f.rule_id, f.scope_name) for f in find(new_mf, used, env))
    fixed = Counter((f.rule_id, f.scope_name) for f in applied)
    for key, n in fixed.items():
        if after[key] > before[key] - n:
            return f"rule {key[0]} still matches at a fixed site in {key[1]} after the rewrite"
    return None
