"""A softmax at a positive axis that is the last one by the rank its producer gives (helper `mech91`, family 4,
form M1 of docs/notes/fresh4.md): the rank from a tensor's sizes unpacked into n names (`b, c, h, w = x.shape`)
and from a reduction over axes written as integers (`x.mean(dim=(-2, -1))`, `view(...).sum(dim=1)`).

The f04 finding is information only on CPU; with the `liger` target (CUDA, `liger_kernel` importable) the call
becomes `liger_softmax(x)`, the softmax over the last axis. That rewrite is checked here against the original with a
stand-in for Liger's kernel that computes what Liger defines it to (`torch.softmax(x, -1)`): outputs, input and
parameter gradients, float64 on CPU (`adopter.verify.compare` tolerances for float64), eval and train mode, seeds 0
and 1.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator

import pytest

torch = pytest.importorskip("torch")

from attention_harness import findings_of, fixed, load, rules_of  # noqa: E402

from adopter.engine import Environment  # noqa: E402

pytestmark = pytest.mark.torch

RULES = rules_of("f04-softmax")
LIGER = Environment(device="cuda", packages=frozenset({"liger_kernel"}), torch_version="2.13.0")


def _sites(source: str) -> list[int]:
    return [f.span.start_line + 1 for f in findings_of(source, RULES)]


def _line(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


# deepinv 0.5.0 deepinv/models/third_party/promptir.py:40-42 (PromptGenBlock): the 4-D features averaged over
# their two spatial axes are 2-D, so the prompt weights' dim=1 is their last axis.
PROMPT_WEIGHTS = """
import torch
import torch.nn.functional as F
from torch import nn


class PromptWeights(nn.Module):
    def __init__(self, channels, prompts):
        super().__init__()
        self.linear = nn.Linear(channels, prompts)
        self.prompts = nn.Parameter(torch.randn(prompts, channels))

    def forward(self, x):
        b, c, h, w = x.shape
        pooled = x.mean(dim=(-2, -1))
        logits = self.linear(pooled)
        weights = F.softmax(logits, dim=1)
        return weights @ self.prompts
"""
# deepinv's own spelling: the Linear's call inside the softmax's.
PROMPT_WEIGHTS_NESTED = PROMPT_WEIGHTS.replace(
    "        logits = self.linear(pooled)\n        weights = F.softmax(logits, dim=1)",
    "        weights = F.softmax(self.linear(pooled), dim=1)")

# pywick 0.6.5 models/segmentation/testnets/axial_deeplab/axial_deeplab.py:75-79 (AxialAttention): the three
# similarity maps normalised, viewed as five axes and summed over one: 4-D, so dim=3 is the last.
AXIAL_SCORES = """
import torch
import torch.nn.functional as F
from torch import nn


class AxialScores(nn.Module):
    def __init__(self, groups):
        super().__init__()
        self.groups = groups
        self.bn = nn.BatchNorm2d(groups * 3)

    def forward(self, qk, qr, kr, v):
        n, _, h, _ = qk.shape
        stacked = torch.cat([qk, qr, kr], dim=1)
        stacked = self.bn(stacked).view(n, 3, self.groups, h, h).sum(dim=1)
        weights = F.softmax(stacked, dim=3)
        return torch.einsum("bgij,bgcj->bgci", weights, v)
"""


@pytest.mark.parametrize("source", [PROMPT_WEIGHTS, PROMPT_WEIGHTS_NESTED], ids=["bound", "nested"])
def test_the_mean_over_two_axes_of_an_unpacked_4d_input_is_family_4(source: str) -> None:
    assert _sites(source) == [_line(source, "F.softmax")]


def test_the_sum_over_one_axis_of_five_sizes_is_family_4() -> None:
    assert _sites(AXIAL_SCORES) == [_line(AXIAL_SCORES, "F.softmax")]


# -- near forms: the rank is not known, or the axis is known not to be the last --------------------------------

# `b, *rest = x.shape`: one name and a list; the rank is not two.
STARRED = PROMPT_WEIGHTS.replace("b, c, h, w = x.shape", "b, *rest = x.shape")
# keepdim: the features stay 4-D (the channel axis is not the last).
KEPT = PROMPT_WEIGHTS.replace("x.mean(dim=(-2, -1))", "x.mean(dim=(-2, -1), keepdim=True)").replace(
    "return weights @ self.prompts", "return weights")
# The axes handed in: how many are reduced is not written here.
AXES_PASSED = PROMPT_WEIGHTS.replace("def forward(self, x):", "def forward(self, x, axes):").replace(
    "x.mean(dim=(-2, -1))", "x.mean(dim=axes)")
# Nothing says what rank the input has.
RANK_UNKNOWN = PROMPT_WEIGHTS.replace("        b, c, h, w = x.shape\n", "")
# blobrl 0.1.3 networks/c51_network.py:35-37: `nn.Softmax(dim=1)` as the last child of a Sequential after a
# Linear; the Sequential's input rank is not known (a 3-D input would make dim=1 the middle axis).
SEQUENTIAL_OF_UNKNOWN_INPUT = """
import torch
from torch import nn


class Distributional(nn.Module):
    def __init__(self, hidden, atoms):
        super().__init__()
        self.head = nn.Sequential(nn.Linear(hidden, atoms), nn.Softmax(dim=1))

    def forward(self, features):
        return self.head(features)
"""
# The axis of the groups, not the keys' (dim=1 of the 4-D sum).
GROUPS_AXIS = AXIAL_SCORES.replace("F.softmax(stacked, dim=3)", "F.softmax(stacked, dim=1)")


@pytest.mark.parametrize("source", [STARRED, KEPT, AXES_PASSED, RANK_UNKNOWN, SEQUENTIAL_OF_UNKNOWN_INPUT,
                                    GROUPS_AXIS],
                         ids=["starred-target", "keepdim", "axes-passed", "rank-unknown", "sequential-input-unknown",
                              "groups-axis"])
def test_a_softmax_not_known_to_be_over_the_last_axis_is_not_reported(source: str) -> None:
    assert _sites(source) == []


# -- the liger rewrite of the new sites computes what the original does -------------------------------------------

@pytest.fixture
def liger_stand_in() -> Iterator[None]:
    """`liger_kernel.transformers.functional.liger_softmax` as Liger defines it (the softmax over the last axis),
    so that the rewritten module runs on CPU."""
    names = ("liger_kernel", "liger_kernel.transformers", "liger_kernel.transformers.functional")
    saved = {n: sys.modules.get(n) for n in names}
    modules = [types.ModuleType(n) for n in names]
    modules[2].liger_softmax = lambda x: torch.softmax(x, dim=-1)  # type: ignore[attr-defined]
    sys.modules.update(zip(names, modules))
    try:
        yield
    finally:
        for n, m in saved.items():
            if m is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = m


def _equivalent(source: str, new: str, cls: str, make: object, inputs: object) -> None:
    from adopter.verify.compare import compare

    torch.manual_seed(0)
    original = make(load(source, "orig")[cls]).double()  # type: ignore[operator]
    rewritten = make(load(new, "new")[cls]).double()  # type: ignore[operator]
    rewritten.load_state_dict(original.state_dict(), strict=True)
    for train in (False, True):
        original.train(train)
        rewritten.train(train)
        for seed in (0, 1):
            torch.manual_seed(seed)
            result = compare(original, rewritten, (inputs(), {}), seed=seed, dtype=torch.float64)  # type: ignore[operator]
            assert result.equivalent, (train, seed, result)


@pytest.mark.usefixtures("liger_stand_in")
def test_the_liger_rewrite_of_the_prompt_weights_is_equivalent() -> None:
    new = fixed(PROMPT_WEIGHTS, RULES, applied=1, env=LIGER)
    assert "weights = liger_softmax(logits)" in new, new
    _equivalent(PROMPT_WEIGHTS, new, "PromptWeights", lambda cls: cls(6, 5),
                lambda: (torch.randn(3, 6, 4, 4, dtype=torch.float64),))


@pytest.mark.usefixtures("liger_stand_in")
def test_the_liger_rewrite_of_the_axial_scores_is_equivalent() -> None:
    new = fixed(AXIAL_SCORES, RULES, applied=1, env=LIGER)
    assert "weights = liger_softmax(stacked)" in new, new

    def inputs() -> tuple[object, ...]:
        n, g, h, c = 2, 2, 5, 3
        return tuple(torch.randn(*s, dtype=torch.float64) for s in ((n, g, h, h),) * 3 + ((n, g, c, h),))

    _equivalent(AXIAL_SCORES, new, "AxialScores", lambda cls: cls(2), inputs)
