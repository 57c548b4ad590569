"""Work the matcher does once per matcher (issue 22, helper `speed10`): the module targets a step's variable can
denote are resolved against `__init__` once per (kind, variable), though `possible` and then `candidates` ask
for them (fails on a4fc92e: each is asked twice)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
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
    # The three projections' variables, each asked of the four Linear calls: once each, not once by
    # `possible` and again by `candidates`.
    assert len(asked) == 12
    assert set(asked.values()) == {1}
