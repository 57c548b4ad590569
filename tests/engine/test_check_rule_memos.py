"""Work `engine.check` does once per rule tuple or constructor pattern (issue 22, helper `speed12`): the session
calls `check` once per class with the same rule tuple, and most rules ask `__init__` whether a `torch.nn.Linear`
is bound. Both are kept, and each kept answer equals the one computed afresh."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from adopter.analysis import analyse
from adopter.dsl.types import BindingPattern
from adopter.engine import Environment, bindings, check, load_rules
from adopter.engine.bindings import InitIndex
from adopter.engine.flow import op_keys
from adopter.engine.plans import quick_possible
from adopter.engine.sites import _AskedInit, _canonical_rules, _possible_rules

CPU = Environment("cpu", frozenset(), "2.13.0")

SOURCE = '''import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, hidden)
        self.drop = nn.Dropout(0.1)
        self.norm = nn.LayerNorm(hidden)

    def forward(self, x):
        b, t, c = x.shape
        q = self.query(x).view(b, t, self.heads, -1).transpose(1, 2)
        k = self.key(x).view(b, t, self.heads, -1).transpose(1, 2)
        v = self.value(x).view(b, t, self.heads, -1).transpose(1, 2)
        p = torch.softmax(q @ k.transpose(-1, -2) / 8.0, dim=-1)
        y = (p @ v).transpose(1, 2).reshape(b, t, c)
        return self.norm(self.drop(self.out(y)) + x)


class Gelu(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.fc = nn.Linear(hidden, 4 * hidden)

    def forward(self, x):
        return torch.nn.functional.gelu(self.fc(x))


def helper(x):
    return torch.softmax(x, dim=-1)
'''


@pytest.fixture(scope="module")
def rules() -> tuple[Any, ...]:
    return load_rules().rules


@pytest.mark.pure_python
def test_could_match_is_computed_once_per_constructor_pattern(monkeypatch: pytest.MonkeyPatch,
                                                                 rules: tuple[Any, ...]) -> None:
    arch = next(a for a in analyse(SOURCE, "m.py").architectures if a.name == "SelfAttention")
    patterns = [b for r in rules for b in r.init]
    assert len({id(p) for p in patterns}) > len({p.ctor for p in patterns})  # equal constructors, several objects
    expected = {id(p): InitIndex.of(arch).could_match(p) for p in patterns}
    assert any(expected.values()) and not all(expected.values())
    fits: Counter[object] = Counter()
    original = bindings.ctor_matches

    def counted(pattern: Any, ctor: Any) -> bool:
        fits[pattern] += 1
        return original(pattern, ctor)

    monkeypatch.setattr(bindings, "ctor_matches", counted)
    index = InitIndex.of(arch)
    asked = _AskedInit.for_rule(index, rules[0])  # a rule's recording index shares the answers
    for p in patterns:
        assert index.could_match(p) == expected[id(p)]
        assert asked.could_match(p) == expected[id(p)]
    binding_ctors = sum(len(bs) for bs in index.by_attr.values())
    # each distinct constructor pattern is tried once against each binding at most (fc11bfb: once per pattern)
    assert all(n <= binding_ctors for n in fits.values())
    assert sum(fits.values()) <= binding_ctors * len({p.ctor for p in patterns if any(
        c in index.callees for c in p.ctor.callees)})
    # the recording index records the questions and answers one with nothing shared records (the server's
    # match memo replays them against the next `__init__`)
    alone = _AskedInit.for_rule(InitIndex.of(arch), rules[0])
    alone._any_fit = {}
    for p in patterns:
        alone.could_match(p)
    assert asked.asked == alone.asked and any(q[0] == "possible" for q in alone.asked)


@pytest.mark.pure_python
def test_canonical_rules_and_prefilter_kept_per_tuple(rules: tuple[Any, ...]) -> None:
    first = _canonical_rules(rules)
    again = _canonical_rules(rules)
    assert first[0] is again[0] and first[1] is again[1]
    assert _canonical_rules(list(rules))[0] is not first[0]  # a list is never kept (it may change)
    module_file = analyse(SOURCE, "m.py")
    scopes = [(a.forward, InitIndex.of(a)) for a in module_file.architectures if a.forward is not None]
    scopes += [(f, InitIndex.of(None)) for f in module_file.functions]
    assert len(scopes) == 3
    for live in first:
        for forward, init in scopes:
            keys = op_keys(forward.body)
            assert _possible_rules(live, keys, init) == [r for r in live if quick_possible(r, keys, init)]
    assert check(module_file, rules, CPU) == check(module_file, list(rules), CPU)


@pytest.mark.pure_python
def test_rule_pattern_ids_differ(rules: tuple[Any, ...]) -> None:
    """f09's `$wq`, `$wk`, `$wv` are three pattern objects with one constructor: the case the shared answer is for."""
    f09 = next(r for r in rules if r.id == "f09-fused-qkv")
    assert len({id(b) for b in f09.init}) == 3 and len({b.ctor for b in f09.init}) == 1
    assert all(isinstance(b, BindingPattern) for b in f09.init)
