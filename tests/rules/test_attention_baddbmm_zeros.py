"""Family 10 written with `baddbmm` over a zeros tensor (transformers' GPT-NeoX and GPT-NeoX-Japanese `_attn`):
`torch.baddbmm(torch.zeros(...), q, kᵀ, beta=1.0, alpha=1 / norm)` adds β·0, so the scores are the scaled
product alone, as with GPT-2's `beta=0`. Read as an added term before, the chain had one add too many and the
helper method's attention went unreported (oracle, transformers 5.24 `modeling_gpt_neox_japanese.py:267`)."""

from __future__ import annotations

from attention_harness import findings_of, rules_of, skip_reasons

RULES = rules_of("f10-manual-attention-sdpa")

NEOX = """
import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, norm_factor):
        super().__init__()
        self.norm_factor = norm_factor
        self.attention_dropout = nn.Dropout(0.1)

    def forward(self, query, key, value, attention_mask=None):
        return self._attn(query, key, value, attention_mask)

    def _attn(self, query, key, value, attention_mask=None):
        batch_size, num_attention_heads, query_length, attn_head_size = query.size()
        key_length = key.size(-2)
        query = query.view(batch_size * num_attention_heads, query_length, attn_head_size)
        key = key.view(batch_size * num_attention_heads, key_length, attn_head_size)
        attn_scores = torch.zeros(batch_size * num_attention_heads, query_length, key_length, dtype=query.dtype)
        attention_scores = torch.baddbmm(attn_scores, query, key.transpose(1, 2), beta=1.0,
                                         alpha=1.0 / self.norm_factor)
        attention_scores = attention_scores.view(batch_size, num_attention_heads, query_length, -1)
        if attention_mask is not None:
            attention_scores = attention_scores + attention_mask
        attn_weights = nn.functional.softmax(attention_scores, dim=-1)
        attn_weights = self.attention_dropout(attn_weights)
        attn_output = torch.matmul(attn_weights, value)
        return attn_output
"""


def _line(text: str) -> int:
    return next(i for i, ln in enumerate(NEOX.splitlines(), 1) if text in ln)


def test_baddbmm_over_zeros_in_a_helper_method_is_attention_reported_without_a_fix() -> None:
    found = list(findings_of(NEOX, RULES))
    assert len(found) == 1
    lines = {s.start_line + 1 for s in found[0].stmt_spans}
    assert {_line("torch.baddbmm("), _line("torch.matmul(attn_weights")} <= lines
    assert skip_reasons(NEOX, RULES) == [
        "the match is written with `baddbmm`; Adopter has no automatic rewrite of that spelling yet"]


def test_near_form_softmax_over_the_queries_axis_stays_silent() -> None:
    near = NEOX.replace("softmax(attention_scores, dim=-1)", "softmax(attention_scores, dim=-2)")
    assert list(findings_of(near, RULES)) == []
