"""Searches the matcher skips where no leaf can pass a hard guard (issues 20 and 22, helper `speed9`): each
test counts the searching done, and fails where it is done for nothing; the findings are those of the full search.

- `named_activation`: asked of the forward's targets before the search (`RuleMatcher.possible`); with none
  passing, `f06-linear-gelu-named` (a Linear and any submodule after it) searches nothing. The questions it
  asks of `__init__` are recorded by the match memo, so an `__init__` edit that makes one pass rematches.
- `one_of` / `equals`: asked as soon as their variables are bound (`RuleMatcher._feasible`), once per values;
  the head-split transposes (`x.transpose(1, 2)`) end f10's search at its first step.
"""

from __future__ import annotations

from typing import Any

import pytest

from adopter.analysis import analyse
from adopter.analysis.incremental import DocumentAnalysis
from adopter.dsl.types import ModuleFile
from adopter.engine import Environment, check, load_rules
from adopter.engine.matcher import RuleMatcher
from adopter.engine.sites import MatchMemo

CUDA = Environment("cuda", frozenset(), "2.13.0")

NAMED = '''from torch import nn

from acts_for_test import get_act_layer


class MLPBlock(nn.Module):
    def __init__(self, hidden_size, mlp_dim, act="RELU"):
        super().__init__()
        self.fc1 = nn.Linear(hidden_size, mlp_dim)
        self.fc2 = nn.Linear(mlp_dim, hidden_size)
        self.fn = get_act_layer(act)

    def forward(self, x):
        x = self.fn(self.fc1(x))
        return self.fc2(x)
'''

ATTENTION = '''import math

import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(b, t, self.heads, -1).transpose(1, 2)
        k = k.view(b, t, self.heads, -1).transpose(1, 2)
        v = v.view(b, t, self.heads, -1).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(c)
        probs = self.dropout(torch.softmax(scores, dim=-1))
        out = torch.matmul(probs, v)
        return out.transpose(1, 2).reshape(b, t, c)
'''


@pytest.fixture(scope="module")
def rules() -> tuple[Any, ...]:
    return tuple(load_rules().rules)


def _searches(monkeypatch: pytest.MonkeyPatch, rule_id: str, depth: int) -> list[int]:
    """Records each search of `rule_id` at step `depth` (a partial match reaching it)."""
    searched: list[int] = []
    original = RuleMatcher._search

    def counted(self: RuleMatcher, i: int, *args: Any) -> Any:
        if self.rule.id == rule_id and i == depth:
            searched.append(len(args[0]))
        return original(self, i, *args)

    monkeypatch.setattr(RuleMatcher, "_search", counted)
    return searched


def _found(text: str, rules: tuple[Any, ...], rule_id: str) -> list[int]:
    return [f.span.start_line + 1 for f in check(analyse(text, "m.py"), rules, CUDA).findings if f.rule_id == rule_id]


@pytest.mark.pure_python
def test_no_named_gelu_in_the_class_searches_nothing(monkeypatch: pytest.MonkeyPatch, rules: tuple[Any, ...]) -> None:
    searched = _searches(monkeypatch, "f06-linear-gelu-named", 0)
    assert _found(NAMED, rules, "f06-linear-gelu-named") == []
    assert searched == []


@pytest.mark.pure_python
def test_a_named_gelu_is_searched_and_found(monkeypatch: pytest.MonkeyPatch, rules: tuple[Any, ...]) -> None:
    searched = _searches(monkeypatch, "f06-linear-gelu-named", 0)
    assert _found(NAMED.replace('act="RELU"', 'act="GELU"'), rules, "f06-linear-gelu-named") == [14]
    assert searched == [0]


def test_the_memo_rematches_when_the_name_becomes_a_gelu(rules: tuple[Any, ...]) -> None:
    # Only `__init__`'s signature changes: the forward is the same object, and the prefilter's questions
    # (the bindings of each target, the parameters) are what tells the memo to match again.
    doc = DocumentAnalysis(NAMED, "m.py")
    memo = MatchMemo()

    def found(text: str) -> list[str]:
        doc.update(text)
        unit = ModuleFile("m.py", (doc.result().architectures[0],))
        with_memo = check(unit, rules, CUDA, memo)
        assert with_memo == check(unit, rules, CUDA)
        return [f.rule_id for f in with_memo.findings]

    assert "f06-linear-gelu-named" not in found(NAMED)
    gelu = NAMED.replace('act="RELU"', 'act="GELU"')
    assert "f06-linear-gelu-named" in found(gelu)
    assert "f06-linear-gelu-named" not in found(NAMED)
    assert "f06-linear-gelu-named" in found(gelu.replace("self.fn = get_act_layer(act)", "self.fn = get_act_layer('gelu')"))


@pytest.mark.pure_python
def test_transposes_one_of_rejects_end_the_search_at_once(monkeypatch: pytest.MonkeyPatch,
                                                          rules: tuple[Any, ...]) -> None:
    # Five transposes; only the keys' (-2, -1) has the dims `one_of` allows: the other four bind `$d1` to 1
    # (or its canonical axis) and are not searched further. The verdicts are per values: one passes.
    searched = _searches(monkeypatch, "f10-manual-attention-sdpa", 1)
    assert _found(ATTENTION, rules, "f10-manual-attention-sdpa") == [20]
    assert len(searched) == 1


@pytest.mark.pure_python
def test_transposed_scores_check_their_dims_before_the_leaves(monkeypatch: pytest.MonkeyPatch,
                                                              rules: tuple[Any, ...]) -> None:
    # `softmax(dim=-1)`, not one of (1, -2): f10-transposed-scores stops where `$dim` is bound (step 3).
    searched = _searches(monkeypatch, "f10-transposed-scores", 4)
    assert _found(ATTENTION, rules, "f10-transposed-scores") == []
    assert searched == []
