"""q/k/v Linears whose widths agree on some path only (issue 20, mech45).

diffusers' `Attention.__init__` (`models/attention_processor.py`) binds the widths to attributes by conditional
expressions:

    self.inner_dim = out_dim if out_dim is not None else dim_head * heads
    self.inner_kv_dim = self.inner_dim if kv_heads is None else dim_head * kv_heads
    self.to_q = nn.Linear(query_dim, self.inner_dim, bias=bias)
    self.to_k = nn.Linear(self.cross_attention_dim, self.inner_kv_dim, bias=bias)
    self.to_v = nn.Linear(self.cross_attention_dim, self.inner_kv_dim, bias=bias)

With `kv_heads` left None the three widths are one: a family-9 site of that path (the processors that project
`hidden_states` three times, 22 in that file). `same_width` compared `self.inner_dim` with
`self.inner_kv_dim` as written and refused; now each attribute stands for each value `__init__` binds it to,
and a site found so has no fix (the fused Linear's width holds on that path only).
"""

from __future__ import annotations

from attention_harness import findings_of, rules_of

from adopter.engine.types import Finding

RULES = rules_of("f09-fused-qkv")

SOURCE = '''
import torch.nn.functional as F
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim, heads, dim_head=64, out_dim=None, kv_heads=None):
        super().__init__()
        self.heads = heads
        self.inner_dim = out_dim if out_dim is not None else dim_head * heads
        self.inner_kv_dim = self.inner_dim if kv_heads is None else dim_head * kv_heads
        self.to_q = nn.Linear(dim, self.inner_dim)
        self.to_k = nn.Linear(dim, self.inner_kv_dim)
        self.to_v = nn.Linear(dim, self.inner_kv_dim)

    def forward(self, x):
        b = x.shape[0]
        q = self.to_q(x).view(b, -1, self.heads, 64).transpose(1, 2)
        k = self.to_k(x).view(b, -1, self.heads, 64).transpose(1, 2)
        v = self.to_v(x).view(b, -1, self.heads, 64).transpose(1, 2)
        return F.scaled_dot_product_attention(q, k, v)
'''


def qkv(code: str) -> list[Finding]:
    return [f for f in findings_of(code, RULES) if f.family == 9]


def line(code: str, needle: str) -> int:
    return next(i for i, text in enumerate(code.splitlines()) if needle in text)


def test_widths_that_agree_when_kv_heads_is_left_none_make_a_site_without_a_fix() -> None:
    found = qkv(SOURCE)
    assert [(f.span.start_line, f.fixable) for f in found] == [(line(SOURCE, "q = self.to_q(x)"), False)]


def test_widths_that_agree_on_no_path_make_no_site() -> None:
    # the value's width is half the model width on every path: one Linear cannot be chunked into the three
    halved = SOURCE.replace("self.inner_kv_dim = self.inner_dim if kv_heads is None else dim_head * kv_heads",
                            "self.inner_kv_dim = dim // 2 if kv_heads is None else dim // 4").replace(
        "self.to_k = nn.Linear(dim, self.inner_kv_dim)", "self.to_k = nn.Linear(dim, self.inner_dim)")
    assert qkv(halved) == []


def test_projections_passed_to_one_call_are_no_fix_either_and_say_why() -> None:
    # three projections in one statement may be fixed when a value depends on the path; a width may not
    code = '''
from torch import nn


class TransformerLayer(nn.Module):
    def __init__(self, c, num_heads, kv_dim=None):
        super().__init__()
        self.kv = c if kv_dim is None else kv_dim
        self.q = nn.Linear(c, c, bias=False)
        self.k = nn.Linear(c, self.kv, bias=False)
        self.v = nn.Linear(c, self.kv, bias=False)
        self.ma = nn.MultiheadAttention(embed_dim=c, num_heads=num_heads)

    def forward(self, x):
        return self.ma(self.q(x), self.k(x), self.v(x))[0] + x
'''
    found = qkv(code)
    assert [(f.fixable, "widths" in (f.no_fix_reason or "")) for f in found] == [(False, True)]
