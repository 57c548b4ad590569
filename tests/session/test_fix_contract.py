"""The session's promises: fixable means `fix` fixes it, `fix` reaches its fixed point in one run,
reports only the user's lines, and an unchanged text is analysed once."""

from __future__ import annotations

from pathlib import Path

import pytest

from adopter.engine import Environment, load_rules
from adopter.session import RuleContext, Session

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("*.py"))
MODELS = ["bert", "gpt2", "t5", "bart", "vit", "llama", "mistral", "opt", "gpt_neo", "clip"]
CPU = Environment("cpu", frozenset(), "2.13.0")


def session() -> Session:
    return Session(RuleContext(tuple(load_rules().rules), (), CPU))


def assert_fix_contract(text: str, path: str) -> None:
    s = session()
    before = s.analysed(text, path)
    fixable = s.fixable(before)
    out = s.fix(text, path)
    # Every site called fixable is fixed (the first round applies exactly those, one at a time or together).
    applied_sites = {(f.rule_id, f.scope_name) for f in out.applied}
    missed = [(f.rule_id, f.scope_name, f.span.start_line + 1) for f in fixable
              if (f.rule_id, f.scope_name) not in applied_sites]
    assert not missed, missed
    # Fixed point: a fresh session (a later `check`) finds nothing fixable in the result.
    again = session()
    after = again.analysed(out.new_source, path)
    assert not again.fixable(after), [(f.rule_id, f.span.start_line + 1) for f in again.fixable(after)]
    assert again.fix(out.new_source, path).new_source == out.new_source
    # What fix reports as left is at lines of the original text, and there the same statement starts.
    old_lines = text.split("\n")
    new_lines = out.new_source.split("\n")
    left = {(f.rule_id, f.scope_name): f for f, _ in out.skipped}
    for f in after.findings:
        key = (f.rule_id, f.scope_name)
        if key in left:
            assert old_lines[left[key].span.start_line].strip() == new_lines[f.span.start_line].strip()
    for f, _ in out.skipped:
        assert f.span.start_line < len(old_lines)
        assert f.scope_name in {a.name for a in before.module_file.architectures} | {
            fn.name for fn in before.module_file.functions}, f"reported inside generated code: {f.scope_name}"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_fix_contract(path: Path) -> None:
    assert_fix_contract(path.read_text(encoding="utf-8"), str(path))


@pytest.mark.corpus
@pytest.mark.slow
@pytest.mark.parametrize("model", MODELS)
def test_corpus_fix_contract(model: str) -> None:
    from adopter.corpus import modeling_file

    assert_fix_contract(modeling_file(model).text, f"modeling_{model}.py")


def test_unchanged_text_is_analysed_once() -> None:
    text = (REPO / "examples" / "bert_encoder.py").read_text(encoding="utf-8")
    s = session()
    first = s.analysed(text, "a.py")
    assert s.analysed(text, "a.py") is first and s.analyses == 1
    # A quick fix's decision analyses the rewritten text only: the original is reused.
    f = next(f for f in first.findings if f.fixable)
    assert s.decision(first, f).fixable
    assert s.analyses == 2
    # Applying that fix: its text is already analysed.
    new = s.decision(first, f).new_source
    assert new is not None and s.analysed(new, "a.py") is not None and s.analyses == 2


def test_fix_of_a_file_that_does_not_parse_says_so() -> None:
    out = session().fix("class A(:\n    pass\n", "broken.py")
    assert not out.parses and not out.changed


def test_a_verdict_survives_edits_outside_its_class_only() -> None:
    text = (REPO / "examples" / "bert_encoder.py").read_text(encoding="utf-8")
    s = session()
    first = s.analysed(text, "a.py")
    f = next(f for f in first.findings if f.fixable)
    assert s.verdict(first, f).fixable
    count = s.analyses
    elsewhere = s.analysed("# a comment typed above everything\n" + text, "a.py")
    moved = next(g for g in elsewhere.findings if g.rule_id == f.rule_id and g.scope_name == f.scope_name)
    assert s.verdict(elsewhere, moved).fixable and s.analyses == count + 1  # only the new text's analysis
    cls = next(a for a in first.module_file.architectures if a.name == f.scope_name)
    line = text.split("\n")[cls.span.start_line]
    inside = s.analysed(text.replace(line, line + "  # edited", 1), "a.py")
    again = next(g for g in inside.findings if g.rule_id == f.rule_id and g.scope_name == f.scope_name)
    s.verdict(inside, again)
    assert s.analyses > count + 2  # the class changed: decided again (its rewrite analysed)
