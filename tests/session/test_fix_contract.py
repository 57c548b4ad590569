"""The session's promises: fixable means `fix` fixes it, `fix` reaches its fixed point in one run,
reports only the user's lines, and an unchanged text is analysed once."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from adopter.engine import Environment, load_rules
from adopter.engine.types import Finding
from adopter.session import GENERATED_MARK, RuleContext, Session, _in_original

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
    # `check`'s decision (planned: the strategy's edits splice) is the verified one (`fix`, quick fix).
    verified = session()
    again_before = verified.analysed(text, path)
    assert [(f.rule_id, f.span) for f in fixable] == [
        (f.rule_id, f.span) for f in again_before.findings if verified.decision(again_before, f).fixable]
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
    # No finding inside code the fix wrote: each one is reported on lines of the original text. (Its match
    # may read what the fix wrote: a hand-written GELU made `F.gelu` completes a Linear+GELU site in the
    # module that calls it, reported there.)
    written = [(f.rule_id, f.scope_name, f.span.start_line + 1) for f in after.findings
               if not _in_original(text, out.new_source, [(replace(f, stmt_spans=()), "")])]
    assert not written, written
    # `fix` reports as left exactly what `check` then shows (the same sites, at the user's lines).
    assert sorted((f.rule_id, f.scope_name) for f, _ in out.skipped) == sorted(
        (f.rule_id, f.scope_name) for f in after.findings)
    # What fix reports as left is at lines of the original text, and there the same statement starts.
    old_lines = text.split("\n")
    new_lines = out.new_source.split("\n")
    # (one class may hold two sites of a rule, GPT-2's `_attn` and `_upcast_and_reordered_attn`: in order)
    left: dict[tuple[str, str], list[Finding]] = {}
    for f, _ in out.skipped:
        left.setdefault((f.rule_id, f.scope_name), []).append(f)
    for f in after.findings:
        key = (f.rule_id, f.scope_name)
        if left.get(key):
            assert old_lines[left[key].pop(0).span.start_line].strip() == new_lines[f.span.start_line].strip()
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


def test_check_decides_without_analysing_rewrites() -> None:
    text = (REPO / "examples" / "llama_block.py").read_text(encoding="utf-8")
    s = session()
    analysed = s.analysed(text, "a.py")
    planned = [s.planned(analysed, f) for f in analysed.findings]
    assert any(d.fixable for d in planned) and any(not d.fixable and d.reason for d in planned)
    assert s.analyses == 1  # no rewritten text was analysed to decide
    assert all(d.new_source is None for d in planned)


def test_fix_reports_a_site_whose_rewrite_fails_verification_and_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    rewrite_module = importlib.import_module("adopter.synth.rewrite")  # the package exports a function of that name
    calls = []

    def refuse(old: str, new: str, applied: object, **_: object) -> str:
        calls.append(new)
        return "the rewrite is refused by this test"

    monkeypatch.setattr(rewrite_module, "verify", refuse)
    text = (REPO / "examples" / "bert_encoder.py").read_text(encoding="utf-8")
    s = session()
    planned = s.fixable(s.analysed(text, "a.py"))
    out = s.fix(text, "a.py")
    assert not out.changed and not out.applied
    reasons = {(f.rule_id, f.span.start_line): why for f, why in out.skipped}
    for f in planned:
        assert reasons[(f.rule_id, f.span.start_line)] == "the rewrite is refused by this test"
    assert len(calls) == 1 + len(planned)  # the batch, then each site alone, once: no second round


COPY = """import math

import torch
from torch import nn


class Block(nn.Module):
    def forward(self, x):
        return torch.softmax(x @ x.transpose(-1, -2), dim=-1)


class FastBlock(Block):
    \"\"\"`Block` with a kernel.

    MARK f01-bert-self-attention). Same parameters as the base class.
    \"\"\"

    def forward(self, x):
        y = torch.softmax(x @ x.transpose(-1, -2), dim=-1)
        return 0.5 * y * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (y + 0.044715 * torch.pow(y, 3.0))))
"""


def test_a_class_a_fix_wrote_reports_only_what_its_base_does_not() -> None:
    def scopes(text: str) -> set[tuple[str, str]]:
        return {(f.scope_name, f.rule_id) for f in session().analysed(text, "a.py").findings}

    plain = scopes(COPY.replace("MARK", "Written by hand (rule"))
    assert ("Block", "f04-softmax") in plain and ("FastBlock", "f04-softmax") in plain
    assert any(scope == "FastBlock" and rule.startswith("f13") for scope, rule in plain)
    written = scopes(COPY.replace("MARK", GENERATED_MARK.strip()))
    # The copy of the base's pattern is the base's site; what only the written class has stays.
    assert written == plain - {("FastBlock", "f04-softmax")}


def test_the_marker_is_the_one_the_strategies_write() -> None:
    from adopter.synth.strategies.attention_subclass import MARKER

    assert MARKER == GENERATED_MARK


GEGLU = """import torch
from torch import nn


class GegluMLP(nn.Module):
    def __init__(self, hidden_size, intermediate_size):
        super().__init__()
        self.gate_proj = nn.Linear(hidden_size, intermediate_size)
        self.up_proj = nn.Linear(hidden_size, intermediate_size)
        self.down_proj = nn.Linear(intermediate_size, hidden_size)
        self.act_fn = nn.GELU(approximate="tanh")

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))
"""


def test_a_strategy_that_yields_to_another_rule_reads_the_sessions_findings() -> None:
    cuda = Environment("cuda", frozenset(), "2.13.0")  # f06 is offered for CUDA only
    s = Session(RuleContext(tuple(load_rules().rules), (), cuda))
    analysed = s.analysed(GEGLU, "a.py")
    by_rule = {f.rule_id: s.planned(analysed, f) for f in analysed.findings}
    assert by_rule["f14-swiglu"].fixable
    assert not by_rule["f06-linear-gelu"].fixable and "gated MLP" in (by_rule["f06-linear-gelu"].reason or "")
    assert s.analyses == 1  # the strategy did not analyse the text again
    # Without f14 among the rules, the site is f06's to fix.
    only = Session(RuleContext(tuple(r for r in load_rules().rules if r.family != 14), (), cuda))
    alone = only.analysed(GEGLU, "a.py")
    assert [f.rule_id for f in only.fixable(alone)] == ["f06-linear-gelu"]


@pytest.mark.corpus
def test_a_reason_left_by_fix_quotes_the_users_lines() -> None:
    from adopter.corpus import modeling_file

    text = modeling_file("led").text
    s = session()
    checked = {(f.rule_id, f.span): s.planned(s.analysed(text, "led.py"), f).reason
               for f in s.analysed(text, "led.py").findings}
    out = session().fix(text, "led.py")
    quoted = [(f, reason) for f, reason in out.skipped if "lines " in reason]
    assert quoted, "LED has an f09 site whose reason quotes its lines"
    for f, reason in quoted:
        assert reason == checked[(f.rule_id, f.span)]


def test_fix_contract_on_timm_beit_attention_with_two_additive_biases() -> None:
    # timm 1.0.12 BEiT Attention (tests/rules/real_sources.py): the relative position bias and the shared bias
    # become one float attn_mask; the quick fix and `fix` agree on it, and the fix reaches its fixed point.
    import sys

    sys.path.insert(0, str(REPO / "tests" / "rules"))
    try:
        from real_sources import TIMM_BEIT_ATTENTION
    finally:
        sys.path.remove(str(REPO / "tests" / "rules"))
    s = session()
    fixable = s.fixable(s.analysed(TIMM_BEIT_ATTENTION, "beit.py"))
    assert [f.rule_id for f in fixable] == ["f10-manual-attention-sdpa"]
    assert_fix_contract(TIMM_BEIT_ATTENTION, "beit.py")


@pytest.mark.parametrize("name, path", [("DIFFUSERS_GATED", "activations.py"), ("K_DIFFUSION_FF", "image_transformer_v1.py")])
def test_fix_contract_on_chunked_gated_mlps(name: str, path: str) -> None:
    # diffusers 0.31.0 GEGLU/SwiGLU and k-diffusion 0.1.1.post1's GEGLU blocks (tests/rules/test_gated_chunked.py):
    # the split and the product become `fused_gated_activation(h, act)`; the quick fix and `fix` agree.
    import sys

    pytest.importorskip("torch")
    sys.path.insert(0, str(REPO / "tests" / "rules"))
    try:
        import test_gated_chunked
    finally:
        sys.path.remove(str(REPO / "tests" / "rules"))
    text = getattr(test_gated_chunked, name)
    s = session()
    fixable = s.fixable(s.analysed(text, path))
    assert [f.rule_id for f in fixable if f.family == 14] == ["f14-gated-chunked"] * 2
    assert_fix_contract(text, path)
