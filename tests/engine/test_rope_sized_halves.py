"""Rotary embedding whose rotate_half takes the halves by a `view` / `reshape` that writes the tensor's own
leading sizes and splits the last axis as (2, n), then unbinds that axis (`sized_splits`: the same two tensors as
`chunk(2, dim=-1)`, since torch's row-major reshape puts the first half of the last axis in row 0).

Shaped on (the code rewritten at fixture size):
- ai2-olmo 0.6.0 `olmo/model.py` 294-301: `RotaryEmbedding.rotate_half` unpacks `B, nh, T, hs = x.size()`, views
  `x.view(B, nh, T, 2, hs // 2)`, `x.unbind(dim=-2)`, `torch.cat((-x2, x1), dim=-1)`; `apply_rotary_pos_emb` is
  `((t * pos_cos) + (self.rotate_half(t) * pos_sin)).to(t.dtype)`, called by `forward` for q and for k.
- neuraloperator 2.0.0 `neuralop/layers/embeddings.py` 388-406: `rotate_half` is `x.reshape(*x.shape[:-1], 2, -1)`,
  `unbind(dim=-2)`, `cat((-x2, x1), dim=-1)`; `apply_rotary_pos_emb(t, freqs)` is
  `(t * freqs.cos()) + (rotate_half(t) * freqs.sin())`.
- diffusers 0.31.0 `diffusers/models/embeddings.py` 729 (`apply_rotary_emb` at `use_real_unbind_dim=-2`, Stable Audio):
  `x.reshape(*x.shape[:-1], 2, -1).unbind(-2)` then `torch.cat([-x_imag, x_real], dim=-1)`.
"""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules

OLMO = '''import torch
from torch import nn


class RotaryEmbedding(nn.Module):
    def rotate_half(self, x):
        B, nh, T, hs = x.size()
        x = x.view(B, nh, T, 2, hs // 2)
        x1, x2 = x.unbind(dim=-2)
        return torch.cat((-x2, x1), dim=-1)

    def apply_rotary_pos_emb(self, pos_sin, pos_cos, t):
        return ((t * pos_cos) + (self.rotate_half(t) * pos_sin)).to(t.dtype)

    def forward(self, q, k, pos_sin, pos_cos):
        q_ = self.apply_rotary_pos_emb(pos_sin[:, :, -q.shape[-2]:, :], pos_cos[:, :, -q.shape[-2]:, :], q)
        k_ = self.apply_rotary_pos_emb(pos_sin, pos_cos, k)
        return q_, k_
'''

NEURALOP = '''import torch
from torch import nn


def rotate_half(x):
    x = x.reshape(*x.shape[:-1], 2, -1)
    x1, x2 = x.unbind(dim=-2)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(t, freqs):
    return (t * freqs.cos()) + (rotate_half(t) * freqs.sin())


class Attention(nn.Module):
    def forward(self, q, k, freqs):
        return apply_rotary_pos_emb(q, freqs), apply_rotary_pos_emb(k, freqs)
'''

DIFFUSERS = '''import torch


def apply_rotary_emb(x, cos, sin):
    x_real, x_imag = x.reshape(*x.shape[:-1], 2, -1).unbind(-2)
    x_rotated = torch.cat([-x_imag, x_real], dim=-1)
    return (x.float() * cos + x_rotated.float() * sin).to(x.dtype)
'''


def rotary(code: str) -> list[tuple[str, int]]:
    env = Environment("cpu", frozenset(), "2.13.0")
    return [(f.rule_id, f.span.start_line + 1) for f in check(analyse(code, "m.py"), load_rules().rules, env).findings
            if f.family == 15]


def test_view_with_unpacked_sizes_is_rotate_half() -> None:
    assert rotary(OLMO) == [("f15-rope-chunk-single", 13)]


def test_reshape_with_leading_shape_is_rotate_half() -> None:
    assert rotary(NEURALOP) == [("f15-rope-chunk-single", 12)]


def test_size_call_sliced_is_the_same_split() -> None:
    assert rotary(NEURALOP.replace("*x.shape[:-1]", "*x.size()[:-1]")) == [("f15-rope-chunk-single", 12)]


def test_reshape_then_unbind_in_one_statement() -> None:
    assert rotary(DIFFUSERS) == [("f15-rope-chunk-single", 5)]  # at the split, as the unbind(-1) branch


@pytest.mark.parametrize(("old", "new"), [
    # pairs on the inner axis (interleaved), not the two halves
    ("x.reshape(*x.shape[:-1], 2, -1)", "x.reshape(*x.shape[:-1], -1, 2)"),
    # the leading sizes of another tensor: not known to be x's own
    ("x.reshape(*x.shape[:-1], 2, -1)", "x.reshape(*freqs_like.shape[:-1], 2, -1)"),
    # all but the last two sizes: the split is not of the last axis
    ("x.reshape(*x.shape[:-1], 2, -1)", "x.reshape(*x.shape[:-2], 2, -1)"),
    # a split of three
    ("x.reshape(*x.shape[:-1], 2, -1)", "x.reshape(*x.shape[:-1], 3, -1)"),
], ids=["inner-pair", "other-tensor", "two-axes-off", "three-parts"])
def test_other_reshapes_are_not_halves(old: str, new: str) -> None:
    code = NEURALOP.replace("def rotate_half(x):", "def rotate_half(x, freqs_like=None):").replace(old, new)
    assert rotary(code) == []


@pytest.mark.parametrize(("old", "new"), [
    # fewer leading sizes than the tensor has: the split is not of its last axis
    ("x.view(B, nh, T, 2, hs // 2)", "x.view(B, nh, 2, T * hs // 2)"),
    # the sizes in another order
    ("x.view(B, nh, T, 2, hs // 2)", "x.view(nh, B, T, 2, hs // 2)"),
    # the sizes read off a tensor bound again since
    ("        x = x.view(B, nh, T, 2, hs // 2)", "        x = x.transpose(1, 2)\n        x = x.view(B, nh, T, 2, hs // 2)"),
    # a size rebound in between
    ("        x = x.view(B, nh, T, 2, hs // 2)", "        T = hs\n        x = x.view(B, nh, T, 2, hs // 2)"),
], ids=["fewer-sizes", "reordered", "tensor-rebound", "size-rebound"])
def test_views_not_keeping_the_leading_sizes_are_not_halves(old: str, new: str) -> None:
    assert old in OLMO
    assert rotary(OLMO.replace(old, new)) == []


def test_a_swap_without_negation_is_not_rotary() -> None:
    assert rotary(NEURALOP.replace("torch.cat((-x2, x1), dim=-1)", "torch.cat((x2, x1), dim=-1)")) == []
