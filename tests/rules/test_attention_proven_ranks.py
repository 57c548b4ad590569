"""Family 10 forms of helper `mech59` (issue 20): attention whose softmax axis is written as a positive index that
the code proves is the last one, and the channels-first attention block with its steps spelled another way.

Found by the census of every function holding a softmax between two products (dev corpora, fresh1): the forms
recur in several packages (docs/notes/mech59.md). Each fixable form is rewritten, exec'd next to the original and
compared through `adopter.verify.compare.compare` (outputs, input and parameter gradients, float32 on CPU) after a
strict state-dict load both ways, in eval and train mode. Each near form that is not attention over the last axis
stays silent, and a form the rewrite does not edit is found and declined with its reason.

- parts unpacked from a tensor of known rank (`q, k, v = qkv.reshape(b, n, 3, h, d).permute(2, 0, 3, 1, 4)`,
  `qkv.unbind(0)`, `qkv[0]`) have one axis fewer, so `F.softmax(s, 3)` of their 4-D scores is over the last axis
  (FastNLP's star transformer, coqui-tts' style tokens, XLNet write `softmax(·, 3)`);
- `torch.bmm` gives a 3-D tensor whatever is known of its operands, and `b, c, t = q.shape` binds numbers, so
  `softmax(bmm(q.permute(0, 2, 1), k) * c ** -0.5, dim=2)` is over the last axis (WavTokenizer's, Vocos' and
  the CompVis VAE's attention blocks);
- the transposed probabilities stay their transpose through `.contiguous()` (audioldm, diffsynth, imaginAIry):
  found, the fix declined (the statement that rebinds them would be lost).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attention_harness import findings_of, fixed, load, rules_of, skip_reasons  # noqa: E402

from adopter.verify.compare import compare  # noqa: E402

pytestmark = pytest.mark.torch

RULES = rules_of("f10-manual-attention-sdpa", "f04-softmax")
F10 = tuple(r for r in RULES if r.id == "f10-manual-attention-sdpa")


def _equivalent(source: str, new: str, cls: str, make, inputs) -> None:
    torch.manual_seed(0)
    original = make(load(source, "orig")[cls])
    rewritten = make(load(new, "new")[cls])
    rewritten.load_state_dict(original.state_dict(), strict=True)
    original.load_state_dict(rewritten.state_dict(), strict=True)
    for train in (False, True):
        original.train(train)
        rewritten.train(train)
        for seed in (0, 1):
            torch.manual_seed(seed)
            result = compare(original, rewritten, (inputs(), {}), seed=seed, dtype=torch.float32)
            assert result.equivalent, (train, seed, result)


UNPACKED = """
import torch
import torch.nn.functional as F
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        pre_a = torch.matmul(q, k.transpose(2, 3)) * self.scale
        alphas = F.softmax(pre_a, 3)
        out = torch.matmul(alphas, v)
        return self.proj(out.transpose(1, 2).reshape(b, n, c))
"""

UNBOUND = UNPACKED.replace(
    "        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)\n",
    "        qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)\n"
    "        q, k, v = qkv.unbind(0)\n",
).replace("F.softmax(pre_a, 3)", "pre_a.softmax(dim=3)")

ITEMS = UNPACKED.replace(
    "        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)\n",
    "        qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)\n"
    "        q, k, v = qkv[0], qkv[1], qkv[2]\n",
).replace("F.softmax(pre_a, 3)", "torch.softmax(pre_a, dim=3)")

CHANNELS_FIRST_1D = """
import torch
import torch.nn.functional as F
from torch import nn


class AttnBlock1d(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.GroupNorm(2, dim)
        self.q = nn.Conv1d(dim, dim, kernel_size=1)
        self.k = nn.Conv1d(dim, dim, kernel_size=1)
        self.v = nn.Conv1d(dim, dim, kernel_size=1)
        self.proj_out = nn.Conv1d(dim, dim, kernel_size=1)

    def forward(self, x):
        h = self.norm(x)
        query = self.q(h)
        key = self.k(h)
        value = self.v(h)
        batch, channels, length = query.shape
        weights = torch.bmm(query.permute(0, 2, 1), key) * channels**-0.5
        weights = F.softmax(weights, dim=2)
        h = torch.bmm(value, weights.permute(0, 2, 1))
        return x + self.proj_out(h)
"""

CONTIGUOUS = """
import torch
from torch import nn


class AttnBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.q = nn.Conv2d(dim, dim, kernel_size=1)
        self.k = nn.Conv2d(dim, dim, kernel_size=1)
        self.v = nn.Conv2d(dim, dim, kernel_size=1)

    def forward(self, x):
        q = self.q(x)
        k = self.k(x)
        v = self.v(x)
        b, c, h, w = q.shape
        q = q.reshape(b, c, h * w).contiguous()
        q = q.permute(0, 2, 1).contiguous()
        k = k.reshape(b, c, h * w).contiguous()
        w_ = torch.bmm(q, k).contiguous()
        w_ = w_ * (int(c) ** (-0.5))
        w_ = torch.nn.functional.softmax(w_, dim=2)
        v = v.reshape(b, c, h * w).contiguous()
        w_ = w_.permute(0, 2, 1).contiguous()
        h_ = torch.bmm(v, w_).contiguous()
        return x + h_.reshape(b, c, h, w).contiguous()
"""


@pytest.mark.parametrize("source", [UNPACKED, UNBOUND, ITEMS], ids=["unpacked-permute", "unbind", "items"])
def test_softmax_over_axis_3_of_scores_of_unpacked_parts_is_rewritten_and_equivalent(source: str) -> None:
    new = fixed(source, F10, applied=1)
    assert "scaled_dot_product_attention(q, k, v" in new and "softmax" not in new, new
    _equivalent(source, new, "Attention", lambda cls: cls(8, 2), lambda: (torch.randn(2, 5, 8),))


def test_channels_first_block_with_inline_permutes_is_rewritten_and_equivalent() -> None:
    new = fixed(CHANNELS_FIRST_1D, F10, applied=1)
    assert "value.transpose(-2, -1)" in new and "softmax" not in new, new
    _equivalent(CHANNELS_FIRST_1D, new, "AttnBlock1d", lambda cls: cls(8), lambda: (torch.randn(2, 8, 7),))


def test_contiguous_transposed_probabilities_are_found_and_declined() -> None:
    assert [f.rule_id for f in findings_of(CONTIGUOUS, F10)] == ["f10-manual-attention-sdpa"]
    reasons = skip_reasons(CONTIGUOUS, F10)
    assert reasons and all("rebinds `w_`" in r for r in reasons), reasons


# -- near forms: not a softmax over the last axis, or not scores times values -----------------------------------

AXIS_2_OF_PARTS = UNPACKED.replace("F.softmax(pre_a, 3)", "F.softmax(pre_a, 2)")
CHUNKED_PARTS = UNPACKED.replace(
    "        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)\n",
    "        q, k, v = self.qkv(x).reshape(b, self.heads, n, 3 * (c // self.heads)).chunk(3, dim=-1)\n",
).replace("F.softmax(pre_a, 3)", "F.softmax(pre_a, 2)")
BMM_AXIS_1 = CHANNELS_FIRST_1D.replace("F.softmax(weights, dim=2)", "F.softmax(weights, dim=1)")


@pytest.mark.parametrize("source", [AXIS_2_OF_PARTS, CHUNKED_PARTS, BMM_AXIS_1],
                         ids=["axis-2-of-4-d-scores", "axis-2-of-chunks", "axis-1-of-bmm"])
def test_a_softmax_over_another_axis_is_not_attention(source: str) -> None:
    assert findings_of(source, RULES) == ()
