"""Attention scores scaled by several factors one after another (the canonical pass's `_scale_chain`):
reported by f10 without a fix (SDPA takes one `scale`; Adopter does not fold the factors).

- En-transformer 1.5.0 `en_transformer/en_transformer.py` `LinearAttention`: l2-normalised q and k,
  `sim = einsum(...)`, `sim = sim * self.temperature.exp() * self.scale`, softmax, `einsum` with v.
"""

from __future__ import annotations

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules

CODE = '''import torch
import torch.nn.functional as F
from torch import nn, einsum
from einops import rearrange


def l2norm(t):
    return F.normalize(t, dim = -1)


class LinearAttention(nn.Module):
    def __init__(self, dim, dim_head = 64, heads = 8):
        super().__init__()
        self.heads = heads
        self.scale = dim_head ** -0.5
        self.temperature = nn.Parameter(torch.zeros(heads, 1, 1))
        self.to_qkv = nn.Linear(dim, dim_head * heads * 3, bias = False)

    def forward(self, x):
        q, k, v = self.to_qkv(x).chunk(3, dim = -1)
        q, k, v = map(lambda t: rearrange(t, 'b n (h d) -> b h d n', h = self.heads), (q, k, v))
        q, k = map(l2norm, (q, k))

        sim = einsum('b h i n, b h j n -> b h i j', q, k)
        sim = sim * self.temperature.exp() * self.scale

        attn = sim.softmax(dim = -1)

        out = einsum('b h i j, b h j n -> b h i n', attn, v)
        return rearrange(out, 'b h d n -> b n (h d)')
'''


def attention(code: str) -> list[tuple[str, bool, str | None]]:
    env = Environment("cpu", frozenset(), "2.13.0")
    found = check(analyse(code, "m.py"), load_rules().rules, env).findings
    return [(f.rule_id, f.fixable, f.no_fix_reason) for f in found if f.family == 10]


def test_scores_scaled_twice_are_attention_without_a_fix() -> None:
    found = attention(CODE)
    assert [(rule, fixable) for rule, fixable, _ in found] == [("f10-manual-attention-sdpa", False)], found
    assert "several factors" in (found[0][2] or "")


def test_one_scale_keeps_its_fix() -> None:
    one = CODE.replace("sim * self.temperature.exp() * self.scale", "sim * self.scale")
    assert [(rule, fixable) for rule, fixable, _ in attention(one)] == [("f10-manual-attention-sdpa", True)]


def test_twice_scaled_scores_with_a_softmax_over_another_axis_are_not_attention() -> None:
    assert attention(CODE.replace("sim.softmax(dim = -1)", "sim.softmax(dim = -2)")) == []
