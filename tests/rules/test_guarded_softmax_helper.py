"""A same-file softmax helper that guards the rows its mask removes entirely (`canonical/softmax_guards.py`).

Shaped on physis-lm 0.2.4 `physis_lm/torch_backend/layers.py` lines 138-146 (`_guarded_softmax(scores,
allow)`: the scores filled where `~allow`, the softmax, then `attn * allow.any(-1, keepdim=True).to(dtype)`)
and lines 201-214 (`local_attention_reference`, a module-level function that calls it between an einsum
product and the product with the values); the NaN guards on rec-pangu 0.4.1
`rec_pangu/models/layers/sequence.py` lines 189-198 (`scores.masked_fill(torch.isnan(scores), 0)` after a
softmax of `-inf`-filled scores) and gliclass 0.1.21 `gliclass/scorers.py` line 376
(`softmax(logits.masked_fill(~valid, -inf)).nan_to_num(0.0)`), rewritten at fixture size. Wherever a row keeps a
score the guard leaves the softmax as it is, so the helper's call is the softmax of the chain (family 10, found
without a fix: the helper's call sits between the chain's steps). Refusals: a product with another factor, a
log-softmax, a softmax over another axis, a fill of other entries, the guard written in the forward itself.
"""

from __future__ import annotations

import pytest
from attention_harness import findings_of, rules_of, skip_reasons

RULES = rules_of("f04-softmax", "f10-manual-attention-sdpa")

GUARD = '''
    neg = torch.finfo(scores.dtype).min
    scores = scores.masked_fill(~allow, neg)
    has_any = allow.any(dim=-1, keepdim=True)
    scores = torch.where(has_any, scores, torch.zeros_like(scores))
    attn = torch.softmax(scores, dim=-1)
    return attn * has_any.to(attn.dtype)
'''

MODULE = '''
import math

import torch
import torch.nn as nn


def _guarded(scores, allow):
    """Softmax over the last dim; rows with no allowed entry give zeros."""
{guard}

class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wq = nn.Linear(c, c)
        self.wk = nn.Linear(c, c)
        self.wv = nn.Linear(c, c)

    def forward(self, x, allow):
        q, k, v = self.wq(x), self.wk(x), self.wv(x)
        scores = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(q.shape[-1])
        attn = _guarded(scores, allow)
        return torch.einsum("bhij,bhjd->bhid", attn, v)


def reference(module, x, allow):
    q, k, v = module.wq(x), module.wk(x), module.wv(x)
    scores = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(q.shape[-1])
    attn = _guarded(scores, allow)
    return torch.einsum("bhij,bhjd->bhid", attn, v)


ORACLES = {"attention": reference}  # named outside its `def` (physis-lm's tests import it)
'''

NAN_FILL = '''
    scores = scores.masked_fill(~allow, float("-inf"))
    probs = scores.softmax(dim=-1)
    return probs.masked_fill(torch.isnan(probs), 0)
'''

NAN_TO_NUM = '''
    return torch.softmax(scores.masked_fill(~allow, float("-inf")), dim=-1).nan_to_num(0.0)
'''

ZERO_FILL = '''
    attn = torch.softmax(scores.masked_fill(~allow, float("-inf")), dim=-1)
    return attn.masked_fill(~allow, 0.0)
'''

KEEP_WHERE = '''
    scores = torch.where(allow, scores, torch.full_like(scores, -1e9))
    attn = torch.softmax(scores, dim=-1)
    return torch.where(allow.any(-1, keepdim=True), attn, 0.0)
'''


def code(guard: str) -> str:
    return MODULE.replace("{guard}", guard.strip("\n"))


def line(source: str, needle: str, nth: int = 0) -> int:
    return [i for i, text in enumerate(source.splitlines()) if needle in text][nth]


def f10(source: str) -> list[int]:
    return sorted(f.span.start_line for f in findings_of(source, RULES) if f.family == 10)


@pytest.mark.parametrize("guard", [GUARD, NAN_FILL, NAN_TO_NUM, ZERO_FILL, KEEP_WHERE],
                         ids=["row-any-product", "isnan-fill", "nan-to-num", "zero-fill", "row-any-where"])
def test_a_guarded_softmax_helper_is_the_softmax_of_the_chain(guard: str) -> None:
    source = code(guard)
    # in the forward (a method: every same-file helper is inlined) and in a module-level function (a small helper)
    assert f10(source) == [line(source, "scores = torch.einsum", 0), line(source, "scores = torch.einsum", 1)]
    assert len(skip_reasons(source, rules_of("f10-manual-attention-sdpa"))) == 2  # detection only


@pytest.mark.parametrize("change", [
    # a per-element scale after the softmax (a temperature map), not a guard
    ("return attn * has_any.to(attn.dtype)", "return attn * allow.to(attn.dtype) * 0.5"),
    # a row factor of another mask than the one the scores were filled with
    ("has_any = allow.any(dim=-1, keepdim=True)\n    scores = torch.where(has_any, scores, torch.zeros_like(scores))",
     "has_any = (scores > 0).any(dim=-1, keepdim=True)"),
    # a log-softmax
    ("attn = torch.softmax(scores, dim=-1)", "attn = torch.log_softmax(scores, dim=-1)"),
    # a softmax over another axis
    ("attn = torch.softmax(scores, dim=-1)", "attn = torch.softmax(scores, dim=-2)"),
    # the product with something added to the probabilities
    ("return attn * has_any.to(attn.dtype)", "return attn * has_any.to(attn.dtype) + 0.1"),
], ids=["element-scale", "other-row-mask", "log-softmax", "other-axis", "added-term"])
def test_near_forms_stay_silent(change: tuple[str, str]) -> None:
    assert len(f10(code(GUARD))) == 2  # the positive twin
    source = code(GUARD.replace(*change))
    assert change[0] in GUARD
    assert f10(source) == []


def test_a_fill_of_other_entries_is_no_guard() -> None:
    other = ZERO_FILL.replace("attn.masked_fill(~allow, 0.0)", "attn.masked_fill(attn < 0.01, 0.0)")
    assert f10(code(other)) == []


INLINE = '''
import math

import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wq = nn.Linear(c, c)
        self.wk = nn.Linear(c, c)
        self.wv = nn.Linear(c, c)

    def forward(self, x, allow):
        q, k, v = self.wq(x), self.wk(x), self.wv(x)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        scores = scores.masked_fill(~allow, float("-inf"))
        attn = torch.softmax(scores, dim=-1)
        attn = attn * allow.any(dim=-1, keepdim=True).to(attn.dtype)
        return attn @ v
'''


def test_the_guard_written_in_the_forward_keeps_its_op() -> None:
    # A fix there would replace the chain and drop the guard's zero rows: not read (left to a rule that can keep it).
    assert f10(INLINE) == []


# rec-pangu 0.4.1 `rec_pangu/models/layers/sequence.py` 182-198: the whole chain in a static helper the forward
# calls, its NaN guard after the softmax (the package's own `scores - scores.max()` shift, a global maximum, left
# out: no shift the chain reads). Found; the fix is declined, so the guard's zero rows are never dropped.
WHOLE = '''
import torch
import torch.nn as nn


class MultiHead(nn.Module):
    def __init__(self, c, d_k):
        super().__init__()
        self.q = nn.Linear(c, c)
        self.k = nn.Linear(c, c)
        self.v = nn.Linear(c, c)
        self.d_k = d_k

    def forward(self, x, mask):
        q, k, v = self.q(x), self.k(x), self.v(x)
        return self.attention(q, k, v, self.d_k, mask)

    @staticmethod
    def attention(q, k, v, d_k, mask):
        scores = torch.matmul(q, k.transpose(-2, -1)) / d_k ** 0.5
        scores = scores.masked_fill(mask == 0, float("-inf"))
        scores = scores.softmax(dim=-1)
        scores = scores.masked_fill(torch.isnan(scores), 0)
        return torch.matmul(scores, v)
'''


def test_a_whole_chain_in_a_helper_with_its_guard_is_found_and_not_fixed() -> None:
    assert f10(WHOLE) == [line(WHOLE, "scores = torch.matmul")]
    reasons = skip_reasons(WHOLE, rules_of("f10-manual-attention-sdpa"))
    assert len(reasons) == 1 and "torch.isnan(scores)" in reasons[0]
    # the same helper without its guard is the plain chain
    assert f10(WHOLE.replace("        scores = scores.masked_fill(torch.isnan(scores), 0)\n", "")) == [
        line(WHOLE, "scores = torch.matmul")]


PAD_FILL = '''
import math

import torch
import torch.nn as nn


def _zero_pads(scores, pad):
    attn = torch.softmax(scores, dim=-1)
    return attn.masked_fill(pad, 0.0)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wq = nn.Linear(c, c)
        self.wk = nn.Linear(c, c)
        self.wv = nn.Linear(c, c)

    def forward(self, x, pad):
        x = x.masked_fill(pad[..., None], 0.0)
        q, k, v = self.wq(x), self.wk(x), self.wv(x)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        attn = _zero_pads(scores, pad)
        return attn @ v
'''


def test_a_mask_that_filled_no_scores_makes_no_guard() -> None:
    # `pad` zeroes the inputs, never the scores: zeroing the probabilities there changes rows that keep scores.
    assert f10(PAD_FILL) == []
    assert f10(PAD_FILL.replace("        x = x.masked_fill(pad[..., None], 0.0)\n", "").replace(
        "scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])",
        "scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(pad, float('-inf'))")) != []
