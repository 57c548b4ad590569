"""A softmax stored as a partial chosen by flags, its axis held in a local (issue 20, mech44).

x-transformers 2.x `attend.py` (`Attend.__init__`) binds `self.attn_fn` on seven paths (a custom function, sigmoid,
hard, top-k, gumbel, and the softmax with or without an fp32 `dtype`), the softmax written as
`attn_dim = -2 if inverted_attention else -1`, `softmax_fn = partial(F.softmax, dim = attn_dim)` and
`partial(softmax_fn, dtype = torch.float32)`. The init analysis reads a partial of a local partial as the one
partial Python builds, and a keyword held in a local bound to literals as one binding per literal, under its test;
the forward's `self.attn_fn(sim)` is then a softmax over the last axis on its paths (families 4 and 10, found
without a fix, as every path-dependent match).
"""

from __future__ import annotations

import pytest
from attention_harness import findings_of, rules_of, skip_reasons

RULES = rules_of("f04-softmax", "f10-manual-attention-sdpa")

ATTEND = '''
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn, einsum


def exists(v):
    return v is not None


class Attend(nn.Module):
    def __init__(self, *, dropout=0., scale=None, qk_norm=False, sigmoid=False, hard=False,
                 custom_attn_fn=None, inverted_attention=False):
        super().__init__()
        self.scale = scale
        attn_dim = -2 if inverted_attention else -1
        if exists(custom_attn_fn):
            self.attn_fn = custom_attn_fn
        elif sigmoid:
            self.attn_fn = F.sigmoid
        elif hard:
            self.attn_fn = partial(torch.argmax, dim = attn_dim)
        else:
            softmax_fn = partial(F.softmax, dim = attn_dim)
            self.attn_fn = partial(softmax_fn, dtype = torch.float32) if not qk_norm else softmax_fn
        self.attn_dropout = nn.Dropout(dropout)

    def forward(self, q, k, v):
        scale = q.shape[-1] ** -0.5
        sim = einsum('b h i d, b h j d -> b h i j', q, k) * scale
        attn = self.attn_fn(sim)
        attn = attn.type(sim.dtype)
        attn = self.attn_dropout(attn)
        return einsum('b h i j, b h j d -> b h i d', attn, v)
'''


def line(code: str, needle: str) -> int:
    return next(i for i, text in enumerate(code.splitlines()) if needle in text)


def found(code: str) -> list[tuple[int, int]]:
    return sorted({(f.family, f.span.start_line) for f in findings_of(code, RULES)})


def test_a_softmax_partial_over_a_local_axis_through_a_local_partial_is_found_on_its_path() -> None:
    assert found(ATTEND) == [(4, line(ATTEND, "self.attn_fn(sim)")), (10, line(ATTEND, "sim = einsum"))]
    assert len(skip_reasons(ATTEND, rules_of("f10-manual-attention-sdpa"))) == 1  # no fix: a path-dependent match


@pytest.mark.parametrize("change", [
    # the axis a call computes: not read
    ("attn_dim = -2 if inverted_attention else -1", "attn_dim = self.pick_dim(inverted_attention)"),
    # the axis never the last one
    ("attn_dim = -2 if inverted_attention else -1", "attn_dim = -2 if inverted_attention else 1"),
    # a partial of a local holding another function (not a softmax)
    ("softmax_fn = partial(F.softmax, dim = attn_dim)", "softmax_fn = partial(torch.cumsum, dim = attn_dim)"),
], ids=["axis-from-a-call", "axis-never-last", "not-a-softmax"])
def test_near_forms_stay_silent(change: tuple[str, str]) -> None:
    assert len(found(ATTEND)) == 2  # the positive twin
    assert change[0] in ATTEND
    assert found(ATTEND.replace(*change)) == []
