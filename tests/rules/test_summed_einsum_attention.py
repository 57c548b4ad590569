"""Grouped-query scores summed over the groups, written with einops' `einsum` (issue 20, mech35).

bitnet 0.2.5 `bitnet/bit_attention.py` (and zetascale's `multi_grouped_attn.py`, both copies of one
grouped-query helper): `query = rearrange(query, "b (h g) n d -> b g h n d", g=G)`, then `similarity =
einsum(query, key, "b g h n d, b h s d -> b h n s")` on one path and `einsum(query, key, "b h n d, b h s d -> b h
n s")` on the other, then one mask, softmax and product with the values. The grouped equation sums `g`, an axis
of the queries alone, away: it is the product of the queries summed over `g` (`canonical.normalise.summed_axes`).
So the chain is found on both paths, one site at the first product, reported without an automatic fix (one SDPA
call would need the queries summed first: `attention_sdpa` says so).
"""

from __future__ import annotations

from attention_harness import findings_of, rules_of, skip_reasons

from adopter.engine.types import Finding

HEADER = ("import torch\nimport torch.nn.functional as F\nfrom torch import nn\n"
          "from einops import einsum, rearrange\n\n\n")

GQA = '''
def scaled_dot_product_gqa(query, key, value, grouped=True):
    scale = query.size(-1) ** 0.5
    query = rearrange(query, "b n h d -> b h n d")
    key = rearrange(key, "b s h d -> b h s d")
    value = rearrange(value, "b s h d -> b h s d")
    if grouped:
        query = rearrange(query, "b (h g) n d -> b g h n d", g=2)
        similarity = einsum(query, key, "b g h n d, b h s d -> b h n s")
    else:
        similarity = einsum(query, key, "b h n d, b h s d -> b h n s")
    attention = F.softmax(similarity / scale, dim=-1)
    out = einsum(attention, value, "b h n s, b h s d -> b h n d")
    return rearrange(out, "b h n d -> b n h d")


class Attention(nn.Module):
    def forward(self, q, k, v):
        return scaled_dot_product_gqa(q, k, v)
'''


RULES = rules_of("f10-manual-attention-sdpa")


def attention(code: str) -> list[Finding]:
    return [f for f in findings_of(HEADER + code, RULES) if f.family == 10]


def line(code: str, needle: str) -> int:
    return next(i for i, text in enumerate((HEADER + code).splitlines()) if needle in text)


def test_grouped_scores_summed_over_the_groups_are_one_site_at_the_grouped_product() -> None:
    found = attention(GQA)
    assert [f.span.start_line for f in found] == [line(GQA, '"b g h n d, b h s d -> b h n s"')]
    reasons = skip_reasons(HEADER + GQA, RULES)
    assert len(reasons) == 1 and "sums an axis of one operand away" in reasons[0]
    # Near forms, silent: the summed product alone (no softmax, no product with the values), and an axis of
    # the queries summed away by a product that is no q·kᵀ (the output keeps the contracted axis).
    alone = GQA.replace("attention = F.softmax(similarity / scale, dim=-1)", "return similarity")
    assert attention(alone) == []
    other = GQA.replace('"b g h n d, b h s d -> b h n s"', '"b g h n d, b h s d -> b h n d"')
    assert [f.span.start_line for f in attention(other)] == [line(other, '"b h n d, b h s d -> b h n s"')]
