"""A module attribute bound under conditions to a softmax module, a `partial` of softmax or another function,
called in forward: the softmax (and the attention chain through it) is found on its path.

- product-key-memory 0.3.0 `product_key_memory.py` `PKM`:
  `self.gate_activation = nn.Softmax(dim = -1) if not non_competitive_gates else nn.ReLU()`;
- mega-pytorch 0.1.0 `mega_pytorch.py` `SingleHeadedAttention`:
  `self.attn_fn = partial(F.softmax, dim = -1) if not laplacian_attn_fn else LaplacianAttnFn()`;
- granite-tsfm 0.3.2 `tspulse/modeling_tspulse.py`: `if attention_activation == "softmax":
  self.attn_activation_layer = nn.Softmax(dim=-1)` / `elif ...: nn.Sigmoid()`;
- x-transformers 1.42.26 `attend.py` `Attend`: six alternatives (a custom function, `F.sigmoid`, ...,
  `partial(F.softmax, dim = -1)`).
"""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules

HEADER = ("from functools import partial\nimport torch\nimport torch.nn.functional as F\n"
          "from torch import nn, einsum\n\n\n")

PKM = '''
class PKM(nn.Module):
    def __init__(self, dim, non_competitive_gates = False):
        super().__init__()
        self.gate_activation = nn.Softmax(dim = -1) if not non_competitive_gates else nn.ReLU()

    def forward(self, scores):
        attn = self.gate_activation(scores)
        return attn
'''

MEGA = '''
class LaplacianAttnFn(nn.Module):
    def forward(self, x):
        return x


class SingleHeadedAttention(nn.Module):
    def __init__(self, *, dim, laplacian_attn_fn = False):
        super().__init__()
        self.laplacian_attn_fn = laplacian_attn_fn
        self.attn_fn = partial(F.softmax, dim = -1) if not laplacian_attn_fn else LaplacianAttnFn()

    def forward(self, q, k, v):
        scale = q.shape[-1] ** -0.5
        sim = einsum('b i d, b j d -> b i j', q, k) * scale
        attn = self.attn_fn(sim)
        return einsum('b i j, b j d -> b i d', attn, v)
'''

GRANITE = '''
class AttentionGate(nn.Module):
    def __init__(self, d_model, attention_activation = "softmax"):
        super().__init__()
        self.attn_layer = nn.Linear(d_model, d_model)
        if attention_activation == "softmax":
            self.attn_activation_layer = nn.Softmax(dim=-1)
        elif attention_activation == "sigmoid":
            self.attn_activation_layer = nn.Sigmoid()

    def forward(self, inputs):
        attn_weight = self.attn_activation_layer(self.attn_layer(inputs))
        return inputs * attn_weight
'''


def families(code: str) -> list[str]:
    env = Environment("cpu", frozenset(), "2.13.0")
    found = check(analyse(HEADER + code, "m.py"), load_rules().rules, env).findings
    return sorted(f.rule_id for f in found if f.family in (4, 10))


@pytest.mark.parametrize(("code", "expected"), [
    (PKM, ["f04-softmax"]),
    (MEGA, ["f04-softmax", "f10-manual-attention-sdpa"]),
    (GRANITE, ["f04-softmax"]),
], ids=["pkm-module", "mega-partial", "granite-if-elif"])
def test_a_softmax_alternative_is_found(code: str, expected: list[str]) -> None:
    assert families(code) == expected


@pytest.mark.parametrize("code", [
    PKM.replace("nn.Softmax(dim = -1)", "nn.Sigmoid()"),                   # no alternative is a softmax
    MEGA.replace("partial(F.softmax, dim = -1)", "partial(my_softmax, dim = -1)"),  # an unknown function
    MEGA.replace(" if not laplacian_attn_fn else LaplacianAttnFn()", "")
        .replace("self.attn_fn = partial", "self.attn_fn = LaplacianAttnFn()\n        self.other = partial"),
    GRANITE.replace("nn.Softmax(dim=-1)", "nn.Softmax(dim=1)").replace("self.attn_layer(inputs)", "inputs"),
], ids=["sigmoid-or-relu", "unknown-partial", "other-attribute", "softmax-over-another-axis"])
def test_other_alternatives_are_not_softmax_sites(code: str) -> None:
    assert families(code) == []
