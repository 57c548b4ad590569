"""Family 10 forms of helper `mech28` (issue 20): attention written other ways, found and reported without a fix.

- audiocraft's streaming attention: the einsum equation built from locals, the layout chosen by an `if`/`else`
  statement, the keys' layout made by `str.replace`, the query's an alias (`f"{query_layout},{key_layout}->
  b h t k"`). Every path is attention; the axis order differs by path, so one SDPA call cannot stand in.
- open_clip's cosine attention: `bmm(normalize(q), normalize(k)ᵀ)`, the scores unfolded per head for a learned
  logit scale and folded back (`view` around the scale). SDPA's `scale` is a Python float; a per-head tensor
  is not one (and scaling q instead changes the rounding), so no fix.
- A scale that is a local bound to a tensor (`logit_scale = torch.clamp(p, max=m).exp()`) was rewritten to
  `scale=logit_scale`, which SDPA rejects at run time (`argument 'scale' must be float, not Tensor`); declined.

Near forms that must stay silent: a layout choice whose other path is no contraction (an outer product), and
scores flattened for a softmax over every position (`reshape(b, -1)`), not over the keys.
"""

from __future__ import annotations

from attention_harness import findings_of, fixed, rules_of, skip_reasons

RULES = rules_of("f10-manual-attention-sdpa")

LAYOUT_CHOICE = """
import torch
import torch.nn.functional as F
from einops import rearrange
from torch import nn


class StreamingAttention(nn.Module):
    def __init__(self, dim, heads, dropout=0.0):
        super().__init__()
        self.heads = heads
        self.dropout = dropout
        self.in_proj = nn.Linear(dim, 3 * dim)

    def forward(self, x, attn_mask=None, time_dim=2):
        if time_dim == 2:
            layout = "b h t d"
        else:
            layout = "b t h d"
        q, k, v = [rearrange(t, f"b t (h d) -> {layout}", h=self.heads) for t in self.in_proj(x).chunk(3, dim=-1)]
        q = q / q.shape[-1] ** 0.5
        key_layout = layout.replace('t', 'k')
        query_layout = layout
        pre_w = torch.einsum(f"{query_layout},{key_layout}-> b h t k", q, k)
        if attn_mask is not None:
            pre_w = pre_w + attn_mask
        w = torch.softmax(pre_w, dim=-1)
        w = F.dropout(w, self.dropout, training=self.training)
        x = torch.einsum(f"b h t k, {key_layout} -> {layout}", w, v)
        return rearrange(x, f"{layout} -> b t (h d)", h=self.heads)
"""

# The same statements where the other path is an outer product (no head-dim contraction): not attention there,
# so the equation is not read on either path.
LAYOUT_CHOICE_NOT_A_PRODUCT = LAYOUT_CHOICE.replace('layout = "b t h d"', 'layout = "b h t"')

COSINE = """
import torch
import torch.nn.functional as F
from torch import nn


class CosineAttention(nn.Module):
    def __init__(self, dim, num_heads, logit_scale_max=4.6):
        super().__init__()
        self.num_heads = num_heads
        self.in_proj = nn.Linear(dim, 3 * dim)
        self.logit_scale = nn.Parameter(torch.log(10 * torch.ones((num_heads, 1, 1))))
        self.logit_scale_max = logit_scale_max
        self.attn_drop = nn.Dropout(0.0)

    def forward(self, x, attn_mask=None):
        L, N, C = x.shape
        q, k, v = self.in_proj(x).chunk(3, dim=-1)
        q = q.reshape(L, N * self.num_heads, -1).transpose(0, 1)
        k = k.reshape(L, N * self.num_heads, -1).transpose(0, 1)
        v = v.reshape(L, N * self.num_heads, -1).transpose(0, 1)
        attn = torch.bmm(F.normalize(q, dim=-1), F.normalize(k, dim=-1).transpose(-1, -2))
        logit_scale = torch.clamp(self.logit_scale, max=self.logit_scale_max).exp()
        attn = attn.view(N, self.num_heads, L, L) * logit_scale
        attn = attn.view(-1, L, L)
        if attn_mask is not None:
            attn = attn + attn_mask
        attn = attn.softmax(dim=-1)
        attn = self.attn_drop(attn)
        return torch.bmm(attn, v)
"""

# The tensor scale without the views: the chain the rule already matched, rewritten before with the tensor.
COSINE_UNFOLDED = COSINE.replace(
    "attn = attn.view(N, self.num_heads, L, L) * logit_scale\n        attn = attn.view(-1, L, L)",
    "attn = attn * logit_scale")

# Views around a float scale: found, declined (the call would take the product in another layout).
VIEWED = COSINE.replace("F.normalize(q, dim=-1)", "q").replace("F.normalize(k, dim=-1)", "k").replace(
    "logit_scale = torch.clamp(self.logit_scale, max=self.logit_scale_max).exp()",
    "logit_scale = (C // self.num_heads) ** -0.5")

# Every score of a row of heads softmaxed together: flattened, softmaxed, folded back before `· v`.
FLATTENED = """
import torch
from torch import nn


class GlobalSoftmax(nn.Module):
    def forward(self, q, k, v):
        b, n, _ = q.shape
        s = torch.bmm(q, k.transpose(-1, -2))
        s = s.reshape(b, -1) * 0.125
        p = s.softmax(dim=-1)
        p = p.reshape(b, n, n)
        return torch.bmm(p, v)
"""

# A plain-number local scale stays fixable (the binding is read, not only the name).
NUMBER_LOCAL = COSINE_UNFOLDED.replace(
    "logit_scale = torch.clamp(self.logit_scale, max=self.logit_scale_max).exp()",
    "logit_scale = (C // self.num_heads) ** -0.5").replace("F.normalize(q, dim=-1)", "q").replace(
    "F.normalize(k, dim=-1)", "k")


def _line(source: str, text: str) -> int:
    return next(i for i, ln in enumerate(source.splitlines(), 1) if text in ln)


def _tensor_scale(source: str) -> str:
    return ("the scale `logit_scale` is bound to `torch.clamp(self.logit_scale, max=self.logit_scale_max).e...` "
            f"(line {_line(source, 'logit_scale = torch.clamp')}), not a number; SDPA's scale must be a Python float")


def test_an_einsum_equation_built_from_a_layout_chosen_by_if_statements_is_attention_without_a_fix() -> None:
    found = list(findings_of(LAYOUT_CHOICE, RULES))
    assert [f.span.start_line + 1 for f in found] == [_line(LAYOUT_CHOICE, "pre_w = torch.einsum")]
    assert skip_reasons(LAYOUT_CHOICE, RULES) == [
        "the einsum's equation is chosen at run time (`\"b h t d,b h k d-> b h t k\" if time_dim == 2 else "
        "\"b t h d,b k h d-> b h t k\"`), a different axis order on each path; rewrite it by hand"]
    # the near form: the other path's scores are an outer product, so neither path is read as attention
    assert list(findings_of(LAYOUT_CHOICE_NOT_A_PRODUCT, RULES)) == []


def test_cosine_attention_with_a_per_head_logit_scale_is_found_without_a_fix() -> None:
    found = list(findings_of(COSINE, RULES))
    assert [f.span.start_line + 1 for f in found] == [_line(COSINE, "attn = torch.bmm(F.normalize")]
    assert skip_reasons(COSINE, RULES) == [_tensor_scale(COSINE)]


def test_a_scale_bound_to_a_tensor_is_not_passed_as_sdpa_scale_but_one_bound_to_a_number_is() -> None:
    assert skip_reasons(COSINE_UNFOLDED, RULES) == [_tensor_scale(COSINE_UNFOLDED)]
    assert "scale=logit_scale" in fixed(NUMBER_LOCAL, RULES, applied=1)


def test_scores_viewed_around_a_number_scale_are_found_and_declined() -> None:
    found = list(findings_of(VIEWED, RULES))
    assert [f.span.start_line + 1 for f in found] == [_line(VIEWED, "attn = torch.bmm(q")]
    assert skip_reasons(VIEWED, RULES) == [
        "the scores are reshaped between the steps (`attn.view(N, self.num_heads, L, L)`); rewrite it by hand"]
    # the near form: every score of a row flattened and softmaxed together, folded back before `· v`
    assert list(findings_of(FLATTENED, RULES)) == []


TRANSPOSED = rules_of("f10-transposed-scores")

# speechbrain's KeyValueAttention: one query column per batch, scores laid out (keys, queries), the softmax over
# the keys' axis, the probabilities transposed before `· values`.
KEY_VALUE = """
import torch
from torch import nn


class KeyValueAttention(nn.Module):
    def __init__(self, enc_dim, dec_dim, attn_dim, output_dim):
        super().__init__()
        self.key_linear = nn.Linear(enc_dim, attn_dim)
        self.query_linear = nn.Linear(dec_dim, attn_dim)
        self.value_linear = nn.Linear(enc_dim, output_dim)
        self.scaling = torch.sqrt(torch.tensor(attn_dim).float())

    def forward(self, enc_states, dec_states):
        keys = self.key_linear(enc_states)
        values = self.value_linear(enc_states)
        query = self.query_linear(dec_states).unsqueeze(2)
        scores = torch.matmul(keys, query) / self.scaling
        normalized_scores = scores.softmax(1).transpose(1, 2)
        out = torch.matmul(normalized_scores, values).squeeze(1)
        return out, normalized_scores
"""


def test_key_value_attention_with_transposed_scores_is_found_without_a_fix() -> None:
    found = list(findings_of(KEY_VALUE, TRANSPOSED + RULES))
    assert [(f.rule_id, f.span.start_line + 1, f.fixable) for f in found] == [
        ("f10-transposed-scores", _line(KEY_VALUE, "scores = torch.matmul(keys, query)"), False)]
    assert "rewrite it by hand" in found[0].message
    # near forms: the softmax over the queries' axis (the last), or the transpose of another pair of axes
    for near in (KEY_VALUE.replace("softmax(1)", "softmax(-1)"), KEY_VALUE.replace("transpose(1, 2)", "transpose(0, 1)")):
        assert list(findings_of(near, TRANSPOSED + RULES)) == []


# GPT-2's `_upcast_and_reordered_attn` (transformers): the heads folded into the batch for `baddbmm`, the keys
# transposed then reshaped, `beta=0` (the preallocated input ignored), the scores unfolded before the mask.
UPCAST = """
import torch
from torch import nn


class GPT2Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn_dropout = nn.Dropout(0.0)

    def forward(self, query, key, value, attention_mask=None):
        bsz, num_heads, q_seq_len, dk = query.size()
        _, _, k_seq_len, _ = key.size()
        attn_weights = torch.empty(bsz * num_heads, q_seq_len, k_seq_len, dtype=torch.float32, device=query.device)
        scale_factor = 1.0 / float(value.size(-1)) ** 0.5
        q, k = query.reshape(-1, q_seq_len, dk), key.transpose(-1, -2).reshape(-1, dk, k_seq_len)
        attn_weights = torch.baddbmm(attn_weights, q.float(), k.float(), beta=0, alpha=scale_factor)
        attn_weights = attn_weights.reshape(bsz, num_heads, q_seq_len, k_seq_len)
        if attention_mask is not None:
            attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_weights = attn_weights.type(value.dtype)
        attn_weights = self.attn_dropout(attn_weights)
        return torch.matmul(attn_weights, value)
"""


def test_gpt2_upcast_and_reordered_attention_is_found_without_a_fix() -> None:
    found = list(findings_of(UPCAST, RULES))
    assert len(found) == 1
    assert _line(UPCAST, "torch.baddbmm(") - 1 in {s.start_line for s in found[0].stmt_spans}
    assert skip_reasons(UPCAST, RULES) == [
        "the match is written with `baddbmm`; Adopter has no automatic rewrite of that spelling yet"]
    # near form: the same reshaped product softmaxed over the queries' axis is not attention
    near = UPCAST.replace("softmax(attn_weights, dim=-1)", "softmax(attn_weights, dim=-2)")
    assert list(findings_of(near, RULES)) == []
