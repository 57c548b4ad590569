"""Rotary embedding whose rotate_half takes the halves by splitting the last axis as (2, n) and unbinding
that axis (the canonical pass's `unbound_halves`: the same two tensors as `chunk(2, dim=-1)`).

- palm-pytorch 0.2.2 `palm_pytorch.py` (the same helper in flamingo-pytorch 0.1.2 `flamingo_palm.py` and
  toolformer-pytorch 0.0.30 `palm.py`): `rearrange(x, "... (j d) -> ... j d", j=2)`, `x.unbind(dim=-2)`,
  `torch.cat((-x2, x1), dim=-1)`, applied as `(t * pos.cos()) + (rotate_half(t) * pos.sin())`.
"""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules

PALM = '''import torch
from torch import nn, einsum
from einops import rearrange


def rotate_half(x):
    x = rearrange(x, "... (j d) -> ... j d", j=2)
    x1, x2 = x.unbind(dim=-2)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(pos, t):
    return (t * pos.cos()) + (rotate_half(t) * pos.sin())


class ParallelTransformerBlock(nn.Module):
    def __init__(self, dim, dim_head=64, heads=8):
        super().__init__()
        self.heads = heads
        self.to_q = nn.Linear(dim, dim_head * heads, bias=False)
        self.to_k = nn.Linear(dim, dim_head, bias=False)

    def forward(self, x, positions):
        q = rearrange(self.to_q(x), "b n (h d) -> b h n d", h=self.heads)
        k = self.to_k(x)
        q, k = map(lambda t: apply_rotary_pos_emb(positions, t), (q, k))
        return q, k
'''


def rotary(code: str) -> list[str]:
    env = Environment("cpu", frozenset(), "2.13.0")
    return [f.rule_id for f in check(analyse(code, "m.py"), load_rules().rules, env).findings if f.family == 15]


def test_halves_by_einops_split_and_unbind_are_rotate_half() -> None:
    assert rotary(PALM) == ["f15-rope-chunk-single"]


@pytest.mark.parametrize("split", [
    'x.unflatten(-1, (2, -1))',
])
def test_halves_by_unflatten_are_rotate_half(split: str) -> None:
    assert rotary(PALM.replace('rearrange(x, "... (j d) -> ... j d", j=2)', split)) == ["f15-rope-chunk-single"]


@pytest.mark.parametrize("split", [
    # the axis of size 2 is the inner one: interleaved pairs moved in front, not the two halves
    'rearrange(x, "... (d j) -> ... j d", j=2)',
    'x.unflatten(-1, (-1, 2)).transpose(-1, -2)',
    # the split's size is not known to be 2
    'rearrange(x, "... (j d) -> ... j d", j=self.parts)',
], ids=["einops-inner-pair", "unflatten-inner-pair", "unknown-size"])
def test_other_splits_are_not_halves(split: str) -> None:
    assert rotary(PALM.replace('rearrange(x, "... (j d) -> ... j d", j=2)', split)) == []
