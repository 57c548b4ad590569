"""Attention in einsum form where keys and values are shared by all query heads (multi-query attention),
also with the equation built by an f-string from a local the keys' rank chooses.

- palm-pytorch 0.2.2 `palm_pytorch.py` (the same lines in PaLM-rlhf-pytorch 0.8.0 `attention.py`,
  toolformer-pytorch 0.0.30 `palm.py`, memorizing-transformers-pytorch 0.4.1):
  `einsum("b h i d, b j d -> b h i j", q, k)` ... `einsum("b h i j, b j d -> b h i d", attn, v)`;
- MEGABYTE-pytorch 0.3.6 `attend.py` (also soundstorm-pytorch 0.6.1, x-transformers 1.42.26,
  block-recurrent-transformer-pytorch 0.4.4): `kv_einsum_eq = 'b j d' if k.ndim == 3 else 'b h j d'`,
  `einsum(f"b h i d, {kv_einsum_eq} -> b h i j", q, k)`.

Both are the matrix products of attention with the keys unsqueezed at the heads' axis; they are reported
without an automatic fix (scaled_dot_product_attention takes 4-D keys).
"""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.analysis.canonical.normalise import (
    broadcast_product,
    chosen_equation,
    layouts_by_path,
    matmul_plan,
)
from adopter.engine import Environment, check, load_rules

HEADER = "import torch\nfrom torch import nn, einsum\nfrom einops import rearrange\n\n\n"

PALM = '''
class Attention(nn.Module):
    def __init__(self, dim, dim_head=64, heads=8):
        super().__init__()
        self.heads = heads
        self.scale = dim_head ** -0.5
        self.to_q = nn.Linear(dim, dim_head * heads, bias=False)
        self.to_kv = nn.Linear(dim, dim_head * 2, bias=False)

    def forward(self, x, causal_mask):
        q, (k, v) = self.to_q(x), self.to_kv(x).chunk(2, dim=-1)
        q = rearrange(q, "b n (h d) -> b h n d", h=self.heads)
        q = q * self.scale
        sim = einsum("b h i d, b j d -> b h i j", q, k)
        sim = sim.masked_fill(causal_mask, -torch.finfo(sim.dtype).max)
        attn = sim.softmax(dim=-1)
        out = einsum("b h i j, b j d -> b h i d", attn, v)
        return rearrange(out, "b h n d -> b n (h d)")
'''

MEGABYTE = '''
class Attend(nn.Module):
    def __init__(self, causal=False, dropout=0.):
        super().__init__()
        self.attn_dropout = nn.Dropout(dropout)

    def forward(self, q, k, v, mask=None):
        scale = q.shape[-1] ** -0.5
        kv_einsum_eq = 'b j d' if k.ndim == 3 else 'b h j d'
        sim = einsum(f"b h i d, {kv_einsum_eq} -> b h i j", q, k) * scale
        attn = sim.softmax(dim=-1)
        attn = self.attn_dropout(attn)
        out = einsum(f"b h i j, {kv_einsum_eq} -> b h i d", attn, v)
        return out
'''


def attention_findings(code: str) -> list[str]:
    env = Environment("cpu", frozenset(), "2.13.0")
    found = check(analyse(HEADER + code, "m.py"), load_rules().rules, env).findings
    return [f.rule_id for f in found if f.family == 10]


@pytest.mark.parametrize("code", [PALM, MEGABYTE], ids=["palm-multi-query", "megabyte-f-string"])
def test_shared_key_attention_is_found(code: str) -> None:
    assert attention_findings(code) == ["f10-manual-attention-sdpa"]


@pytest.mark.parametrize("code", [
    # the second product contracts another axis than the scores' keys: not probabilities times values
    PALM.replace('"b h i j, b j d -> b h i d", attn, v', '"b h i j, b i d -> b h j d", attn, v'),
    # the local holds two different equations over the function (rebound): no constant is substituted
    MEGABYTE.replace("        attn = sim.softmax(dim=-1)\n",
                     "        attn = sim.softmax(dim=-1)\n        kv_einsum_eq = 'b h d j'\n"),
    # a placeholder that is an expression, not a local constant
    MEGABYTE.replace("{kv_einsum_eq} -> b h i d", "{self.eq} -> b h i d"),
], ids=["other-contraction", "rebound-local", "attribute-placeholder"])
def test_other_einsums_are_not_attention(code: str) -> None:
    assert attention_findings(code) == []


def test_the_equations() -> None:
    assert broadcast_product('"b h i d, b j d -> b h i j"') == ('"bhid, bhjd -> bhij"', ((), (1,)))
    assert broadcast_product('"b h i j, b j d -> b h i d"') == ('"bhij, bhjd -> bhid"', ((), (1,)))
    assert broadcast_product('"b h i d, b h j d -> b h i j"') is None  # nothing broadcast
    assert broadcast_product('"b h i d, h b j d -> b h i j"') is None  # batch axes in another order
    assert broadcast_product('"... i d, ... j d -> ... i j"') is None
    choice = "'b h i d, b j d -> b h i j' if k.ndim == 3 else 'b h i d, b h j d -> b h i j'"
    assert chosen_equation(choice) == "'b h i d, b h j d -> b h i j'"
    assert chosen_equation("'b h i d, b j d -> b h i j' if k.ndim == 3 else 'b h i d, b h d j -> b h i j'") is None
    # two products in different axis orders (audiocraft): the one on the path where the test holds (the fix
    # declines it)
    other = "'b h t d,b h k d-> b h t k' if time_dim == 2 else 'b t h d,b k h d-> b h t k'"
    assert chosen_equation(other) == "'b h t d,b h k d-> b h t k'"
    assert layouts_by_path(other) and not layouts_by_path(choice)
    # a product on one path only (an outer product on the other): neither is read
    assert chosen_equation("'b h i d, b h j d -> b h i j' if k.ndim == 3 else 'b h i, b h j -> b h i j'") is None
    assert matmul_plan(choice) is None  # a chosen equation is not one literal (the fix declines it)
