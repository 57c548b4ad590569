"""The matcher does not search a forward that has fewer nodes for a rule's required steps than the steps
sharing them: a match binds each required step to a distinct node (`matcher._enough_nodes`). The pair
rope rule (two `neg`s, two `cat`s: q and k rotated) is not searched in a forward that rotates one tensor,
and still finds the pair where both are rotated."""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules
from adopter.engine import matcher as matcher_module

HEADER = '''import torch
from torch import nn


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)

    def forward(self, x, cos, sin):
        q = self.q(x)
        k = self.k(x)
'''
BOTH = HEADER + '''        q = (q * cos) + (rotate_half(q) * sin)
        k = (k * cos) + (rotate_half(k) * sin)
        return q @ k.transpose(-1, -2)
'''
ONE = HEADER + '''        q = (q * cos) + (rotate_half(q) * sin)
        k = k * cos + k * sin
        return q @ k.transpose(-1, -2)
'''
ENV = Environment(device="cuda", packages=frozenset({"liger_kernel"}), torch_version="2.4")


def _searched(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    searched: list[str] = []
    original = matcher_module.RuleMatcher._search

    def counting(self: matcher_module.RuleMatcher, i: int, *args: object) -> object:
        if i == 0:
            searched.append(self.rule.id)
        return original(self, i, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(matcher_module.RuleMatcher, "_search", counting)
    return searched


@pytest.mark.pure_python
def test_the_pair_rule_is_searched_only_where_both_tensors_can_be_rotated(monkeypatch: pytest.MonkeyPatch) -> None:
    rules = [r for r in load_rules().rules if r.id == "f15-rope"]
    assert rules
    searched = _searched(monkeypatch)
    found = check(analyse(ONE, "m.py"), rules, ENV).findings
    assert not [f for f in found if f.rule_id == "f15-rope"]
    assert "f15-rope" not in searched
    found = check(analyse(BOTH, "m.py"), rules, ENV).findings
    assert "f15-rope" in searched  # the same rule, both rotated: searched, and the pair found
    assert [f.rule_id for f in found] == ["f15-rope"]


def test_enough_nodes_counts_required_steps_per_candidate_list() -> None:
    rule = next(r for r in load_rules().rules if r.id == "f15-rope")
    steps = rule.forward
    negs = [i for i, s in enumerate(steps) if any(t == "neg" for _, t in s.targets)]
    assert len(negs) == 2
    cands = [[10 * i, 10 * i + 1] for i in range(len(steps))]
    assert matcher_module._enough_nodes(steps, cands)
    one_neg = [([7] if i in negs else c) for i, c in enumerate(cands)]
    assert not matcher_module._enough_nodes(steps, one_neg)
