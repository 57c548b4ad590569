"""Look-alikes of attention that the dev slices' census (docs/notes/mech88.md) found and that are no
attention: a softmax normalised over one axis while the product sums over the other, and an einsum whose
spec contracts no axis of q with one of k. Neither can be one scaled_dot_product_attention call, so family
10 must not report them (the family-4 softmax finding is unaffected).

These are refusals, not a new behaviour: the checker of 2cdbe48 already refuses them; the tests hold the
line against a mechanism that would read "probabilities on the right" or "an einsum of q and k" without
checking which axis is normalised and which is contracted. Each case also checks, with torch, the fact
that makes it no attention.
"""

from __future__ import annotations

import pytest
from attention_harness import findings_of, load, rules_of

torch = pytest.importorskip("torch")

RULES = rules_of("f10-manual-attention-sdpa", "f10-permuted-scores", "f10-transposed-scores")


def _family10(source: str) -> list[int]:
    return [f.span.start_line + 1 for f in findings_of(source, RULES) if f.rule_id.startswith("f10-")]


# Shaped on torchgan 0.1.0, torchgan/layers/selfattention.py:39-64 (fresh5's F5; rewritten, fixture size):
# keys first in the scores, `scores[b, i, j] = k_i . q_j`, a softmax over j (dim=-1), then `bmm(v, attn)`,
# which sums over i: each output column j mixes the values with weights attn[:, i, j] that do not sum to one.
# The SAGAN blocks that are attention (BigGAN's `bmm(g, attn.permute(0, 2, 1))`, the VQGAN block) multiply
# by the transposed probabilities, or normalise over the axis the product sums (dim=1).
COLUMN_SOFTMAX = '''
import torch
from torch import nn
import torch.nn.functional as F


class SelfAttention2d(nn.Module):
    def __init__(self, channels, inner=None):
        super().__init__()
        inner = channels // 8 if inner is None else inner
        self.query = nn.Conv2d(channels, inner, 1)
        self.key = nn.Conv2d(channels, inner, 1)
        self.value = nn.Conv2d(channels, channels, 1)
        self.gamma = nn.Parameter(torch.ones(1))

    def forward(self, x):
        shape = (x.size(0), -1, x.size(2) * x.size(3))
        q = self.query(x).view(shape)
        k = self.key(x).view(shape).permute(0, 2, 1)
        attn = F.softmax(torch.bmm(k, q), dim=-1)
        v = self.value(x).view(shape)
        out = torch.bmm(v, attn).view(x.size())
        return self.gamma * out + x
'''

# The same block multiplying by the transposed probabilities: attention (`(attn @ vᵀ)ᵀ` with the softmax over
# the summed axis), which the checker reports; the control that the refusal above is about the axis.
TRANSPOSED = COLUMN_SOFTMAX.replace("torch.bmm(v, attn)", "torch.bmm(v, attn.permute(0, 2, 1))")


def test_probabilities_normalised_over_the_axis_the_product_keeps_are_no_attention() -> None:
    assert _family10(COLUMN_SOFTMAX) == []


def test_the_same_block_over_the_transposed_probabilities_is_attention() -> None:
    assert _family10(TRANSPOSED) == [20]


def _value_weights_sum(source: str) -> torch.Tensor:
    """The block's output with values all one and no residual: attention returns ones (its weights over the
    values sum to one), whatever the queries and keys."""
    block = load(source, "lookalike")["SelfAttention2d"](16)
    with torch.no_grad():
        block.value.weight.zero_()
        block.value.bias.fill_(1.0)
        x = torch.randn(2, 16, 3, 5, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
        block.double()
        return block(x) - x


def test_the_column_softmax_does_not_weight_the_values_by_a_distribution() -> None:
    column = _value_weights_sum(COLUMN_SOFTMAX)
    rows = _value_weights_sum(TRANSPOSED)
    torch.testing.assert_close(rows, torch.ones_like(rows), rtol=0, atol=1e-12)
    assert (column - 1).abs().max() > 1e-3


# Shaped on crossformer (dev2), crossformer/model/layers/attention.py:18-27 (rewritten, fixture size): the
# scores' spec names the keys' feature axis `d` and the queries' `e`, so the einsum sums each over its own
# operand and multiplies the sums (an outer product of two vectors), contracting nothing between q and k.
# The spec written with one letter (`"b l h e, b s h e -> b h l s"`) is attention, and is reported.
MISMATCHED_SPEC = '''
import torch
from torch import nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, dropout=0.0):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(self, q, k, v):
        B, L, H, E = q.shape
        scale = E ** -0.5
        scores = torch.einsum("b l h e, b s h d -> b h l s", q, k)
        attention = self.dropout(F.softmax(scores * scale, dim=-1))
        out = torch.einsum("b h l s, b s h d -> b l h d", attention, v)
        return out.contiguous()
'''
MATCHED_SPEC = MISMATCHED_SPEC.replace('"b l h e, b s h d -> b h l s"', '"b l h e, b s h e -> b h l s"')


def test_an_einsum_that_contracts_no_axis_of_q_with_k_gives_no_scores() -> None:
    assert _family10(MISMATCHED_SPEC) == []


def test_the_spec_with_one_feature_letter_is_attention() -> None:
    assert _family10(MATCHED_SPEC) == [15]


def test_the_mismatched_spec_is_an_outer_product_of_sums() -> None:
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, 3, 4, 5, generator=g, dtype=torch.float64)
    k = torch.randn(2, 6, 4, 5, generator=g, dtype=torch.float64)
    scores = torch.einsum("b l h e, b s h d -> b h l s", q, k)
    outer = q.sum(-1).permute(0, 2, 1)[..., :, None] * k.sum(-1).permute(0, 2, 1)[..., None, :]
    torch.testing.assert_close(scores, outer, rtol=1e-12, atol=1e-12)
