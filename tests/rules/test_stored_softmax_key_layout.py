"""Attention whose keys come laid out (d, n) and whose softmax is a stored `nn.Softmax` (issue 20, mech44).

transformers' SqueezeBERT (`modeling_squeezebert.py`) projects with `nn.Conv1d` (channels-first, (N, C, W)), splits
the keys' channels into heads with a `view` alone (`(N, H, d, W)`: already kᵀ, no transpose written), takes
`matmul(q, k)` and normalises with `self.softmax = nn.Softmax(dim=-1)`. The canonical pass reads such a product as
`q @ transpose(transpose(k))` when its result reaches a softmax; the prescan that says which names reach one now
counts a call of a stored `nn.Softmax` as it counts `F.softmax`. SqueezeBERT itself runs both products through
`MatMulWrapper`, a module whose forward is `return torch.matmul(mat1, mat2)`: found (the flow inlines the
stateless module), reported without a fix, since the product's statement is the wrapper's, shared by both calls
(the base wrote `scaled_dot_product_attention` into the wrapper's forward).
"""

from __future__ import annotations

import torch
from attention_harness import findings_of, fixed, load, rules_of, skip_reasons

from adopter.engine.types import Finding
from equivalence import compare_modules

RULES = rules_of("f10-manual-attention-sdpa")

CHANNELS_FIRST = '''
import math

import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, cin, heads, p=0.0):
        super().__init__()
        self.num_attention_heads = heads
        self.attention_head_size = cin // heads
        self.all_head_size = cin
        self.query = nn.Conv1d(cin, cin, kernel_size=1)
        self.key = nn.Conv1d(cin, cin, kernel_size=1)
        self.value = nn.Conv1d(cin, cin, kernel_size=1)
        self.dropout = nn.Dropout(p)
        self.softmax = nn.Softmax(dim=-1)

    def transpose_for_scores(self, x):
        new_x_shape = (x.size()[0], self.num_attention_heads, self.attention_head_size, x.size()[-1])
        x = x.view(*new_x_shape)
        return x.permute(0, 1, 3, 2)

    def transpose_key_for_scores(self, x):
        new_x_shape = (x.size()[0], self.num_attention_heads, self.attention_head_size, x.size()[-1])
        x = x.view(*new_x_shape)
        return x

    def forward(self, hidden_states, attention_mask):
        query_layer = self.transpose_for_scores(self.query(hidden_states))
        key_layer = self.transpose_key_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        attention_score = torch.matmul(query_layer, key_layer)
        attention_score = attention_score / math.sqrt(self.attention_head_size)
        if attention_mask is not None:
            attention_score = attention_score + attention_mask
        attention_probs = self.softmax(attention_score)
        attention_probs = self.dropout(attention_probs)
        context_layer = torch.matmul(attention_probs, value_layer)
        context_layer = context_layer.permute(0, 1, 3, 2).contiguous()
        return context_layer.view(context_layer.size()[0], self.all_head_size, context_layer.size()[3])
'''

WRAPPER = '''
class MatMulWrapper(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, mat1, mat2):
        return torch.matmul(mat1, mat2)

'''


def with_wrapper(source: str) -> str:
    """The same attention with both products through a `MatMulWrapper` module, as SqueezeBERT writes it."""
    source = source.replace("\n\nclass SelfAttention", "\n" + WRAPPER + "\nclass SelfAttention")
    source = source.replace("        self.softmax = nn.Softmax(dim=-1)\n",
                            "        self.softmax = nn.Softmax(dim=-1)\n        self.matmul_qk = MatMulWrapper()\n"
                            "        self.matmul_qkv = MatMulWrapper()\n")
    source = source.replace("torch.matmul(query_layer, key_layer)", "self.matmul_qk(query_layer, key_layer)")
    return source.replace("torch.matmul(attention_probs, value_layer)", "self.matmul_qkv(attention_probs, value_layer)")


def attention(code: str) -> list[Finding]:
    return [f for f in findings_of(code, RULES) if f.family == 10]


def line(code: str, needle: str) -> int:
    return next(i for i, text in enumerate(code.splitlines()) if needle in text)


def test_keys_laid_out_d_n_before_a_stored_softmax_are_attention_and_the_fix_is_equivalent() -> None:
    found = attention(CHANNELS_FIRST)
    assert [(f.span.start_line, f.fixable) for f in found] == [(line(CHANNELS_FIRST, "torch.matmul(query_layer"), True)]
    new = fixed(CHANNELS_FIRST, RULES, applied=1)
    assert "key_layer.transpose(-2, -1)" in new and "self.softmax(" not in new
    torch.manual_seed(0)
    original = load(CHANNELS_FIRST, "stored_softmax_orig")["SelfAttention"](16, 4)
    rewritten = load(new, "stored_softmax_new")["SelfAttention"](16, 4)
    mask = torch.zeros(2, 1, 1, 7, dtype=torch.float64)
    mask[..., -2:] = -10000.0
    # float64 on CPU, seed 0, dropout 0: outputs within 1e-9, gradients (inputs, parameters) within 1e-8 (rtol 1e-7)
    compare_modules(original.double(), rewritten.double(),
                    lambda: (torch.randn(2, 16, 7, dtype=torch.float64), mask), atol=1e-9, rtol=1e-7)


def test_through_a_matmul_wrapper_module_the_site_is_found_and_not_rewritten_in_the_wrapper() -> None:
    source = with_wrapper(CHANNELS_FIRST)
    found = attention(source)
    assert len(found) == 1
    assert line(source, "self.matmul_qk(query_layer") <= found[0].span.start_line < line(source, "self.softmax(")
    assert line(source, "self.softmax(") <= found[0].span.end_line
    reasons = skip_reasons(source, RULES)
    assert len(reasons) == 1 and "inside `self.matmul_qk`" in reasons[0]
    # the usual layout (kᵀ written) through the wrapper: found, and not rewritten in the wrapper either
    usual = source.replace("return x\n\n    def forward", "return x.transpose(-1, -2)\n\n    def forward")
    assert len(attention(usual)) == 1
    reasons = skip_reasons(usual, RULES)
    assert len(reasons) == 1 and "inside `self.matmul_qk`" in reasons[0]


def test_near_forms_stay_silent() -> None:
    assert len(attention(CHANNELS_FIRST)) == 1  # the positive twin
    # a stored softmax over another axis than the keys' (the queries' axis of the (n, n) scores)
    assert attention(CHANNELS_FIRST.replace("nn.Softmax(dim=-1)", "nn.Softmax(dim=-2)")) == []
    # a stored module named `softmax` that is not one
    assert attention(CHANNELS_FIRST.replace("nn.Softmax(dim=-1)", "nn.Sigmoid()")) == []
    # the values made from the probabilities themselves
    assert attention(CHANNELS_FIRST.replace("torch.matmul(attention_probs, value_layer)",
                                            "torch.matmul(attention_probs, attention_probs.transpose(-1, -2))")) == []
