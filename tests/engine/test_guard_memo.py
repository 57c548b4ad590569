"""The matcher answers a value guard (`_VALUE_GUARDS`) once per distinct tuple of bound values, and asks
it as soon as its arguments are bound (pruning the subtree below); the findings are those of asking it
at every leaf of the search."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules
from adopter.engine import matcher as matcher_module

CPU = Environment("cpu", frozenset(), "2.13.0")

# BERT's self-attention: three projections of one input, each split into heads by an inlined helper, and
# a cross-attention branch (the projections' values depend on the path: many leaves per assignment).
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

    def split(self, x):
        return x.view(x.size(0), x.size(1), self.heads, self.size).permute(0, 2, 1, 3)

    def forward(self, hidden_states, encoder_states=None):
        mixed = self.query(hidden_states)
        if encoder_states is not None:
            key = self.split(self.key(encoder_states))
            value = self.split(self.value(encoder_states))
        else:
            key = self.split(self.key(hidden_states))
            value = self.split(self.value(hidden_states))
        query = self.split(mixed)
        scores = torch.matmul(query, key.transpose(-1, -2)) / math.sqrt(self.size)
        probs = self.dropout(nn.functional.softmax(scores, dim=-1))
        return torch.matmul(probs, value)
'''


class _Forgetful(dict[Any, bool]):
    """A verdict store that keeps nothing: every leaf asks the guard again (the matcher before the memo)."""

    def __setitem__(self, key: Any, value: bool) -> None:
        pass


def _findings(monkeypatch: pytest.MonkeyPatch, memo: bool = True,
              prune: bool = True) -> tuple[tuple[object, ...], Counter[str]]:
    asked: Counter[str] = Counter()
    answer = matcher_module.RuleMatcher._value_guard_ok
    start = matcher_module.RuleMatcher.__init__

    search = matcher_module.RuleMatcher._search

    def counted(self: matcher_module.RuleMatcher, kind: Any, values: Any) -> bool:
        asked[kind.name] += 1
        return answer(self, kind, values)

    def searched(self: matcher_module.RuleMatcher, *args: Any) -> Any:
        asked["search " + self.rule.id] += 1
        return search(self, *args)

    def init(self: matcher_module.RuleMatcher, *args: Any) -> None:
        start(self, *args)
        if not memo:
            self._verdicts = _Forgetful()
        if not prune:
            self._early = ()

    with monkeypatch.context() as m:
        m.setattr(matcher_module.RuleMatcher, "_value_guard_ok", counted)
        m.setattr(matcher_module.RuleMatcher, "__init__", init)
        m.setattr(matcher_module.RuleMatcher, "_search", searched)
        result = check(analyse(ATTENTION, "attention.py"), load_rules().rules, CPU)
    return tuple(result.findings) + tuple(result.problems), asked


@pytest.mark.pure_python
def test_value_guards_answered_once_per_values_with_the_same_findings(monkeypatch: pytest.MonkeyPatch) -> None:
    with_memo, asked = _findings(monkeypatch, memo=True)
    without, asked_every_leaf = _findings(monkeypatch, memo=False, prune=False)
    assert with_memo == without
    assert any(getattr(f, "rule_id", None) == "f09-fused-qkv" for f in with_memo)
    # The fused-QKV search reaches each assignment of the projections at several leaves.
    assert asked_every_leaf["UNSPLIT"] > asked["UNSPLIT"] > 0
    assert asked_every_leaf["SAME_PATHS"] > asked["SAME_PATHS"] > 0


@pytest.mark.pure_python
def test_subtrees_failing_a_bound_value_guard_are_not_searched(monkeypatch: pytest.MonkeyPatch) -> None:
    pruned, asked = _findings(monkeypatch)
    leaves_only, asked_at_leaves = _findings(monkeypatch, prune=False)
    assert pruned == leaves_only
    assert 0 < asked["search f09-fused-qkv"] < asked_at_leaves["search f09-fused-qkv"]
