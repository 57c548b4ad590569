"""Family 12 written as a division by the RMS (`x / sqrt(mean(x**2) + eps)`, rule `f12-rmsnorm-sqrt`), issue 20.

The shapes are the dev census's (docs/notes/mech84.md, form M20), written anew: a `register_buffer` weight applied
after the division, the mean square accumulated in float32 and spelled with `.add(eps).sqrt()`, a module-level
function with the square written `x * x`. Each fix is compared with the original (torch, CPU, seed 0, strict
state-dict loading both ways, eval and train): outputs, input and parameter gradients in float32, atol 1e-5 /
rtol 1e-4. The look-alikes stay silent: an L2 norm (a sum of squares), a LayerNorm's spread (the mean subtracted
first: family 11's), the RMS of another tensor dividing `x`, and a mean of absolute values.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attention_harness import findings_of, fixed, load, rules_of, skip_reasons  # noqa: E402

from equivalence import compare_modules  # noqa: E402

pytestmark = pytest.mark.torch

RMS_RULES = rules_of("f12-rmsnorm")

DIVIDED = '''
import torch
from torch import nn


class BufferRMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.register_buffer("weight", torch.ones(dim))

    def forward(self, x):
        rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x / rms * self.weight


class UpcastRMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.gain = nn.Parameter(torch.ones(dim))

    def forward(self, hidden):
        norm = hidden.float().pow(2).mean(-1, keepdim=True).add(self.eps).sqrt()
        return self.gain * (hidden / norm).type_as(hidden)


def rms_normalise(t, eps=1e-6):
    denom = torch.sqrt(torch.mean(t * t, dim=-1, keepdim=True) + eps)
    return t / denom


class FunctionalRMSNorm(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return rms_normalise(x) * self.scale


class CastBackRMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.w = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        rms = (x.pow(2).mean(-1, keepdim=True) + self.eps).sqrt().to(x.dtype)
        return self.w * (x / rms)
'''

# The RMS of an up-cast `x` cast back before it divides `x` (autogluon's toto2 `rms_norm`): the result is of `x`'s
# dtype, `F.rms_norm(x.float(), ...)` of float32: a site, no fix.
UPCAST_CAST_BACK = '''
import torch


def rms_norm(x, eps=1e-5):
    rms = (x.float().pow(2).mean(-1, keepdim=True) + eps).sqrt().to(x.dtype)
    return x / rms
'''

LOOK_ALIKES = '''
import torch
from torch import nn


class L2Unit(nn.Module):
    def forward(self, x):
        norm = torch.sqrt(x.pow(2).sum(-1, keepdim=True) + 1e-6)
        return x / norm


class Standardise(nn.Module):
    def forward(self, x):
        mu = x.mean(-1, keepdim=True)
        spread = torch.sqrt((x - mu).pow(2).mean(-1, keepdim=True) + 1e-5)
        return (x - mu) / spread


class DividedByOther(nn.Module):
    def forward(self, x, ref):
        rms = torch.sqrt(ref.pow(2).mean(-1, keepdim=True) + 1e-6)
        return x / rms


class MeanAbs(nn.Module):
    def forward(self, x):
        scale = torch.sqrt(x.abs().mean(-1, keepdim=True) + 1e-6)
        return x / scale
'''


def _found(source: str) -> list[tuple[str, str]]:
    return sorted((f.rule_id, f.scope_name) for f in findings_of(source, RMS_RULES))


def test_rms_divided_by_its_sqrt_is_found_in_each_shape() -> None:
    # the helper's site is reported where its caller inlines it (the class), as for the other f12 rules
    assert _found(DIVIDED) == [("f12-rmsnorm-sqrt", "BufferRMSNorm"), ("f12-rmsnorm-sqrt", "CastBackRMSNorm"),
                               ("f12-rmsnorm-sqrt", "FunctionalRMSNorm"), ("f12-rmsnorm-sqrt", "UpcastRMSNorm")]


def test_up_cast_rms_cast_back_is_a_site_without_a_fix() -> None:
    assert [f.rule_id for f in findings_of(UPCAST_CAST_BACK, RMS_RULES)] == ["f12-rmsnorm-sqrt"]
    (reason,) = skip_reasons(UPCAST_CAST_BACK, RMS_RULES)
    assert "cast back" in reason


def test_look_alikes_of_the_divided_rms_stay_silent() -> None:
    assert [f for f in _found(LOOK_ALIKES) if f[0].startswith("f12")] == []


@pytest.mark.parametrize("cls, shape", [
    ("BufferRMSNorm", (2, 5, 16)), ("UpcastRMSNorm", (2, 5, 16)), ("FunctionalRMSNorm", (3, 16)),
    ("CastBackRMSNorm", (4, 16)),
])
def test_divided_rms_fix_is_equivalent(cls: str, shape: tuple[int, ...]) -> None:
    new = fixed(DIVIDED, RMS_RULES, applied=4)
    assert "sqrt" not in new and new.count("rms_norm(") == 4
    torch.manual_seed(0)
    original = load(DIVIDED, "rms_div_old")[cls](16)
    with torch.no_grad():
        for p in original.parameters():
            p.add_(torch.randn(p.shape) * 0.3)
    compare_modules(original, load(new, "rms_div_new")[cls](16), lambda: (torch.randn(*shape) * 3,))
