"""Family 11: a LayerNorm whose centred value is bound once and read twice (`xc = x - mean`, its square's mean,
`xc / sqrt(var + eps)`), also rebinding the input (`x = x - x.mean(-1, keepdim=True)`).

`f11-layernorm` needs `x - mean` written in both places; this spelling recurs across packages (the census in
`docs/notes/mech55.md`). The fix is `f11-layernorm`'s (`F.layer_norm(x, x.shape[-1:], eps=eps)`). Compared with
the original (torch, CPU, float32, seed 0; strict state-dict loading; eval and train; non-trivial weight and
bias): outputs atol 1e-5 / rtol 1e-4, input and parameter gradients atol 1e-4 / rtol 1e-4.
"""

from __future__ import annotations

import pytest

from attention_harness import findings_of, fixed, load, rules_of

RULES = rules_of("f11-layernorm", "f12-rmsnorm")

CENTRED = '''
import torch
from torch import nn


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))
        self.eps = eps

    def forward(self, x):
        CENTRE
        var = SQUARE.mean(-1, keepdim=True)
        x = NORMALISE
        return self.weight * x + self.bias
'''

# (centring statement, square of the centred value, normalisation)
SPELLINGS = {
    "bound": ("xc = x - x.mean(-1, keepdim=True)", "xc.pow(2)", "xc / torch.sqrt(var + self.eps)"),
    "mean-first": ("mu = x.mean(dim=-1, keepdim=True); xc = x - mu", "(xc ** 2)", "xc / (var + self.eps).sqrt()"),
    "rebound-rsqrt": ("x = x - x.mean(-1, keepdim=True)", "(x * x)", "x * torch.rsqrt(var + self.eps)"),
    "square-rsqrt": ("x = x - x.mean(-1, keepdim=True)", "x.square()", "x * (var + self.eps).rsqrt()"),
}


def _source(spelling: str) -> str:
    centre, square, normalise = SPELLINGS[spelling]
    return CENTRED.replace("CENTRE", centre).replace("SQUARE", square).replace("NORMALISE", normalise)


def _family11(source: str) -> list[tuple[str, int]]:
    return [(f.rule_id, f.span.start_line + 1) for f in findings_of(source, RULES) if f.family == 11]


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_a_centred_value_read_twice_is_a_layernorm(spelling: str) -> None:
    found = _family11(_source(spelling))
    assert len(found) == 1 and found[0][0].startswith("f11-layernorm-centred"), found


def test_the_uncentred_input_divided_is_not_a_layernorm() -> None:
    source = _source("bound").replace("x = xc / torch.sqrt", "x = x / torch.sqrt")
    assert _family11(source) == []


def test_the_statistics_over_a_middle_axis_are_not_a_layernorm() -> None:
    source = _source("bound").replace("(-1, keepdim=True)", "(2, keepdim=True)")
    assert _family11(source) == []


def test_the_centred_value_used_after_is_a_site_without_a_fix() -> None:
    source = _source("bound").replace("return self.weight * x + self.bias", "return self.weight * x + self.bias, xc")
    found = [f for f in findings_of(source, RULES) if f.family == 11]
    assert len(found) == 1 and not found[0].fixable


@pytest.mark.torch
@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_the_fix_is_equivalent(spelling: str) -> None:
    torch = pytest.importorskip("torch")
    from equivalence import compare_modules

    source = _source(spelling).replace("; ", "\n        ")
    new = fixed(source, rules_of("f11-layernorm"), applied=1)
    assert "x = nn.functional.layer_norm(x, x.shape[-1:], eps=self.eps)" in new
    old_cls, new_cls = load(source, f"lnc_old_{spelling}")["LayerNorm"], load(new, f"lnc_new_{spelling}")["LayerNorm"]
    torch.manual_seed(0)
    original = old_cls(16)
    with torch.no_grad():
        original.weight.add_(torch.randn(16))
        original.bias.add_(torch.randn(16))
    compare_modules(original, new_cls(16), lambda: (torch.randn(2, 5, 16) * 3 + 1,))
