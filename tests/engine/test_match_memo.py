"""`MatchMemo`: a rule's result in a forward is reused while the forward is the same object (the incremental
analysis hands back the last forward object when an `__init__` edit left it the same) and `__init__` answers
every question the rule's matching asked of it the same way; otherwise the rule is matched again. With the
memo, `check` gives what it gives without it, edit after edit of one document."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from adopter.analysis.incremental import DocumentAnalysis
from adopter.dsl.types import ModuleFile
from adopter.engine import Environment, check, load_rules, sites
from adopter.engine.sites import MatchMemo

CPU = Environment("cpu", frozenset(), "2.13.0")

ATTENTION = '''
import math
import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.size = hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.dropout = nn.Dropout(0.1)
        self.note = "attention"

    def split(self, x):
        return x.view(x.size(0), x.size(1), self.heads, self.size).permute(0, 2, 1, 3)

    def forward(self, hidden_states):
        query = self.split(self.query(hidden_states))
        key = self.split(self.key(hidden_states))
        value = self.split(self.value(hidden_states))
        scores = torch.matmul(query, key.transpose(-1, -2)) / math.sqrt(self.size)
        probs = self.dropout(nn.functional.softmax(scores, dim=-1))
        return torch.matmul(probs, value)
'''


@pytest.fixture(scope="module")
def rules() -> tuple[Any, ...]:
    return tuple(load_rules().rules)


_DOC: dict[str, DocumentAnalysis] = {}


@pytest.fixture(autouse=True)
def _document() -> None:
    _DOC.clear()  # one document per test, edited text after text


def _unit(text: str) -> ModuleFile:
    doc = _DOC.get("doc")
    if doc is None:
        doc = _DOC["doc"] = DocumentAnalysis(text, "m.py")
    doc.update(text)
    arch = doc.result().architectures[0]
    return ModuleFile("m.py", (arch,))


def _matched(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts the rules matched (not taken from the memo)."""
    counts: Counter[str] = Counter()
    original = sites._rule_findings

    def counted(rule: Any, *args: Any) -> Any:
        counts[rule.id] += 1
        return original(rule, *args)

    monkeypatch.setattr(sites, "_rule_findings", counted)
    return counts


def _same_as_without_memo(unit: ModuleFile, rules: tuple[Any, ...], memo: MatchMemo) -> tuple[str, ...]:
    with_memo = check(unit, rules, CPU, memo)
    assert with_memo == check(unit, rules, CPU)
    return tuple(sorted(f.rule_id for f in with_memo.findings))


@pytest.mark.pure_python
def test_an_init_edit_no_rule_asked_about_rematches_nothing(monkeypatch: pytest.MonkeyPatch,
                                                            rules: tuple[Any, ...]) -> None:
    memo = MatchMemo()
    first = _same_as_without_memo(_unit(ATTENTION), rules, memo)
    assert "f09-fused-qkv" in first
    counts = _matched(monkeypatch)
    edited = ATTENTION.replace('self.note = "attention"', 'self.note = "self-attention"')
    assert _same_as_without_memo(_unit(edited), rules, memo) == first
    assert counts["f09-fused-qkv"] == 1  # only the check without the memo matched it
    assert sum(counts.values()) == len(counts)  # every rule matched once: by the check without the memo


@pytest.mark.pure_python
def test_an_init_edit_a_rule_asked_about_rematches_it(monkeypatch: pytest.MonkeyPatch,
                                                      rules: tuple[Any, ...]) -> None:
    # The value projection made wider: the three widths differ, so the projections are not fused q/k/v.
    memo = MatchMemo()
    assert "f09-fused-qkv" in _same_as_without_memo(_unit(ATTENTION), rules, memo)
    counts = _matched(monkeypatch)
    edited = ATTENTION.replace("self.value = nn.Linear(hidden, hidden)", "self.value = nn.Linear(hidden, 2 * hidden)")
    assert "f09-fused-qkv" not in _same_as_without_memo(_unit(edited), rules, memo)
    assert counts["f09-fused-qkv"] == 2  # matched again with the memo


def test_a_layer_that_stops_being_a_linear_rematches(rules: tuple[Any, ...]) -> None:
    memo = MatchMemo()
    _same_as_without_memo(_unit(ATTENTION), rules, memo)
    edited = ATTENTION.replace("self.key = nn.Linear(hidden, hidden)", "self.key = nn.Conv1d(hidden, hidden, 1)")
    assert "f09-fused-qkv" not in _same_as_without_memo(_unit(edited), rules, memo)


def test_a_binding_that_moves_rematches_what_reads_it(rules: tuple[Any, ...]) -> None:
    # A line added above the Linears moves their spans (the fix edits them there): same texts, new places.
    memo = MatchMemo()
    _same_as_without_memo(_unit(ATTENTION), rules, memo)
    moved = ATTENTION.replace("        self.heads = heads\n", "        self.heads = heads\n        self.x = 1\n")
    _same_as_without_memo(_unit(moved), rules, memo)


@pytest.mark.pure_python
def test_a_forward_edit_rematches_every_rule(monkeypatch: pytest.MonkeyPatch, rules: tuple[Any, ...]) -> None:
    memo = MatchMemo()
    _same_as_without_memo(_unit(ATTENTION), rules, memo)
    counts = _matched(monkeypatch)
    edited = ATTENTION.replace("softmax(scores, dim=-1)", "softmax(scores, dim=1)")
    _same_as_without_memo(_unit(edited), rules, memo)
    assert all(n == 2 for n in counts.values())


def test_edits_there_and_back(rules: tuple[Any, ...]) -> None:
    memo = MatchMemo()
    texts = [
        ATTENTION,
        ATTENTION.replace("nn.Dropout(0.1)", "nn.Dropout(0.2)"),
        ATTENTION.replace("self.query = nn.Linear(hidden, hidden)", "self.query = nn.Linear(hidden, hidden, bias=False)"),
        ATTENTION.replace("self.value = nn.Linear(hidden, hidden)", "self.value = nn.Linear(hidden, 2 * hidden)"),
        ATTENTION,
        ATTENTION.replace("self.dropout = nn.Dropout(0.1)", "self.dropout = None"),
        ATTENTION,
    ]
    for text in texts:
        _same_as_without_memo(_unit(text), rules, memo)


def test_a_rule_that_could_not_match_before_is_asked_again(rules: tuple[Any, ...]) -> None:
    # No Linear at first: the fused-QKV rule stops at "no binding can match" and asks nothing else.
    convs = (ATTENTION.replace("self.query = nn.Linear(hidden, hidden)", "self.query = nn.Bilinear(hidden, hidden, hidden)")
             .replace("self.key = nn.Linear(hidden, hidden)", "self.key = nn.Bilinear(hidden, hidden, hidden)")
             .replace("self.value = nn.Linear(hidden, hidden)", "self.value = nn.Bilinear(hidden, hidden, hidden)"))
    memo = MatchMemo()
    assert "f09-fused-qkv" not in _same_as_without_memo(_unit(convs), rules, memo)
    assert "f09-fused-qkv" in _same_as_without_memo(_unit(ATTENTION), rules, memo)


@pytest.mark.pure_python
def test_the_forward_before_the_last_is_kept(monkeypatch: pytest.MonkeyPatch, rules: tuple[Any, ...]) -> None:
    # A character typed in the forward and deleted again (the server takes that unit from its own cache,
    # without matching), then an __init__ edit: the rules' results for the first forward are still here.
    memo = MatchMemo()
    _same_as_without_memo(_unit(ATTENTION), rules, memo)
    _same_as_without_memo(_unit(ATTENTION.replace("softmax(scores, dim=-1)", "softmax(scores, dim=1)")), rules, memo)
    counts = _matched(monkeypatch)
    _same_as_without_memo(_unit(ATTENTION.replace('self.note = "attention"', 'self.note = "x"')), rules, memo)
    assert all(n == 1 for n in counts.values())  # only the check without the memo matched


@pytest.mark.pure_python
def test_a_third_forward_drops_the_oldest(monkeypatch: pytest.MonkeyPatch, rules: tuple[Any, ...]) -> None:
    memo = MatchMemo()
    for dim in ("-1", "1", "2"):
        _same_as_without_memo(_unit(ATTENTION.replace("softmax(scores, dim=-1)", f"softmax(scores, dim={dim})")),
                              rules, memo)
    counts = _matched(monkeypatch)
    _same_as_without_memo(_unit(ATTENTION), rules, memo)
    assert counts["f09-fused-qkv"] == 2  # the first forward's results were dropped: matched again


@pytest.mark.pure_python
def test_an_equal_forward_of_another_analysis_is_matched_afresh(monkeypatch: pytest.MonkeyPatch,
                                                                 rules: tuple[Any, ...]) -> None:
    # Found by identity: a forward equal to the kept one but made by another analysis (another document)
    # matches every rule again, with the same result.
    from adopter.analysis import analyse

    memo = MatchMemo()
    _same_as_without_memo(_unit(ATTENTION), rules, memo)
    counts = _matched(monkeypatch)
    _same_as_without_memo(ModuleFile("m.py", (analyse(ATTENTION, "m.py").architectures[0],)), rules, memo)
    assert all(n == 2 for n in counts.values())


def test_an_init_edit_hands_back_the_same_forward_object() -> None:
    doc = DocumentAnalysis(ATTENTION, "m.py")
    before = doc.result().architectures[0].forward
    doc.update(ATTENTION.replace("nn.Dropout(0.1)", "nn.Dropout(0.2)"))
    assert doc.result().architectures[0].forward is before
    doc.update(ATTENTION.replace("softmax(scores, dim=-1)", "softmax(scores, dim=1)"))
    assert doc.result().architectures[0].forward is not before


@pytest.mark.pure_python
def test_the_server_keeps_the_results_through_forward_edits_undone(monkeypatch: pytest.MonkeyPatch) -> None:
    # The language server's UnitMatcher takes an undone edit's unit from its own cache and tells the memo,
    # so three forward edits, each undone, then an __init__ edit match nothing again.
    from adopter.session import UnitMatcher, load_context

    context = load_context()
    assert context.environment is not None
    doc = DocumentAnalysis(ATTENTION, "m.py")
    matcher = UnitMatcher()
    texts = []
    for dim in ("1", "2", "-2"):
        texts += [ATTENTION.replace("softmax(scores, dim=-1)", f"softmax(scores, dim={dim})"), ATTENTION]
    for text in [ATTENTION, *texts]:
        doc.update(text)
        matcher.match(doc.result(), context)
    counts = _matched(monkeypatch)
    edited = ATTENTION.replace('self.note = "attention"', 'self.note = "x"')
    doc.update(edited)
    found, _ = matcher.match(doc.result(), context)
    assert not counts  # nothing matched again
    assert found == check(analyse_text(edited), context.rules, context.environment).findings


def analyse_text(text: str) -> ModuleFile:
    from adopter.analysis import analyse

    return analyse(text, "m.py")


VOCAB = '''
import torch.nn.functional as F
from torch import nn


class Head(nn.Module):
    def __init__(self, n_a, n_b, d):
        super().__init__()
        self.head = nn.Linear(d, n_a, bias=False)
        self.pos = nn.Embedding(n_a, d)

    def forward(self, h, targets):
        logits = self.head(h)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss
'''


def test_a_rule_reading_every_binding_sees_a_layer_it_asked_nothing_about(rules: tuple[Any, ...]) -> None:
    # The vocabulary guard reads the sizes of every Embedding: `n_a` is a vocabulary because an Embedding
    # has that many rows; resized, it is not, though the fused cross-entropy rule asked nothing about `pos`.
    memo = MatchMemo()
    assert "f16-linear-cross-entropy" in _same_as_without_memo(_unit(VOCAB), rules, memo)
    resized = VOCAB.replace("self.pos = nn.Embedding(n_a, d)", "self.pos = nn.Embedding(n_b, d)")
    assert "f16-linear-cross-entropy" not in _same_as_without_memo(_unit(resized), rules, memo)
