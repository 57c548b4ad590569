"""The oracle's walked attention and rotary sites (`bench/oracle/walks.py`): attention spelled with steps
the fixed patterns do not compose, and rotary embedding in any operand order, each with a
counter-example that computes something else with the same ops."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

torch = pytest.importorskip("torch")

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

from oracle.match import find_sites  # noqa: E402
from oracle.trace import trace_step  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.slow]

FORMS = '''import math

import torch
import torch.nn.functional as F
from torch import nn


class Baddbmm(nn.Module):
    """baddbmm scores with an additive bias, softmax in fp32 and cast back, dropout, bmm (Bloom-style)."""

    def __init__(self, dim=16, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.drop = nn.Dropout(0.1)

    def forward(self, x, alibi):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, -1).permute(2, 0, 3, 1, 4).reshape(3, B * self.heads, T, -1)
        scores = torch.baddbmm(alibi, q, k.transpose(1, 2), beta=1.0, alpha=1 / math.sqrt(C // self.heads))
        probs = F.softmax(scores.view(B, self.heads, T, T), dim=-1, dtype=torch.float32).to(q.dtype)
        probs = self.drop(probs)
        return torch.bmm(probs.view(B * self.heads, T, T), v)


class KScaledRelative(nn.Module):
    """k scaled before the product, a relative-position term that is itself a product, a multiplicative
    mask on the probabilities (T5/DeBERTa-style steps)."""

    def __init__(self, dim=16, heads=2):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.rel = nn.Parameter(torch.randn(8, dim // heads))

    def forward(self, x, keep):
        B, T, C = x.shape
        q, k, v = (p(x).view(B, T, self.heads, -1).transpose(1, 2) for p in (self.q, self.k, self.v))
        k = k * (q.shape[-1] ** -0.5)
        rel = torch.einsum("bhid,jd->bhij", q, self.rel[:T])
        scores = torch.matmul(q, k.transpose(-1, -2)) + rel
        probs = scores.softmax(dim=-1) * keep
        return torch.matmul(probs, v)


class Router(nn.Module):
    """Not attention: a softmax over a Linear's output (a router), then a product with the experts' outputs."""

    def __init__(self, dim=16, experts=4):
        super().__init__()
        self.gate = nn.Linear(dim, experts)

    def forward(self, x, expert_out):
        weights = self.gate(x).softmax(dim=-1)
        return torch.matmul(weights.unsqueeze(-2), expert_out).squeeze(-2)


class ScoresOnly(nn.Module):
    """Not attention: the scores' softmax is returned (an alignment map), no product with values follows."""

    def forward(self, a, b):
        return torch.matmul(a, b.transpose(-1, -2)).softmax(dim=-1)


class L2Distance(nn.Module):
    """Not q·kᵀ: scores are a negated squared distance (gigagan-pytorch 0.1.15's `SelfAttention` default)."""

    def forward(self, q, k, v):
        d = (q * q).sum(-1)[..., None] + (k * k).sum(-1)[..., None, :] - 2 * torch.einsum("bid,bjd->bij", q, k)
        attn = (-d * 0.25).softmax(dim=-1)
        return torch.einsum("bij,bjd->bid", attn, v)


class PinvStep(nn.Module):
    """Not attention: the probabilities times a value computed from them (one step of the Moore-Penrose
    iteration nystrom-attention 0.0.14 runs on its landmark kernel)."""

    def forward(self, q, k):
        x = torch.matmul(q, k.transpose(-1, -2)).softmax(dim=-1)
        z = x.transpose(-1, -2) / (x.abs().sum(dim=-1).amax() * x.abs().sum(dim=-2).amax())
        return x @ z


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class RopeSinFirst(nn.Module):
    """Rotary embedding written sin-term first, on the first half of the head only (partial rotary)."""

    def forward(self, q, cos, sin):
        rot, rest = q[..., :8], q[..., 8:]
        rot = rotate_half(rot) * sin + cos * rot
        return torch.cat((rot, rest), dim=-1)


class RopePairs(nn.Module):
    """Rotary embedding as the explicit pair rotation: cat(x1 cos - x2 sin, x2 cos + x1 sin)."""

    def forward(self, x, cos, sin):
        x1, x2 = x[..., :8], x[..., 8:]
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


class NotRope(nn.Module):
    """Not rotary: the halves of one tensor swapped and negated, scaled by a tensor of another."""

    def forward(self, x, y, cos, sin):
        return x * cos + rotate_half(y) * sin
'''


def _module(tmp_path: Path) -> tuple[ModuleType, str]:
    path = tmp_path / "walk_forms.py"
    path.write_text(FORMS)
    spec = importlib.util.spec_from_file_location("walk_forms", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["walk_forms"] = module
    spec.loader.exec_module(module)
    return module, str(path.resolve())


def _line(what: str) -> int:
    return next(i for i, text in enumerate(FORMS.splitlines(), 1) if what in text)


def _sites(model: Any, *args: Any, path: str) -> dict[int, set[tuple[str, int]]]:
    traced = trace_step(model, args, {})
    out: dict[int, set[tuple[str, int]]] = {}
    for g in traced.graphs:
        for s in find_sites(g, lambda f: f == path):
            out.setdefault(s.family, set()).add((s.pattern, s.anchor[1]))
    return out


@pytest.fixture(scope="module")
def forms(tmp_path_factory: pytest.TempPathFactory) -> tuple[ModuleType, str]:
    return _module(tmp_path_factory.mktemp("walks"))


def test_attention_with_baddbmm_and_fp32_softmax_is_family_10(forms: tuple[ModuleType, str]) -> None:
    module, path = forms
    t = torch.randn
    sites = _sites(module.Baddbmm(), t(2, 8, 16), t(4, 8, 8), path=path)
    assert ("attention_walk", _line("return torch.bmm(probs.view")) in sites.get(10, set())


def test_attention_with_k_scaled_relative_term_and_kept_mask_is_family_10(forms: tuple[ModuleType, str]) -> None:
    module, path = forms
    t = torch.randn
    sites = _sites(module.KScaledRelative(), t(2, 8, 16), t(2, 2, 8, 8), path=path)
    assert {line for _, line in sites.get(10, set())} == {_line("return torch.matmul(probs, v)")}


def test_a_router_softmax_and_a_returned_score_map_are_not_attention(forms: tuple[ModuleType, str]) -> None:
    module, path = forms
    t = torch.randn
    assert 10 not in _sites(module.Router(), t(2, 8, 16), t(2, 8, 4, 16), path=path)
    assert 10 not in _sites(module.ScoresOnly(), t(2, 8, 16), t(2, 8, 16), path=path)
    assert 10 not in _sites(module.L2Distance(), t(2, 8, 16), t(2, 8, 16), t(2, 8, 16), path=path)
    assert 10 not in _sites(module.PinvStep(), t(2, 8, 16), t(2, 8, 16), path=path)


def test_rotary_in_any_operand_order_and_as_explicit_pairs_is_family_15(forms: tuple[ModuleType, str]) -> None:
    module, path = forms
    t = torch.randn
    assert _line("rot = rotate_half(rot) * sin") in {
        line for _, line in _sites(module.RopeSinFirst(), t(2, 2, 8, 16), t(8, 8), t(8, 8), path=path).get(15, set())}
    assert _line("return torch.cat((x1 * cos - x2 * sin") in {
        line for _, line in _sites(module.RopePairs(), t(2, 2, 8, 16), t(8, 8), t(8, 8), path=path).get(15, set())}


def test_a_rotation_of_another_tensor_is_not_rotary(forms: tuple[ModuleType, str]) -> None:
    module, path = forms
    t = torch.randn
    assert 15 not in _sites(module.NotRope(), t(2, 8, 16), t(2, 8, 16), t(8, 16), t(8, 16), path=path)
