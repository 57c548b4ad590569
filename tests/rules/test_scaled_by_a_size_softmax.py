"""A softmax at a positive axis that is the last one by its producer's rank, where the producer is scaled by a name
that the forward passes as a size (helper `mech96`, family 4 form M1 "hidden rank"): `x.reshape(m, n, -1)` and
`x.view(b, h, 1, d)` take integers, so `w /= n ** 0.5` and `s / np.sqrt(d)` scale by a number and keep the rank of
the `bmm` / `matmul` / `einsum` product. With the rank known, the softmax's `dim=2` of a 3-D product (`dim=3` of a
4-D one) is its last axis: family 4, and where the probabilities feed a second product, family 10.

Equivalence: the f04 finding is information only on CPU; with the `liger` target the call becomes
`liger_softmax(x)`, compared here with the original through a stand-in for Liger's kernel that computes what Liger
defines it to (`torch.softmax(x, -1)`); the f10 rewrite of min-dalle's block (SDPA on the permuted operands) is
compared on CPU. Both through `adopter.verify.compare.compare` (outputs, input and parameter gradients; float64 for
the f04 rewrites, float32 for f10 as in `attention_harness.equivalent_classes`; eval and train mode, seeds 0 and 1).
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator

import pytest

torch = pytest.importorskip("torch")

from attention_harness import equivalent_classes, findings_of, fixed, load, rules_of  # noqa: E402

from adopter.engine import Environment  # noqa: E402

pytestmark = pytest.mark.torch

RULES = rules_of("f04-softmax", "f10-manual-attention-sdpa")
F04 = tuple(r for r in RULES if r.id == "f04-softmax")
F10 = tuple(r for r in RULES if r.id == "f10-manual-attention-sdpa")
LIGER = Environment(device="cuda", packages=frozenset({"liger_kernel"}), torch_version="2.13.0")


def _sites(source: str) -> list[tuple[str, int]]:
    return sorted((f.rule_id, f.span.start_line + 1) for f in findings_of(source, RULES))


def _line(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


# min-dalle 0.4.11 min_dalle/models/vqgan_detokenizer.py:32-62 (AttentionBlock): `n` (2 ** 9 there) is the channel
# count the 1x1 convolutions' outputs are reshaped by, then the scale of the 3-D `bmm` scores; the probabilities are
# permuted and multiplied by the values from the left.
BLOCK = """
import math

import torch
from torch import nn


class PixelAttention(nn.Module):
    def __init__(self):
        super().__init__()
        n = 2 ** 3
        self.norm = nn.GroupNorm(2, n)
        self.k = nn.Conv2d(n, n, 1)
        self.v = nn.Conv2d(n, n, 1)
        self.q = nn.Conv2d(n, n, 1)
        self.out = nn.Conv2d(n, n, 1)

    def forward(self, x):
        n, m = 2 ** 3, x.shape[0]
        h = self.norm(x)
        k = self.k(h).reshape(m, n, -1)
        v = self.v(h).reshape(m, n, -1)
        q = self.q(h).reshape(m, n, -1)
        q = q.permute(0, 2, 1)
        w = torch.bmm(q, k)
        w /= n ** 0.5
        w = torch.softmax(w, dim=2)
        w = w.permute(0, 2, 1)
        h = torch.bmm(v, w)
        side = int(math.sqrt(h.shape[-1]))
        h = h.reshape(m, n, side, side)
        return x + self.out(h)
"""

# FastNLP 1.0.1 fastNLP/modules/torch/encoder/star_transformer.py:130-159 (_MSA2, the star relay attention): the
# heads' sizes are views' sizes, the 4-D scores are scaled by numpy's square root of one of them.
RELAY = """
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


class RelayAttention(nn.Module):
    def __init__(self, hidden, heads, head_dim):
        super().__init__()
        self.wq = nn.Conv2d(hidden, heads * head_dim, 1)
        self.wk = nn.Conv2d(hidden, heads * head_dim, 1)
        self.heads, self.head_dim = heads, head_dim

    def forward(self, x, y):
        heads, head_dim = self.heads, self.head_dim
        b, h, t, _ = y.shape
        q = self.wq(x).view(b, heads, 1, head_dim)
        k = self.wk(y).view(b, heads, head_dim, t)
        scores = torch.matmul(q, k) / np.sqrt(head_dim)
        weights = F.softmax(scores, 3)
        return weights
"""


def test_the_scaled_bmm_scores_are_family_4_and_10() -> None:
    assert _sites(BLOCK) == [("f04-softmax", _line(BLOCK, "torch.softmax")),
                             ("f10-manual-attention-sdpa", _line(BLOCK, "torch.bmm(q, k)"))]


def test_the_relay_scores_are_family_4() -> None:
    assert _sites(RELAY) == [("f04-softmax", _line(RELAY, "F.softmax"))]


# -- near forms: the factor not known to be a number, or the axis not the last --------------------------------------

# The factor is a parameter never passed as a size: a tensor of more axes would broadcast the scores.
FACTOR_HANDED = BLOCK.replace("def forward(self, x):", "def forward(self, x, c):").replace(
    "w /= n ** 0.5", "w /= c ** 0.5")
# The sizes held in a tuple: `view(shape)` says nothing of the names in it.
SHAPE_HELD = RELAY.replace("q = self.wq(x).view(b, heads, 1, head_dim)",
                           "shape = (b, heads, 1, head_dim)\n        q = self.wq(x).view(shape)").replace(
    "k = self.wk(y).view(b, heads, head_dim, t)", "k = self.wk(y).view(*shape[:2], head_dim, t)")
# dim=1 of the 3-D scores: the queries' axis.
QUERY_AXIS = BLOCK.replace("torch.softmax(w, dim=2)", "torch.softmax(w, dim=1)")
# FastNLP 1.0.1 star_transformer.py:107-122 (_MSA1): a 5-D product summed with keepdim stays 5-D, so dim=3 is not
# its last axis (labelled not a site in bench/data/dev2).
FIVE_AXES = RELAY.replace("q = self.wq(x).view(b, heads, 1, head_dim)",
                          "q = self.wq(x).view(b, heads, head_dim, 1, t)").replace(
    "k = self.wk(y).view(b, heads, head_dim, t)", "k = self.wk(y).view(b, heads, head_dim, 3, t)").replace(
    "scores = torch.matmul(q, k) / np.sqrt(head_dim)", "scores = (q * k).sum(2, keepdim=True) / np.sqrt(head_dim)")


@pytest.mark.parametrize("source", [FACTOR_HANDED, SHAPE_HELD, QUERY_AXIS, FIVE_AXES],
                         ids=["factor-handed-in", "shape-held", "query-axis", "five-axes-keepdim"])
def test_a_softmax_not_known_to_be_over_the_last_axis_is_not_reported(source: str) -> None:
    assert source not in (BLOCK, RELAY)
    assert [f for f in findings_of(source, RULES) if f.rule_id in ("f04-softmax", "f10-manual-attention-sdpa")] == []


# -- the rewrites compute what the original does -------------------------------------------------------------------

def test_the_sdpa_rewrite_of_the_pixel_attention_is_equivalent() -> None:
    new = fixed(BLOCK, F10, applied=1)
    assert "scaled_dot_product_attention(" in new and "softmax" not in new, new
    equivalent_classes(BLOCK, new, "PixelAttention", lambda cls: cls(), lambda: (torch.randn(2, 8, 3, 3),))


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


def _equivalent64(source: str, new: str, cls: str, make: object, inputs: object) -> None:
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
def test_the_liger_rewrite_of_the_pixel_attention_softmax_is_equivalent() -> None:
    new = fixed(BLOCK, F04, applied=1, env=LIGER)
    assert "w = liger_softmax(w)" in new, new
    _equivalent64(BLOCK, new, "PixelAttention", lambda cls: cls(), lambda: (torch.randn(2, 8, 3, 3, dtype=torch.float64),))


@pytest.mark.usefixtures("liger_stand_in")
def test_the_liger_rewrite_of_the_relay_softmax_is_equivalent() -> None:
    new = fixed(RELAY, F04, applied=1, env=LIGER)
    assert "weights = liger_softmax(scores)" in new, new
    _equivalent64(RELAY, new, "RelayAttention", lambda cls: cls(6, 2, 3),
                  lambda: (torch.randn(2, 6, 1, 1, dtype=torch.float64), torch.randn(2, 6, 5, 1, dtype=torch.float64)))
