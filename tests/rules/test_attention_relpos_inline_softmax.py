"""Family 10 and 4 forms of helper `mech25` (issue 20, dev2 batch 2): Transformer-XL relative-position scores
(ESPnet, WeNet, FunASR, chatterbox, NeMo conformers) and a softmax module built inline without `dim`.

The relative-position chain `(q_u·kᵀ + q_v·pᵀ) / c → mask → softmax → dropout → ·v` is found at the content
product and declined: SDPA adds its float mask after scaling, so the positional term would have to be scaled
as well, and in the ESPnet sources the steps sit in a helper (`forward_attention`) the fix does not rewrite.
`nn.Softmax()(scores)` (torch's implicit axis: 1 of a 2-D tensor, the last) is rewritten; the fix is exec'd
next to the original and compared through `adopter.verify.compare.compare` (float32 on CPU, rtol 1e-4 of the
tensor's scale + atol 1e-5 for outputs and 1e-4 for gradients; outputs, input and parameter gradients), after
a strict state-dict load both ways, in eval and train mode (dropout 0), seeds 0 and 1.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attention_harness import findings_of, fixed, load, rules_of, skip_reasons  # noqa: E402

from adopter.verify.compare import compare  # noqa: E402

pytestmark = pytest.mark.torch

RULES = rules_of("f10-manual-attention-sdpa")
SOFTMAX = rules_of("f04-softmax")

# ESPnet's RelPositionMultiHeadedAttention (BSD/Apache, as copied by wenet, funasr, chatterbox), the helper
# inlined into forward: the content and position products summed, then scaled.
RELPOS = """
import math

import torch
from torch import nn


class RelPositionAttention(nn.Module):
    def __init__(self, n_feat, n_head):
        super().__init__()
        self.h = n_head
        self.d_k = n_feat // n_head
        self.linear_q = nn.Linear(n_feat, n_feat)
        self.linear_k = nn.Linear(n_feat, n_feat)
        self.linear_v = nn.Linear(n_feat, n_feat)
        self.linear_pos = nn.Linear(n_feat, n_feat, bias=False)
        self.pos_bias_u = nn.Parameter(torch.randn(self.h, self.d_k))
        self.pos_bias_v = nn.Parameter(torch.randn(self.h, self.d_k))
        self.dropout = nn.Dropout(0.0)

    def forward(self, x, pos_emb, mask):
        b, t, _ = x.shape
        q = self.linear_q(x).view(b, t, self.h, self.d_k)
        k = self.linear_k(x).view(b, t, self.h, self.d_k).transpose(1, 2)
        v = self.linear_v(x).view(b, t, self.h, self.d_k).transpose(1, 2)
        p = self.linear_pos(pos_emb).view(b, t, self.h, self.d_k).transpose(1, 2)
        q_with_bias_u = (q + self.pos_bias_u).transpose(1, 2)
        q_with_bias_v = (q + self.pos_bias_v).transpose(1, 2)
        matrix_ac = torch.matmul(q_with_bias_u, k.transpose(-2, -1))
        matrix_bd = torch.matmul(q_with_bias_v, p.transpose(-2, -1))
        scores = (matrix_ac + matrix_bd) / math.sqrt(self.d_k)
        scores = scores + mask
        attn = torch.softmax(scores, dim=-1)
        attn = self.dropout(attn)
        out = torch.matmul(attn, v)
        return out.transpose(1, 2).reshape(b, t, -1)
"""

# The same chain split as chatterbox (wenet) writes it: forward scores, the inherited `forward_attention` masks
# (fill -inf, softmax, fill 0.0: a fully masked row gives zeros, not SDPA's NaN) and multiplies by v. The chain
# is found on both paths (mech115: the helper's fill after the softmax is read as its guard of fully masked
# rows, `canonical/softmax_guards.py`); the fix is declined for that guard, a step SDPA does not take.
RELPOS_HELPER = """
import math

import torch
from torch import nn


class MultiHeadedAttention(nn.Module):
    def __init__(self, n_head, n_feat):
        super().__init__()
        self.d_k = n_feat // n_head
        self.h = n_head
        self.linear_q = nn.Linear(n_feat, n_feat)
        self.linear_k = nn.Linear(n_feat, n_feat)
        self.linear_v = nn.Linear(n_feat, n_feat)
        self.linear_out = nn.Linear(n_feat, n_feat)
        self.dropout = nn.Dropout(p=0.0)

    def forward_qkv(self, query, key, value):
        n_batch = query.size(0)
        q = self.linear_q(query).view(n_batch, -1, self.h, self.d_k)
        k = self.linear_k(key).view(n_batch, -1, self.h, self.d_k)
        v = self.linear_v(value).view(n_batch, -1, self.h, self.d_k)
        return q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)

    def forward_attention(self, value, scores, mask):
        n_batch = value.size(0)
        if mask.size(2) > 0:
            mask = mask.unsqueeze(1).eq(0)
            scores = scores.masked_fill(mask, -float("inf"))
            attn = torch.softmax(scores, dim=-1).masked_fill(mask, 0.0)
        else:
            attn = torch.softmax(scores, dim=-1)
        p_attn = self.dropout(attn)
        x = torch.matmul(p_attn, value)
        x = x.transpose(1, 2).contiguous().view(n_batch, -1, self.h * self.d_k)
        return self.linear_out(x)


class RelPositionMultiHeadedAttention(MultiHeadedAttention):
    def __init__(self, n_head, n_feat):
        super().__init__(n_head, n_feat)
        self.linear_pos = nn.Linear(n_feat, n_feat, bias=False)
        self.pos_bias_u = nn.Parameter(torch.Tensor(self.h, self.d_k))
        self.pos_bias_v = nn.Parameter(torch.Tensor(self.h, self.d_k))

    def forward(self, query, key, value, mask, pos_emb):
        q, k, v = self.forward_qkv(query, key, value)
        q = q.transpose(1, 2)
        p = self.linear_pos(pos_emb).view(pos_emb.size(0), -1, self.h, self.d_k).transpose(1, 2)
        q_with_bias_u = (q + self.pos_bias_u).transpose(1, 2)
        q_with_bias_v = (q + self.pos_bias_v).transpose(1, 2)
        matrix_ac = torch.matmul(q_with_bias_u, k.transpose(-2, -1))
        matrix_bd = torch.matmul(q_with_bias_v, p.transpose(-2, -1))
        scores = (matrix_ac + matrix_bd) / math.sqrt(self.d_k)
        return self.forward_attention(v, scores, mask)
"""


def _line(source: str, text: str) -> int:
    return next(i for i, ln in enumerate(source.splitlines(), 1) if text in ln)


def test_relative_position_scores_are_found_at_the_content_product_and_declined() -> None:
    found = list(findings_of(RELPOS, RULES))
    assert [f.span.start_line + 1 for f in found] == [_line(RELPOS, "matrix_ac = torch.matmul")]
    assert skip_reasons(RELPOS, RULES) == [
        "an additive term is added before the scale (relative-position scores); rewrite it by hand"]


def test_relative_position_scores_through_the_inherited_helper_are_found_without_a_fix() -> None:
    found = [f for f in findings_of(RELPOS_HELPER, RULES) if f.scope_name.startswith("RelPosition")]
    assert [f.span.start_line + 1 for f in found] == [_line(RELPOS_HELPER, "matrix_ac = torch.matmul")]
    assert skip_reasons(RELPOS_HELPER, RULES) == [
        "the chain has a step SDPA's one call does not take (`masked_fill`); rewrite it by hand"]


# A single-head attention over 2-D tensors (one sequence) whose softmax is an `nn.Softmax()` built inline with
# torch's implicit axis: 1 of a 2-D tensor, the last.
INLINE_SOFTMAX = """
import torch
from torch import nn


class TokenAttention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.dim = dim
        self.scale = dim ** -0.5

    def forward(self, x):
        h = x.view(-1, self.dim)
        q, k, v = self.q(h), self.k(h), self.v(h)
        attn = torch.matmul(q, k.transpose(-2, -1)) * self.scale
        attn = nn.Softmax()(attn)
        return torch.matmul(attn, v)
"""


def test_an_inline_softmax_module_without_dim_is_the_last_axis_of_a_2d_tensor_and_equivalent() -> None:
    new = fixed(INLINE_SOFTMAX, RULES, applied=1)
    assert "scaled_dot_product_attention" in new and "Softmax" not in new, new
    torch.manual_seed(0)
    original = load(INLINE_SOFTMAX, "orig")["TokenAttention"](8)
    rewritten = load(new, "new")["TokenAttention"](8)
    rewritten.load_state_dict(original.state_dict(), strict=True)
    original.load_state_dict(rewritten.state_dict(), strict=True)
    for train in (False, True):
        original.train(train)
        rewritten.train(train)
        for seed in (0, 1):
            torch.manual_seed(seed)
            result = compare(original, rewritten, ((torch.randn(6, 8),), {}), seed=seed, dtype=torch.float32)
            assert result.equivalent, (train, seed, result)


# groundingdino's `func_attention` (SCAN): `nn.Softmax()` of a view-made 2-D tensor, also of a product with a
# parameter that defaults to a number. The 3-D softmax (implicit axis 0) is not the last axis.
FUNCTION = """
import torch
from torch import nn


def func_attention(query, context, smooth=1):
    batch_size, source_len = context.size(0), context.size(1)
    query_len = query.size(1)
    attn = torch.bmm(context, torch.transpose(query, 1, 2))
    attn = attn.view(batch_size * source_len, query_len)
    attn = nn.Softmax()(attn)
    attn = attn.view(batch_size * source_len, query_len)
    attn = nn.Softmax()(attn * smooth)
    three = nn.Softmax()(attn.view(batch_size, source_len, query_len))
    return attn, three
"""


def test_inline_softmax_modules_without_dim_are_found_only_over_the_last_axis() -> None:
    lines = sorted(f.span.start_line + 1 for f in findings_of(FUNCTION, SOFTMAX))
    assert lines == [_line(FUNCTION, "nn.Softmax()(attn)"), _line(FUNCTION, "nn.Softmax()(attn * smooth)")]
