"""Family 10 forms of helper `mech59` (issue 20): the channels-first attention block (the CompVis VAE's `AttnBlock`
and its 1-D copies) spelled in ways the census of dev code found missed.

Found by the census of every function holding a softmax between two products (dev corpora, fresh1;
docs/notes/mech59.md). The fixable form is rewritten, exec'd next to the original and compared through
`adopter.verify.compare.compare` (outputs, input and parameter gradients, float32 on CPU) after a strict
state-dict load both ways, in eval and train mode. Near forms that are not a softmax over the last axis stay
silent, and the form the rewrite does not edit is found and declined with its reason.

- `b, c, t = q.shape` binds numbers, so `bmm(q.permute(0, 2, 1), k) * c ** -0.5` keeps the 3-D rank of the
  product and its `softmax(·, dim=2)` is over the last axis (WavTokenizer's and Vocos-style 1-D blocks); a `bmm`
  product is 3-D whatever is known of its operands (imaginAIry's query-sliced block inside a loop);
- the transposed probabilities stay their transpose through `.contiguous()` (audioldm, diffsynth): found, the
  fix declined (the statement that rebinds them would be lost).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attention_harness import equivalent_classes as _equivalent  # noqa: E402
from attention_harness import findings_of, fixed, rules_of, skip_reasons  # noqa: E402

pytestmark = pytest.mark.torch

RULES = rules_of("f10-manual-attention-sdpa", "f04-softmax")
F10 = tuple(r for r in RULES if r.id == "f10-manual-attention-sdpa")


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


def test_channels_first_block_with_inline_permutes_is_rewritten_and_equivalent() -> None:
    new = fixed(CHANNELS_FIRST_1D, F10, applied=1)
    assert "value.transpose(-2, -1)" in new and "softmax" not in new, new
    _equivalent(CHANNELS_FIRST_1D, new, "AttnBlock1d", lambda cls: cls(8), lambda: (torch.randn(2, 8, 7),))


def test_contiguous_transposed_probabilities_are_found_and_declined() -> None:
    assert [f.rule_id for f in findings_of(CONTIGUOUS, F10)] == ["f10-manual-attention-sdpa"]
    reasons = skip_reasons(CONTIGUOUS, F10)
    assert reasons and all("rebinds `w_`" in r for r in reasons), reasons


# -- near forms: not a softmax over the last axis, or not scores times values -----------------------------------

BMM_AXIS_1 = CHANNELS_FIRST_1D.replace("F.softmax(weights, dim=2)", "F.softmax(weights, dim=1)")


# A factor whose rank nothing shows may broadcast the scores to more axes: `dim=2` is not known to be the last.
SCALED_BY_AN_ARGUMENT = CHANNELS_FIRST_1D.replace("* channels**-0.5", "* scale").replace(
    "def forward(self, x):", "def forward(self, x, scale):")


@pytest.mark.parametrize("source", [BMM_AXIS_1, SCALED_BY_AN_ARGUMENT], ids=["axis-1-of-bmm", "scaled-by-an-argument"])
def test_a_softmax_over_another_axis_is_not_attention(source: str) -> None:
    assert findings_of(source, RULES) == ()
