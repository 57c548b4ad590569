"""Families 12 and 13 in other spellings: `x.square()`, numpy's `axis=`/`keepdims=`, a GELU constant held by
`self.<attr>` from `__init__`, a GELU method `__init__` stores (`self.act = self._gelu_python`).

The real classes are DiffSynth-Studio 2.1.12's `RMSNorm` (`diffsynth/models/general_modules.py`:
`hidden_states.to(torch.float32).square().mean(-1, keepdim=True)`), recurrentgemma 1.0.1's torch `RMSNorm`
(`recurrentgemma/torch/layers.py`: `torch.mean(torch.square(x), axis=-1, keepdims=True)`; its `@at.typed`
annotations and parameter-init plumbing left out) and nanotron 0.4's `GELUActivation` / `AccurateGELUActivation`
(`nanotron/nn/activations.py`). Each fix is compared with the original (torch, CPU, seed 0, strict state-dict
loading both ways, eval and train): outputs, input and parameter gradients in float32, atol 1e-5 / rtol 1e-4
(`compare_modules`'s default; F.rms_norm and F.gelu round differently from the written-out formulas by a few
float32 ulps). Each site test holds a near form in the same source that must stay silent.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attention_harness import findings_of, fixed, load, rules_of  # noqa: E402

from equivalence import compare_modules  # noqa: E402

pytestmark = pytest.mark.torch

RMS_RULES = rules_of("f12-rmsnorm")
GELU_RULES = rules_of("f13-gelu")

# DiffSynth-Studio 2.1.12, diffsynth/models/general_modules.py, lines 104-120 verbatim; `L2Energy` is the near
# form: a sum of squares (an L2 norm), not their mean.
DIFFSYNTH_RMS_NORM = '''
import torch


class RMSNorm(torch.nn.Module):
    def __init__(self, dim, eps, elementwise_affine=True):
        super().__init__()
        self.eps = eps
        if elementwise_affine:
            self.weight = torch.nn.Parameter(torch.ones((dim,)))
        else:
            self.weight = None

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        variance = hidden_states.to(torch.float32).square().mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.eps)
        hidden_states = hidden_states.to(input_dtype)
        if self.weight is not None:
            hidden_states = hidden_states * self.weight
        return hidden_states


class L2Energy(torch.nn.Module):
    def forward(self, x):
        energy = x.square().sum(-1, keepdim=True)
        return x * torch.rsqrt(energy + 1e-6)
'''

# recurrentgemma 1.0.1, recurrentgemma/torch/layers.py, RMSNorm.forward (lines 66-73) verbatim; the constructor
# reduced to the parameters it reads. `MeanAbs` is the near form: a mean of absolute values, not of squares.
RECURRENTGEMMA_RMS_NORM = '''
import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, width: int, eps: float = 1e-6):
        super().__init__()
        self.width = width
        self.eps = eps
        self.scale = nn.Parameter(torch.zeros([self.width]))

    def forward(self, x):
        """Calls the RMSNorm."""
        var = torch.mean(torch.square(x), axis=-1, keepdims=True)
        normed_x = x * torch.rsqrt(var + self.eps)

        scale = torch.reshape(self.scale, [1 for _ in range(x.ndim - 1)] + [-1])

        return normed_x * (scale + 1)


class MeanAbs(nn.Module):
    def forward(self, x):
        var = torch.mean(torch.abs(x), axis=-1, keepdims=True)
        return x * torch.rsqrt(var + 1e-6)
'''


def _lines(source: str, rules: tuple[object, ...]) -> list[tuple[str, str]]:
    return [(f.rule_id, f.scope_name) for f in findings_of(source, rules)]  # type: ignore[arg-type]


@pytest.mark.parametrize("source, cls, inputs", [
    (DIFFSYNTH_RMS_NORM, "RMSNorm", lambda: (torch.randn(2, 5, 16) * 3,)),
    (RECURRENTGEMMA_RMS_NORM, "RMSNorm", lambda: (torch.randn(2, 5, 16) * 3,)),
], ids=["square-method", "numpy-keywords"])
def test_rms_norm_spellings_are_found_fixed_and_equivalent(source: str, cls: str, inputs: object) -> None:
    assert _lines(source, RMS_RULES) == [("f12-rmsnorm", "RMSNorm")]  # not the sum of squares / mean of |x|
    new = fixed(source, RMS_RULES, applied=1)
    assert "rsqrt" not in new.split("class", 2)[1]
    torch.manual_seed(0)
    original = load(source, f"rms_old_{id(source)}")[cls](16, 1e-6)
    with torch.no_grad():
        for p in original.parameters():
            p.add_(torch.randn(p.shape) * 0.3)
    compare_modules(original, load(new, f"rms_new_{id(source)}")[cls](16, 1e-6), inputs)  # type: ignore[arg-type]


# nanotron 0.4, nanotron/nn/activations.py, lines 1-8 (imports used), 58-78 and 124-136 verbatim, docstrings
# shortened. `LaplaceActivation` (lines 177-191, verbatim) is the near form: a method stored in `__init__` computing
# a Gaussian CDF without the `x *` of a GELU; `ScaledTanh` holds sqrt(2/pi) in `self.c` on one path only.
NANOTRON_ACTIVATIONS = '''
import math

import torch
from torch import Tensor, nn


class GELUActivation(nn.Module):
    """Original Implementation of the GELU activation function in Google BERT repo when initially created."""

    def __init__(self, use_gelu_python: bool = False):
        super().__init__()
        if use_gelu_python:
            self.act = self._gelu_python
        else:
            self.act = nn.functional.gelu

    def _gelu_python(self, input: Tensor) -> Tensor:
        return input * 0.5 * (1.0 + torch.erf(input / math.sqrt(2.0)))

    def forward(self, input: Tensor) -> Tensor:
        return self.act(input)


class AccurateGELUActivation(nn.Module):
    """Applies GELU approximation that is faster than default and more accurate than QuickGELU."""

    def __init__(self):
        super().__init__()
        self.precomputed_constant = math.sqrt(2 / math.pi)

    def forward(self, input: Tensor) -> Tensor:
        return 0.5 * input * (1 + torch.tanh(self.precomputed_constant * (input + 0.044715 * torch.pow(input, 3))))


class LaplaceActivation(nn.Module):
    """Applies elementwise activation based on Laplace function."""

    def __init__(self):
        super().__init__()
        self.act = self.laplace

    def laplace(self, input, mu=0.707107, sigma=0.282095):
        input = (input - mu).div(sigma * math.sqrt(2.0))
        return 0.5 * (1.0 + torch.erf(input))

    def forward(self, input):
        return self.act(input)


class ScaledTanh(nn.Module):
    def __init__(self, exact: bool = True):
        super().__init__()
        if exact:
            self.c = math.sqrt(2 / math.pi)
        else:
            self.c = 0.8

    def forward(self, input: Tensor) -> Tensor:
        return 0.5 * input * (1 + torch.tanh(self.c * (input + 0.044715 * torch.pow(input, 3))))
'''


def test_gelu_in_a_stored_method_and_with_an_init_constant_are_found_and_equivalent() -> None:
    found = sorted(_lines(NANOTRON_ACTIVATIONS, GELU_RULES))
    assert found == [("f13-gelu-erf", "GELUActivation._gelu_python"), ("f13-gelu-tanh-pow", "AccurateGELUActivation")]
    new = fixed(NANOTRON_ACTIVATIONS, GELU_RULES, applied=2)
    assert "return nn.functional.gelu(input)" in new
    assert 'return nn.functional.gelu(input, approximate="tanh")' in new
    old_ns, new_ns = load(NANOTRON_ACTIVATIONS, "nanotron_old"), load(new, "nanotron_new")
    inputs = lambda: (torch.randn(4, 33) * 3,)  # noqa: E731
    for cls, args in (("GELUActivation", (True,)), ("GELUActivation", (False,)), ("AccurateGELUActivation", ())):
        compare_modules(old_ns[cls](*args), new_ns[cls](*args), inputs)


# FunASR 1.4.16, funasr/models/transformer/layer_norm.py, ScaleNorm (lines 171-191), docstrings left out;
# `Similarity` holds the near forms: CLIP-style unit vectors (no scale) and a scaled L1 norm.
FUNASR_SCALE_NORM = '''
import torch
from torch import nn


class ScaleNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.scale = dim**-0.5
        self.eps = eps
        self.g = nn.Parameter(torch.ones(1))

    def forward(self, x):
        norm = torch.norm(x, dim=-1, keepdim=True) * self.scale
        return x / norm.clamp(min=self.eps) * self.g


class Similarity(nn.Module):
    def forward(self, image_features, text_features):
        image_features = image_features / image_features.norm(dim=-1, keepdim=True)
        scale = text_features.shape[-1] ** -0.5
        text_features = text_features / (text_features.norm(p=1, dim=-1, keepdim=True) * scale)
        return image_features @ text_features.t()
'''


def test_the_l2_norm_scaled_to_the_rms_is_reported_without_a_fix() -> None:
    found = [(f.rule_id, f.scope_name, f.fixable) for f in findings_of(FUNASR_SCALE_NORM, RMS_RULES)]
    assert found == [("f12-rmsnorm-norm", "ScaleNorm", False)]
