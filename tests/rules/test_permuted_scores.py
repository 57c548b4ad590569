"""Attention written in layouts the f10 chain did not read: scores kept in an einsum's own axis order
(`f10-permuted-scores`) and a mask subtracted before the softmax (`f10-manual-attention-sdpa`).

Both recur across packages: Transformer-XL's `"ibnd,jbnd->ijbn"` scores softmaxed over `dim=1` (transformers,
pytorch-pretrained-bert ×3, labml's MHA / ALiBi / Transformer-XL), labml's `"bihd,bjhd->bijh"` (U-Net, NeoX);
`scores - 1e30 * mask` (XLNet, MixMIM) and `w * b - 1e4 * (1 - b)` (pytorch-pretrained-bert's GPT-2). Each is
found without a fix: SDPA takes (batch, heads, length, head_dim) and adds its mask.
"""

from __future__ import annotations

import pytest
from attention_harness import findings_of, rules_of, skip_reasons

from adopter.dsl.types import Rule

PERMUTED = rules_of("f10-permuted-scores")
ALL_F10 = rules_of("f10-manual-attention-sdpa", "f10-transposed-scores", "f10-permuted-scores")

TRANSFO_XL = '''
import torch
from torch import nn


class RelAttention(nn.Module):
    def __init__(self, n_head, d_head, dropatt):
        super().__init__()
        self.n_head = n_head
        self.d_head = d_head
        self.dropatt = nn.Dropout(dropatt)
        self.scale = 1 / (d_head ** 0.5)

    def forward(self, q, k, v, r_term, attn_mask=None):
        ac = torch.einsum(SCORES, (q, k))
        attn_score = ac + r_term
        attn_score = attn_score * self.scale
        if attn_mask is not None:
            attn_score = attn_score.float().masked_fill(attn_mask[:, :, :, None], -1e30).type_as(attn_score)
        attn_prob = nn.functional.softmax(attn_score, dim=DIM)
        attn_prob = self.dropatt(attn_prob)
        return torch.einsum(VALUES, (attn_prob, v))
'''


def _source(scores: str, dim: str, values: str) -> str:
    return TRANSFO_XL.replace("SCORES", repr(scores)).replace("DIM", dim).replace("VALUES", repr(values))


def _sites(source: str, rules: tuple[Rule, ...] = ALL_F10) -> list[tuple[str, int]]:
    return [(f.rule_id, f.span.start_line + 1) for f in findings_of(source, rules)]


@pytest.mark.parametrize(("scores", "dim", "values"), [
    ("ibnd,jbnd->ijbn", "1", "ijbn,jbnd->ibnd"),  # Transformer-XL: (queries, keys, batch, heads)
    ("ibnd,jbnd->ijbn", "-3", "ijbn,jbnd->ibnd"),  # the same axis counted from the end
    ("bihd,bjhd->bijh", "2", "bijh,bjhd->bihd"),  # labml's U-Net: (batch, queries, keys, heads)
    ("bihd,bjhd->bijh", "2", "bijh,bjhd->bhid"),  # the output in yet another order
    ("ibnd,jbnd->ijnb", "1", "ijnb,jbnd->ibnd"),  # batch axes swapped between the two products
])
def test_attention_in_any_axis_order_is_found_without_a_fix(scores: str, dim: str, values: str) -> None:
    source = _source(scores, dim, values)
    assert _sites(source) == [("f10-permuted-scores", 15)]
    reasons = skip_reasons(source, ALL_F10)
    assert len(reasons) == 1 and "no automatic rewrite" in reasons[0]


@pytest.mark.parametrize(("scores", "dim", "values"), [
    ("ibnd,jbnd->ijbn", "0", "ijbn,jbnd->ibnd"),  # softmax over the queries' axis
    ("ibnd,jbnd->ijbn", "2", "ijbn,jbnd->ibnd"),  # over a batch axis
    ("ibnd,jbnd->ijbn", "1", "ijbn,ibnd->jbnd"),  # the values contracted over the queries, not the softmax axis
    ("bihd,bjhd->bijh", "-1", "bijh,bjhd->bihd"),  # softmax over the heads
])
def test_a_softmax_or_product_over_another_axis_is_not_attention(scores: str, dim: str, values: str) -> None:
    assert _sites(_source(scores, dim, values)) == []


GPT2 = '''
import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, n_ctx, scale=False):
        super().__init__()
        self.register_buffer("bias", torch.tril(torch.ones(n_ctx, n_ctx)).view(1, 1, n_ctx, n_ctx))
        self.attn_dropout = nn.Dropout(0.1)

    def forward(self, q, k, v):
        w = torch.matmul(q, k.transpose(-1, -2))
        nd, ns = w.size(-2), w.size(-1)
        b = self.bias[:, :, ns - nd:ns, :ns]
        w = w * b MASK
        w = nn.Softmax(dim=-1)(w)
        w = self.attn_dropout(w)
        return torch.matmul(w, v)
'''


def test_a_subtracted_mask_is_attention_found_without_a_fix() -> None:
    # pytorch-pretrained-bert's GPT-2; its OpenAI-GPT copy writes `+ -1e4 * (1 - b)` and was found before
    source = GPT2.replace("MASK", "- 1e4 * (1 - b)")
    assert _sites(source) == [("f10-manual-attention-sdpa", 13)]
    reasons = skip_reasons(source, ALL_F10)
    assert len(reasons) == 1 and "(`-`)" in reasons[0], reasons
    assert _sites(GPT2.replace("MASK", "+ -1e4 * (1 - b)")) == [("f10-manual-attention-sdpa", 13)]


def test_a_subtraction_after_the_softmax_is_no_mask() -> None:
    # the chain's steps still run in order: a term subtracted from the probabilities is not a mask of the scores
    source = GPT2.replace("w = w * b MASK\n        w = nn.Softmax(dim=-1)(w)",
                          "w = nn.Softmax(dim=-1)(w)\n        w = w - 1e4 * (1 - b)")
    assert _sites(source) == []


def test_a_term_subtracted_from_the_scores_made_from_them_is_no_mask() -> None:
    # `w - w.amax(-2)` changes the softmax over the last axis (and is no mask): as test_attention_sdpa's shift
    source = GPT2.replace("MASK", "- w.amax(dim=-2, keepdim=True)")
    assert _sites(source) == []
