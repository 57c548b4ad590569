"""Work the matcher does once per matcher (issue 22, helper `speed10`): the module targets a step's variable can
denote are resolved against `__init__` once per (kind, variable), though `possible` and then `candidates` ask
for them (fails on a4fc92e: each is asked twice)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules
from adopter.engine.bindings import InitIndex
from adopter.engine.matcher import RuleMatcher

CPU = Environment("cpu", frozenset(), "2.13.0")

QKV = '''import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, hidden)

    def forward(self, x):
        b, t, c = x.shape
        q = self.query(x).view(b, t, self.heads, -1).transpose(1, 2)
        k = self.key(x).view(b, t, self.heads, -1).transpose(1, 2)
        v = self.value(x).view(b, t, self.heads, -1).transpose(1, 2)
        p = torch.softmax(q @ k.transpose(-1, -2), dim=-1)
        y = (p @ v).transpose(1, 2).reshape(b, t, c)
        return self.out(y)
'''


@pytest.fixture(scope="module")
def rules() -> tuple[Any, ...]:
    return load_rules().rules


@pytest.mark.pure_python
def test_module_targets_are_resolved_once_per_matcher(monkeypatch: pytest.MonkeyPatch, rules: tuple[Any, ...]) -> None:
    assert "f09-fused-qkv" in {f.rule_id for f in check(analyse(QKV, "qkv_for_test.py"), rules, CPU).findings}
    asked: Counter[tuple[str, int]] = Counter()
    original = InitIndex.resolve_ctor

    def counted(self: InitIndex, target: str, pattern: Any) -> Any:
        asked[(target, id(pattern))] += 1
        return original(self, target, pattern)

    def no_search(self: RuleMatcher, *args: Any) -> Iterator[Any]:
        return iter(())

    # Only the pre-filter (`possible`) and the candidates of each step run: the search asks on its own.
    monkeypatch.setattr(InitIndex, "resolve_ctor", counted)
    monkeypatch.setattr(RuleMatcher, "_search", no_search)
    check(analyse(QKV, "qkv_for_test.py"), [r for r in rules if r.id == "f09-fused-qkv"], CPU)
    # The three projections' variables, asked of the four Linear calls: once each, not once by `possible` and
    # again by `candidates`; and since `InitIndex.fitting` (spdmatch), once for the three, whose constructor
    # patterns are equal (`torch.nn.Linear`): four questions, of the first pattern.
    assert len(asked) == 4
    assert len({p for _, p in asked}) == 1
    assert set(asked.values()) == {1}


def _qkv_index(source: str) -> InitIndex:
    arch = next(a for a in analyse(source, "qkv_for_test.py").architectures if a.name == "SelfAttention")
    return InitIndex.of(arch)


@pytest.mark.pure_python
def test_equal_constructor_patterns_are_fitted_once(monkeypatch: pytest.MonkeyPatch, rules: tuple[Any, ...]) -> None:
    """f09's `$wq`, `$wk` and `$wv` are three patterns with one constructor pattern (`torch.nn.Linear`): a
    target is fitted against it once per index (speed6; fails on b70e5c3: once per pattern), with the
    answer each pattern got before."""
    import adopter.engine.bindings as bindings

    f09 = next(r for r in rules if r.id == "f09-fused-qkv")
    patterns = f09.init
    assert len(patterns) == 3 and len({id(p) for p in patterns}) == 3 and len({p.ctor for p in patterns}) == 1
    fitted: Counter[str] = Counter()
    original = bindings.fit_binding

    def counted(b: Any, target: str, pattern: Any) -> Any:
        fitted[target] += 1
        return original(b, target, pattern)

    monkeypatch.setattr(bindings, "fit_binding", counted)
    index = _qkv_index(QKV)
    answers = [index.resolve_ctor("self.key", p) for p in patterns]
    assert fitted["self.key"] == 1
    assert answers[0] is not None and answers[0][0].attr == "key" and answers.count(answers[0]) == 3
    # Another constructor pattern is fitted for itself: a Conv2d pattern does not take the Linear's answer.
    conv = replace(patterns[0], ctor=replace(patterns[0].ctor, callees=("torch.nn.Conv2d",)))
    assert index.resolve_ctor("self.key", conv) is None
    assert fitted["self.key"] == 2


def test_the_fits_follow_a_changed_init(rules: tuple[Any, ...]) -> None:
    """The memo lives on the index of one `__init__` (and the rule-scoped indexes made from it): the index
    of an edited text answers for the edited bindings."""
    patterns = next(r for r in rules if r.id == "f09-fused-qkv").init
    assert all(_qkv_index(QKV).resolve_ctor("self.key", p) is not None for p in patterns)
    edited = QKV.replace("self.key = nn.Linear(hidden, hidden)", "self.key = nn.Conv1d(hidden, hidden, 1)")
    index = _qkv_index(edited)
    assert all(index.resolve_ctor("self.key", p) is None for p in patterns)
    assert all(index.resolve_ctor("self.query", p) is not None for p in patterns)


def test_a_rule_scoped_index_shares_the_fits_and_still_records_its_questions(rules: tuple[Any, ...]) -> None:
    """`sites._AskedInit` (the server's per-rule index) reads the fits of the index it was made from, and
    records each of its rule's questions with the same answer as before."""
    from adopter.engine.sites import _AskedInit

    f09 = next(r for r in rules if r.id == "f09-fused-qkv")
    index = _qkv_index(QKV)
    first = index.resolve_ctor("self.value", f09.init[0])
    asked = _AskedInit.for_rule(index, f09)
    assert asked._fits is index._fits
    answers = [asked.resolve_ctor("self.value", p) for p in f09.init]
    assert answers == [first] * 3
    assert [(kind, target, pattern, found) for kind, target, pattern, found in asked.asked if kind == "resolve"] == [
        ("resolve", "self.value", p, first) for p in f09.init]
