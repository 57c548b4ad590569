"""A softmax whose positive axis is the last one only by the most axes its producer can give (helper `mech79`,
issue 20, family 4; fresh4's census row M1).

torch's layers bound their output's rank: `nn.Conv1d` takes (C, L) or (N, C, L) and gives the same rank, so its
output has at most 3 axes, and an axis argument must be below the rank: `softmax(conv1d(x), dim=2)` can only be
over the last axis (on a 2-D output it raises). `dim=1` of the same output is the channels (3-D) or the length
(2-D): not known, not reported. The bound passes through ops that keep their input's rank (`tanh`,
`masked_fill`, `nn.Linear`). Written in the forms of the speaker-verification pooling layers the census found
(macls / mvector `SelfAttentivePooling`), not copied.
"""

from __future__ import annotations

import pytest
from attention_harness import findings_of, rules_of

RULES = rules_of("f04-softmax")


def _rules(source: str) -> list[tuple[str, int]]:
    return [(f.rule_id, f.span.start_line + 1) for f in findings_of(source, RULES)]


def _line(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


# Attention weights over frames from a 1x1 Conv1d (self-attentive pooling of (batch, channels, frames)).
CONV1D_POOLING = """
import torch
from torch import nn


class AttentivePooling(nn.Module):
    def __init__(self, channels, hidden=64):
        super().__init__()
        self.score_in = nn.Conv1d(channels, hidden, kernel_size=1)
        self.score_out = nn.Conv1d(hidden, channels, kernel_size=1)

    def forward(self, x):
        h = torch.tanh(self.score_in(x))
        w = torch.softmax(self.score_out(h), dim=2)
        return torch.sum(w * x, dim=2)
"""

# Padding frames filled before the softmax (the bound passes through `masked_fill`).
MASKED_FRAMES = """
import torch
import torch.nn.functional as F
from torch import nn


class MaskedPooling(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.act = nn.Tanh()
        self.score = nn.Conv1d(channels, channels, 1)

    def forward(self, x, mask):
        attn = self.score(self.act(x))
        attn = attn.masked_fill(mask == 0, float("-inf"))
        attn = F.softmax(attn, dim=2)
        return (attn * x).sum(dim=2)
"""

# A spatial softmax over the width of a Conv2d map (at most 4 axes: `dim=3` is the last).
CONV2D_WIDTH = """
import torch
from torch import nn


class WidthAttention(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.proj = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        return self.proj(x).softmax(3) * x
"""

# A Linear keeps the bound of its input (a Conv1d's output with its channels last by a Linear on frames).
LINEAR_AFTER_CONV = """
import torch.nn.functional as F
from torch import nn


class FrameMixer(nn.Module):
    def __init__(self, channels, frames):
        super().__init__()
        self.conv = nn.Conv1d(channels, channels, 1)
        self.mix = nn.Linear(frames, frames)

    def forward(self, x):
        return F.softmax(self.mix(self.conv(x)), dim=2)
"""


@pytest.mark.parametrize("source", [CONV1D_POOLING, MASKED_FRAMES, CONV2D_WIDTH, LINEAR_AFTER_CONV],
                         ids=["conv1d-pooling", "masked-frames", "conv2d-width", "linear-after-conv1d"])
def test_the_last_axis_by_the_producers_rank_bound_is_family_4(source: str) -> None:
    assert _rules(source) == [("f04-softmax", _line(source, "softmax"))]


# -- near forms: an axis below the bound's last, or a producer with no bound ----------------------------------------

# `dim=1` of a Conv1d output: the channels of (N, C, L), the length of (C, L).
CONV1D_CHANNELS = CONV1D_POOLING.replace("dim=2)\n", "dim=1)\n", 1)
# `dim=2` of a Conv2d map: the height of (N, C, H, W), the width of (C, H, W).
CONV2D_HEIGHT = CONV2D_WIDTH.replace("softmax(3)", "softmax(2)")
# A gate Linear on an input of unknown rank (fairscale / mergoo routers: the rank is the caller's).
UNKNOWN_INPUT = """
import torch.nn.functional as F
from torch import nn


class Router(nn.Module):
    def __init__(self, dim, experts):
        super().__init__()
        self.gate = nn.Linear(dim, experts, bias=False)

    def forward(self, x):
        return F.softmax(self.gate(x), dim=2)
"""
# A bounded tensor times one of unknown rank: the product's rank is not bounded.
UNKNOWN_OPERAND = MASKED_FRAMES.replace("attn = attn.masked_fill(mask == 0, float(\"-inf\"))",
                                        "attn = attn * mask")
# The layer rebound under a branch to a class the pass does not know: no bound.
REBOUND = CONV1D_POOLING.replace(
    "        self.score_out = nn.Conv1d(hidden, channels, kernel_size=1)\n",
    "        self.score_out = nn.Conv1d(hidden, channels, kernel_size=1)\n"
    "        if hidden > 128:\n            self.score_out = Projection(hidden, channels)\n")


@pytest.mark.parametrize("source", [CONV1D_CHANNELS, CONV2D_HEIGHT, UNKNOWN_INPUT, UNKNOWN_OPERAND, REBOUND],
                         ids=["conv1d-channels", "conv2d-height", "unknown-input-rank", "unknown-operand",
                              "rebound-layer"])
def test_an_axis_not_proved_last_is_not_reported(source: str) -> None:
    assert _rules(source) == []


def test_the_near_forms_differ_from_the_found_ones() -> None:
    assert CONV1D_CHANNELS != CONV1D_POOLING and CONV2D_HEIGHT != CONV2D_WIDTH
    assert UNKNOWN_OPERAND != MASKED_FRAMES and REBOUND != CONV1D_POOLING
