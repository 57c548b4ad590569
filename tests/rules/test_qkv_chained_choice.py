"""q/k/v projections of one input named twice by a chained assignment (issue 20, mech40).

torchmultimodal's `MultiHeadAttention.forward` (torchmultimodal-nightly `modules/layers/attention.py`):

    k = v = q if kv is None else kv
    q = split_multihead(self.query(q), self.n_head)
    if causal or not self.cache:
        k = split_multihead(self.key(k), self.n_head)
        v = split_multihead(self.value(v), self.n_head)

with `split_multihead` a same-file helper that splits heads by `x.unflatten(-1, (n_head, -1))` and moves them by
a function of another file. On the self-attention path (no `kv`) the three Linears project `q`: family 9, no
fix (the keys and values run under the cache `if`). Three things stood in the way: the second name of a chained
assignment held nothing (`flow.statements`: now a transparent `choose` of the value), the matcher's
"another definition reaches on some path" fallback only followed the latest definition of a chosen value
(`matcher._passed_on_reaches`), and `unflatten` was no head split (`f09-fused-qkv`, `attention_roles`).
"""

from __future__ import annotations

from attention_harness import findings_of, rules_of

from adopter.engine.types import Finding

RULES = rules_of("f09-fused-qkv")

SOURCE = '''
import torch
from torch import nn
from elsewhere import shift_dim


class MultiHeadAttention(nn.Module):
    def __init__(self, dim_q, dim_kv, n_head, attn_module):
        super().__init__()
        self.n_head = n_head
        self.query = nn.Linear(dim_q, dim_q)
        self.key = nn.Linear(dim_kv, dim_q)
        self.value = nn.Linear(dim_kv, dim_q)
        self.output = nn.Linear(dim_q, dim_q)
        self.attn = attn_module
        self.cache = None

    def forward(self, q, kv=None, causal=False):
        k = v = q if kv is None else kv
        q = split_multihead(self.query(q), self.n_head)
        if causal or not self.cache:
            k = split_multihead(self.key(k), self.n_head)
            v = split_multihead(self.value(v), self.n_head)
        return self.output(merge_multihead(self.attn(q, k, v)))


def split_multihead(x, n_head):
    x = x.unflatten(-1, (n_head, -1))
    x = shift_dim(x, -2, 1)
    return x


def merge_multihead(x):
    return shift_dim(x, 1, -2).flatten(start_dim=-2)
'''


def qkv(code: str) -> list[Finding]:
    return [f for f in findings_of(code, RULES) if f.family == 9]


def line(code: str, needle: str) -> int:
    return next(i for i, text in enumerate(code.splitlines()) if needle in text)


def test_projections_of_a_chained_choice_are_one_site_on_the_self_attention_path() -> None:
    found = qkv(SOURCE)
    assert [(f.span.start_line, f.fixable) for f in found] == [(line(SOURCE, "self.query(q)"), False)]
    # the same with the split written out: the chained name alone (no helper, no unflatten)
    plain = SOURCE.replace("split_multihead(self.query(q), self.n_head)", "self.query(q)").replace(
        "split_multihead(self.key(k), self.n_head)", "self.key(k)").replace(
        "split_multihead(self.value(v), self.n_head)", "self.value(v)").replace(
        "self.output(merge_multihead(self.attn(q, k, v)))", "self.attn(q, k, v)")
    assert len(qkv(plain)) == 1


def test_projections_of_two_different_values_named_by_a_chain_are_not_a_site() -> None:
    assert len(qkv(SOURCE)) == 1  # the positive twin
    # keys and values of the other input only (cross-attention): the query projects another tensor
    cross = SOURCE.replace("k = v = q if kv is None else kv", "k = v = kv")
    assert qkv(cross) == []
    # the second name of the chain rebound before the value projection reads it
    rebound = SOURCE.replace("            v = split_multihead(self.value(v), self.n_head)",
                             "            v = kv * 2\n            v = split_multihead(self.value(v), self.n_head)")
    assert qkv(rebound) == []
    # a head count unflattened out of another axis is no head split, and nothing else makes them q, k, v
    other_axis = SOURCE.replace("x.unflatten(-1, (n_head, -1))", "x.unflatten(0, (n_head, -1))").replace(
        "return self.output(merge_multihead(self.attn(q, k, v)))", "return q.sum() + k.mean() + v.amax()")
    assert qkv(other_axis) == []
