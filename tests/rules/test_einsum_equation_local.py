"""An einsum equation held in a local string, and values made from the probabilities (issue 20, mech40).

nystrom-attention 0.0.14 `nystrom_attention.py` writes its three similarity einsums with one equation bound to
a local (`einops_eq = '... i d, ... j d -> ... i j'`, then `einsum(einops_eq, q, k_landmarks)`): the flow reads
the name as the string it holds (`flow.values`, from `FlowFrame.constants`), as it reads an f-string built from
such locals. The landmark queries' attention over every key, `softmax(q_l kᵀ) · v`, is then a family-10 site.
The landmarks' own probabilities go to a Newton iteration for their pseudo-inverse, `x @ z` with `z` made from
`x`: values computed from the probabilities are not attention's values (`independent($v, $p)`).
"""

from __future__ import annotations

import pytest
import torch
from attention_harness import findings_of, fixed, load, rules_of

from adopter.engine.types import Finding
from equivalence import compare_modules

RULES = rules_of("f10-manual-attention-sdpa")

LOCAL_EQUATION = '''
import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (t.reshape(b, n, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        eq = 'b h i d, b h j d -> b h i j'
        sim = torch.einsum(eq, q, k) * self.scale
        attn = sim.softmax(dim=-1)
        out = torch.einsum('b h i j, b h j d -> b h i d', attn, v)
        return self.to_out(out.transpose(1, 2).reshape(b, n, d))
'''

NYSTROM = '''
import torch
from torch import nn, einsum


def pinv(x, iters=3):
    z = x.transpose(-1, -2) / (x.abs().sum(dim=-1).max() * x.abs().sum(dim=-2).max())
    eye = torch.eye(x.shape[-1])
    for _ in range(iters):
        xz = x @ z
        z = 0.25 * z @ (13 * eye - (xz @ (15 * eye - (xz @ (7 * eye - xz)))))
    return z


class Nystrom(nn.Module):
    def forward(self, q, k, v, q_l, k_l):
        einops_eq = '... i d, ... j d -> ... i j'
        sim2 = einsum(einops_eq, q_l, k_l)
        sim3 = einsum(einops_eq, q_l, k)
        attn2 = sim2.softmax(dim=-1)
        attn3 = sim3.softmax(dim=-1)
        return pinv(attn2) @ (attn3 @ v)
'''


def attention(code: str) -> list[Finding]:
    return [f for f in findings_of(code, RULES) if f.family == 10]


def line(code: str, needle: str) -> int:
    return next(i for i, text in enumerate(code.splitlines()) if needle in text)


def test_an_equation_in_a_local_is_read_as_its_string_and_the_fix_is_equivalent() -> None:
    found = attention(LOCAL_EQUATION)
    assert [(f.span.start_line, f.fixable) for f in found] == [(line(LOCAL_EQUATION, "einsum(eq, q, k)"), True)]
    new = fixed(LOCAL_EQUATION, RULES, applied=1)
    assert "scaled_dot_product_attention(" in new and "softmax" not in new
    torch.manual_seed(0)
    original = load(LOCAL_EQUATION, "local_eq_orig")["Attention"](16, 4)
    rewritten = load(new, "local_eq_new")["Attention"](16, 4)
    # float64 on CPU, fixed seed: outputs within 1e-9, gradients within 1e-8 (atol; rtol 1e-7)
    compare_modules(original.double(), rewritten.double(),
                    lambda: (torch.randn(2, 5, 16, dtype=torch.float64),), atol=1e-9, rtol=1e-7)


def test_a_local_that_holds_no_single_product_equation_is_not_read_as_one() -> None:
    assert len(attention(LOCAL_EQUATION)) == 1  # the positive twin
    # bound to another string on a second line (no longer one constant), to a call, or to a product that is no q·kᵀ
    rebound = LOCAL_EQUATION.replace("        sim = torch.einsum(eq,", "        eq = eq.strip() + ''\n"
                                     "        sim = torch.einsum(eq,")
    assert attention(rebound) == []
    called = LOCAL_EQUATION.replace("eq = 'b h i d, b h j d -> b h i j'", "eq = self.equation()")
    assert attention(called) == []
    other = LOCAL_EQUATION.replace("eq = 'b h i d, b h j d -> b h i j'", "eq = 'b h i d, b h j d -> b h d j'")
    assert attention(other) == []


@pytest.mark.parametrize("source", [
    NYSTROM,
    # the equation written out: the guard alone keeps the iteration silent
    NYSTROM.replace("einsum(einops_eq,", "einsum('... i d, ... j d -> ... i j',"),
], ids=["local-equation", "literal-equation"])
def test_nystrom_landmark_attention_is_a_site_and_the_pseudo_inverse_iteration_is_not(source: str) -> None:
    found = attention(source)
    assert [f.span.start_line for f in found] == [line(source, "sim3 = einsum")]
    # its twin with the iteration's matrix not made from the probabilities: softmax(q_l k_lᵀ) · z is attention
    tail = source.split("\n\n\nclass Nystrom")[1]
    twin = ("\nimport torch\nfrom torch import nn, einsum\n\n\ndef pinv(x, iters=3):\n"
            "    z = torch.ones(x.shape[-1], x.shape[-1])\n    return x @ z\n\n\nclass Nystrom" + tail)
    assert line(twin, "sim2 = einsum") in [f.span.start_line for f in attention(twin)]
    # the near form the guard keeps silent is a real pseudo-inverse, not attention: z ≈ pinv(softmax(s))
    torch.manual_seed(0)
    x = torch.randn(4, 4, dtype=torch.float64).softmax(dim=-1)
    computed = load(NYSTROM, "nystrom")["pinv"](x, iters=12)
    torch.testing.assert_close(computed, torch.linalg.pinv(x), atol=1e-6, rtol=1e-6)

