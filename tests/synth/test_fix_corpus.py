"""Whole-file fixes of real transformers modeling files: verified, idempotent, minimal."""

from __future__ import annotations

import ast
import difflib
from collections.abc import Sequence

import pytest

from adopter.dsl.types import Rule
from adopter.engine import Environment, load_rules
from adopter.session import FileFix, RuleContext, Session

CPU = Environment("cpu", frozenset(), "2.13.0")


def fix_source(source: str, path: str, rules: Sequence[Rule], env: Environment) -> FileFix:
    return Session(RuleContext(tuple(rules), (), env)).fix(source, path)


@pytest.mark.corpus
@pytest.mark.slow
@pytest.mark.parametrize("model", ["bert", "resnet"])
def test_fix_real_file(model: str) -> None:
    from adopter.corpus import modeling_file

    source = modeling_file(model).text
    rules = load_rules().rules
    first = fix_source(source, f"modeling_{model}.py", rules, CPU)
    assert first.applied, [why for _, why in first.skipped]
    ast.parse(first.new_source)
    # Fixing the fixed file changes nothing.
    second = fix_source(first.new_source, f"modeling_{model}.py", rules, CPU)
    assert not second.applied and second.new_source == first.new_source
    # Minimal: every line the diff removes belongs to a fixed site's statements or bindings.
    touched = {ln for f in first.applied for s in (*f.stmt_spans, *f.init_spans)
               for ln in range(s.start_line, s.end_line + 1)}
    old = source.split("\n")
    matcher = difflib.SequenceMatcher(a=old, b=first.new_source.split("\n"), autojunk=False)
    new = first.new_source.split("\n")
    removed: set[int] = set()
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            # A line kept as written but indented under a new `if` (SDPA's fallback for output_attentions)
            # is not a change of that line: its text comes back in the same hunk.
            kept = {line.strip() for line in new[j1:j2]}
            removed.update(i for i in range(i1, i2) if old[i].strip() not in kept)
    stray = sorted(i + 1 for i in removed - touched if old[i].strip())
    assert not stray, f"lines changed outside the fixed sites: {stray[:10]}"
