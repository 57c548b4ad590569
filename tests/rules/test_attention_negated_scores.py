"""Attention over negated scores, `softmax(rowmax(s) - s)` (`f10-negated-scores`, helper mech104).

DANet's channel attention module flattens a feature map to (B, C, HW), takes the Gram matrix of the channels and
softmaxes its row maximum minus it before the product with the values. Softmax over the last axis ignores a
constant per row, so that is `softmax(-s)`: attention with the scale -1. The census (docs/notes/mech104.md)
found the form in four dev packages (boxmot, pytorchcv, pywick, super-image); base found only the softmax (f04).
Found without a fix. Refused: a maximum over another axis or without keepdim, the maximum of another tensor, a
softmax over another axis, and the usual stable shift the other way round (that is the plain chain's).
"""

from __future__ import annotations

import pytest
import torch
from attention_harness import findings_of

from adopter.dsl.types import Rule
from adopter.engine import load_rules

F10: tuple[Rule, ...] = tuple(r for r in load_rules().rules if r.family == 10)
F04: tuple[Rule, ...] = tuple(r for r in load_rules().rules if r.family == 4)

# boxmot 25.0.0 reid/backbones/common/attention.py:232-253 (CAM_Module.forward) and super-image 0.2.0
# super_image/models/han/modeling_han.py:42-63 (LAM_Module), in other words
BOXMOT = '''
import torch
from torch import nn


class ChannelAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.gamma = nn.Parameter(torch.zeros(1))
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, x):
        b, c, h, w = x.size()
        query = x.view(b, c, -1)
        key = x.view(b, c, -1).permute(0, 2, 1)
        energy = torch.bmm(query, key)
        energy_new = ROWMAX - energy
        attention = self.softmax(energy_new)
        value = x.view(b, c, -1)
        out = torch.bmm(attention, value).view(b, c, h, w)
        return self.gamma * out + x
'''

# pytorchcv 0.0.74 pytorchcv/models/danet.py:99-113 (ChaAttBlock.forward), in other words: the maximum unpacked
# into values and indices with numpy's `keepdims` spelling, the keys transposed by `transpose(1, 2)`
PYTORCHCV = '''
import torch
from torch import nn


class ChannelBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, x):
        batch, channels, height, width = x.shape
        q = x.view((batch, -1, height * width))
        k = x.view((batch, -1, height * width))
        v = x.view((batch, -1, height * width))
        energy = q.bmm(k.transpose(1, 2).contiguous())
        energy_max, _ = energy.max(dim=-1, keepdims=True)
        energy_new = energy_max.expand_as(energy) - energy
        w = self.softmax(energy_new)
        y = w.bmm(v)
        return y.reshape((batch, -1, height, width)) + x
'''

# pywick 0.6.5 pywick/models/segmentation/danet.py:91-102 (_ChannelAttentionModule.forward), in other words
PYWICK = '''
import torch
from torch import nn


class ChannelModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.beta = nn.Parameter(torch.zeros(1))
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, x):
        batch_size, _, height, width = x.size()
        feat_a = x.view(batch_size, -1, height * width)
        feat_a_transpose = x.view(batch_size, -1, height * width).permute(0, 2, 1)
        attention = torch.bmm(feat_a, feat_a_transpose)
        attention_new = torch.max(attention, dim=-1, keepdim=True)[0].expand_as(attention) - attention
        attention = self.softmax(attention_new)
        feat_e = torch.bmm(attention, feat_a).view(batch_size, -1, height, width)
        return self.beta * feat_e + x
'''


def _sites(source: str, rules: tuple[Rule, ...] = F10) -> list[tuple[str, int, bool]]:
    return [(f.rule_id, f.span.start_line + 1, f.fixable) for f in findings_of(source, rules)]


@pytest.mark.parametrize("rowmax", [
    "torch.max(energy, -1, keepdim=True)[0].expand_as(energy)",  # boxmot, super-image as written
    "torch.max(energy, -1, keepdim=True)[0]",  # broadcast by the subtraction itself
    "energy.amax(-1, keepdim=True)",
    "energy.max(dim=-1, keepdim=True).values.detach()",
])
def test_channel_attention_over_the_row_maximum_minus_the_scores_is_found_without_a_fix(rowmax: str) -> None:
    assert _sites(BOXMOT.replace("ROWMAX", rowmax)) == [("f10-negated-scores", 15, False)]


def test_the_maximum_unpacked_with_numpy_s_keepdims_spelling_is_found() -> None:
    assert _sites(PYTORCHCV) == [("f10-negated-scores", 16, False)]


def test_keys_permuted_in_their_own_statement_are_found() -> None:
    assert _sites(PYWICK) == [("f10-negated-scores", 15, False)]


def test_the_softmax_is_still_family_4() -> None:
    assert _sites(BOXMOT.replace("ROWMAX", "torch.max(energy, -1, keepdim=True)[0]"), F04) == [
        ("f04-softmax", 18, False)]


@pytest.mark.parametrize(("source", "why"), [
    (BOXMOT.replace("ROWMAX", "torch.max(energy, 1, keepdim=True)[0].expand_as(energy)"),
     "the maximum over the other axis is no constant of the softmax's rows"),
    (BOXMOT.replace("ROWMAX", "torch.max(energy, -1)[0].unsqueeze(1).expand_as(energy)"),
     "without keepdim the maximum is not kept as (…, 1): not read as a row maximum"),
    (BOXMOT.replace("ROWMAX", "torch.max(query, -1, keepdim=True)[0]"),
     "the maximum of another tensor"),
    (BOXMOT.replace("ROWMAX", "torch.max(energy, -1, keepdim=True)[1]"),
     "the indices, not the values"),
    (BOXMOT.replace("nn.Softmax(dim=-1)", "nn.Softmax(dim=1)").replace(
        "ROWMAX", "torch.max(energy, -1, keepdim=True)[0]"), "a softmax over the channels axis"),
    (BOXMOT.replace("ROWMAX - energy", "energy - torch.max(energy, -1, keepdim=True)[0]"),
     "the stable shift the other way round is the plain chain (f10-manual-attention-sdpa), not negated"),
    (BOXMOT.replace("ROWMAX - energy", "torch.max(energy, -1, keepdim=True)[0] - energy * 2"),
     "the row maximum minus another value"),
    (BOXMOT.replace("ROWMAX", "torch.max(energy, -1, keepdim=True)[0]").replace(
        "torch.bmm(attention, value)", "torch.bmm(attention, attention.transpose(1, 2))"),
     "values computed from the probabilities"),
])
def test_look_alikes_are_not_negated_attention(source: str, why: str) -> None:
    assert [s for s in _sites(source) if s[0] == "f10-negated-scores"] == [], why


def test_the_stable_shift_keeps_the_plain_chain() -> None:
    source = BOXMOT.replace("ROWMAX - energy", "energy - torch.max(energy, -1, keepdim=True)[0]")
    assert [s[0] for s in _sites(source)] == ["f10-manual-attention-sdpa"]


def test_the_message_s_call_is_the_same_attention() -> None:
    """`sdpa(q, k, v, scale=-1.0)` computes `bmm(softmax(rowmax(s) - s), v)` with `s = q @ kᵀ`: outputs and
    gradients within 1e-10 in float64 (fixed seed, CPU), for DANet's q = k = v and for three distinct tensors."""
    gen = torch.Generator().manual_seed(0)
    b, c, n = 2, 6, 9
    x = torch.randn(b, c, n, dtype=torch.float64, generator=gen, requires_grad=True)
    q, k, v = (torch.randn(b, c, n, dtype=torch.float64, generator=gen, requires_grad=True) for _ in range(3))
    sdpa = torch.nn.functional.scaled_dot_product_attention
    for args in ((x, x, x), (q, k, v)):
        energy = torch.bmm(args[0], args[1].permute(0, 2, 1))
        energy_new = torch.max(energy, -1, keepdim=True)[0].expand_as(energy) - energy
        out = torch.bmm(torch.softmax(energy_new, dim=-1), args[2])
        fused = sdpa(*args, scale=-1.0)
        torch.testing.assert_close(out, fused, rtol=1e-10, atol=1e-10)
        leaves = tuple(dict.fromkeys(args))
        got = torch.autograd.grad(out.square().sum(), leaves)
        want = torch.autograd.grad(fused.square().sum(), leaves)
        for g, w in zip(got, want, strict=True):
            torch.testing.assert_close(g, w, rtol=1e-10, atol=1e-10)
