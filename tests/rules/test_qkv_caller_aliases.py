"""q/k/v projections of three forward parameters that a same-file caller passes one tensor for (issue 20, mech45).

SAM's `Attention.forward(self, q, k, v)` (sam2 `modeling/sam/transformer.py`, its copies in ultralytics,
controlnet-aux, monai) projects each argument with its own Linear; `TwoWayAttentionBlock` calls its
self-attention instance as `self.self_attn(q=queries, k=queries, v=queries)`. For that call the three are
one input's projections (family 9); the class's cross-attention instances pass different tensors, so the site
is reported in the callee without a fix, saying which call makes it one (`engine.caller_aliases`).
"""

from __future__ import annotations

from attention_harness import findings_of, rules_of

from adopter.engine.types import Finding

RULES = rules_of("f09-fused-qkv")

SOURCE = '''
import torch.nn.functional as F
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.q_proj = nn.Linear(dim, dim)
        self.k_proj = nn.Linear(dim, dim)
        self.v_proj = nn.Linear(dim, dim)

    def _separate_heads(self, x, num_heads):
        b, n, c = x.shape
        x = x.reshape(b, n, num_heads, c // num_heads)
        return x.transpose(1, 2)

    def forward(self, q, k, v):
        q = self.q_proj(q)
        k = self.k_proj(k)
        v = self.v_proj(v)
        q = self._separate_heads(q, self.heads)
        k = self._separate_heads(k, self.heads)
        v = self._separate_heads(v, self.heads)
        return F.scaled_dot_product_attention(q, k, v)


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.self_attn = Attention(dim, heads)
        self.cross_attn = Attention(dim, heads)

    def forward(self, queries, keys, query_pe):
        queries = self.self_attn(q=queries, k=queries, v=queries)
        q = queries + query_pe
        queries = queries + self.self_attn(q=q, k=q, v=queries)
        return self.cross_attn(q=queries, k=keys, v=keys)
'''


def qkv(code: str) -> list[Finding]:
    return [f for f in findings_of(code, RULES) if f.family == 9]


def line(code: str, needle: str) -> int:
    return next(i for i, text in enumerate(code.splitlines()) if needle in text)


def test_a_caller_passing_one_tensor_three_times_makes_a_site_in_the_callee_without_a_fix() -> None:
    found = qkv(SOURCE)
    assert [(f.scope_name, f.span.start_line, f.fixable) for f in found] == [
        ("Attention", line(SOURCE, "q = self.q_proj(q)"), False)]
    reason = found[0].no_fix_reason or ""
    assert "Block" in reason and f"line {line(SOURCE, 'k=queries, v=queries') + 1}" in reason


def test_positional_arguments_count_too() -> None:
    positional = SOURCE.replace("self.self_attn(q=queries, k=queries, v=queries)", "self.self_attn(queries, queries, queries)")
    assert len(qkv(positional)) == 1


def test_callers_sharing_a_tensor_for_two_parameters_only_make_no_site() -> None:
    # `(q, q, queries)` and `(queries, keys, keys)`: q and k are one tensor at one call, k and v at another,
    # q, k and v at none
    two = SOURCE.replace("queries = self.self_attn(q=queries, k=queries, v=queries)\n", "").replace(
        "return self.cross_attn(q=queries, k=keys, v=keys)", "return self.self_attn(q=queries, k=keys, v=keys)")
    assert qkv(two) == []
