"""Roots written as powers (`(v + eps) ** -0.5`, `.pow(-0.5)`, `** 0.5`) read as `rsqrt` / `sqrt`
(`canonical/root_powers.py`), issue 20.

Found by the metamorphic harness (docs/notes/meta38.md, weakness 1): `torch.rsqrt(v)` rewritten as `v ** -0.5` lost
family 12 in LlamaRMSNorm (transformers 4.35.0 `models/llama/modeling_llama.py:86`), Mistral, torchtune, litgpt and
diffusers. The shapes below are those norms with the root spelled as a power, written anew at fixture size; e3nn
0.5 `nn/_batchnorm.py:174` writes `(field_norm + self.eps).pow(-0.5)`. Each fix is compared with the original
(torch, CPU, seed 0, eval and train, float32): outputs, input and parameter gradients, atol 1e-5 / rtol 1e-4.
The look-alikes keep their reading: an attention scale written as a power of a number or of a shape's entry
(still found as attention, its scale read), a power of a parameter, and a power of a tensor the pass did not sum
or average.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attention_harness import findings_of, fixed, load, rules_of  # noqa: E402

from equivalence import compare_modules  # noqa: E402

pytestmark = pytest.mark.torch

NORM_RULES = rules_of("f12-rmsnorm", "f11-layernorm")
ATTENTION_RULES = rules_of("f10-manual-attention-sdpa")

POWERS = '''
import torch
from torch import nn


class PowRMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, hidden):
        variance = hidden.pow(2).mean(-1, keepdim=True)
        hidden = hidden * (variance + self.eps) ** -0.5
        return self.weight * hidden


class MethodPowRMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return self.weight * (x * x.pow(2).mean(-1, keepdim=True).add(self.eps).pow(-0.5))


class RootLayerNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        mu = x.mean(-1, keepdim=True)
        var = (x - mu).pow(2).mean(-1, keepdim=True)
        return (x - mu) / (var + self.eps) ** 0.5 * self.weight + self.bias
'''

LOOK_ALIKES = '''
import torch
from torch import nn


class ScaledAttention(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scale = q.shape[-1] ** -0.5
        attn = (q @ k.transpose(-2, -1)) * scale
        return attn.softmax(dim=-1) @ v


class NumberScaledAttention(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        attn = (q @ k.transpose(-2, -1)) * self.dim ** -0.5
        return attn.softmax(dim=-1) @ v


class ParameterPower(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.g = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        ms = x.pow(2).mean(-1, keepdim=True)
        return x * self.g.pow(-0.5) + ms


class UnknownPower(nn.Module):
    def forward(self, x, v):
        return x * v ** -0.5
'''


def _found(source: str) -> list[tuple[str, str]]:
    return sorted((f.rule_id, f.scope_name) for f in findings_of(source, NORM_RULES))


def test_norms_with_roots_written_as_powers_are_found() -> None:
    assert _found(POWERS) == [("f11-layernorm", "RootLayerNorm"), ("f12-rmsnorm", "MethodPowRMSNorm"),
                              ("f12-rmsnorm", "PowRMSNorm")]


def test_powers_that_are_not_a_norm_s_root_stay_as_written() -> None:
    assert _found(LOOK_ALIKES) == []
    # the attention scales spelled as powers are still read as scales
    assert sorted(f.scope_name for f in findings_of(LOOK_ALIKES, ATTENTION_RULES)) == [
        "NumberScaledAttention", "ScaledAttention"]


@pytest.mark.parametrize("cls, shape", [("PowRMSNorm", (2, 5, 16)), ("MethodPowRMSNorm", (3, 16)),
                                        ("RootLayerNorm", (2, 4, 16))])
def test_fix_of_a_root_written_as_a_power_is_equivalent(cls: str, shape: tuple[int, ...]) -> None:
    new = fixed(POWERS, NORM_RULES, applied=3)
    assert "** -0.5" not in new and ".pow(-0.5)" not in new and "** 0.5" not in new
    torch.manual_seed(0)
    original = load(POWERS, "root_powers_old")[cls](16)
    with torch.no_grad():
        for p in original.parameters():
            p.add_(torch.randn(p.shape) * 0.3)
    compare_modules(original, load(new, "root_powers_new")[cls](16), lambda: (torch.randn(*shape) * 3,))
