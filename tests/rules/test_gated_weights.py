"""Family 14 forms found by the recall census of stop 23 (docs/notes/mech60.md).

1. `f14-gated-weights`: a gated MLP whose gate and up projections are products with weight tensors, not
   `nn.Linear` submodules: stacked expert weights run with `torch.bmm` (Llama 4 style grouped experts),
   per-expert `x @ w1[i].transpose(-2, -1)` in a loop, `F.linear(x, self.w1)` of a quantised feed-forward,
   and a module-level helper handed the weights. Detection only. Refused: a ReLU gate, one weight on both
   sides, products of two inputs, products of two activations (`silu(x @ k) * (x @ v)`).
2. The chunked rules (`f14-gated-chunked`, `-first`, `-indexed`, `-indexed-last`) with an activation the
   constructor is handed (`GLU(dim, inner, activation)`, `inner_activation or nn.SiLU()`): found and fixed,
   outputs and gradients bit-identical. Refused: a ReLU, a Sigmoid (classic GLU) or a LayerNorm on the gate.

The classes are written here in the shapes the census read (grouped expert weights, x-transformers style
GLU with a multiplier, a Dauphin feed-forward), not copied.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attention_harness import findings_of, fixed, load, rules_of  # noqa: E402

from equivalence import compare_modules  # noqa: E402

pytestmark = pytest.mark.torch

RULES = rules_of("f14-swiglu", "f14-gated-weights")

WEIGHTS = '''
import torch
import torch.nn.functional as F
from torch import nn


def _gated(x, w_gate, w_up, w_down):
    return F.linear(F.gelu(F.linear(x, w_gate)) * F.linear(x, w_up), w_down)


class GroupedExperts(nn.Module):
    def __init__(self, num_experts, dim, hidden):
        super().__init__()
        self.num_experts = num_experts
        self.dim = dim
        self.w1 = nn.Parameter(torch.randn(num_experts, dim, hidden))
        self.w2 = nn.Parameter(torch.randn(num_experts, hidden, dim))
        self.w3 = nn.Parameter(torch.randn(num_experts, dim, hidden))

    def forward(self, routed):
        x = routed.view(self.num_experts, -1, self.dim)
        h = F.silu(torch.bmm(x, self.w1)) * torch.bmm(x, self.w3)
        return torch.bmm(h, self.w2).view(-1, self.dim)


class LoopExperts(nn.Module):
    def __init__(self, num_experts, dim, hidden):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(num_experts, hidden, dim))
        self.w2 = nn.Parameter(torch.randn(num_experts, dim, hidden))
        self.w3 = nn.Parameter(torch.randn(num_experts, hidden, dim))

    def forward(self, tokens, counts):
        outputs = []
        for i, chunk in enumerate(torch.split(tokens, counts, dim=0)):
            h = F.silu(chunk @ self.w1[i].transpose(-2, -1))
            h = h * (chunk @ self.w3[i].transpose(-2, -1))
            outputs.append(h @ self.w2[i].transpose(-2, -1))
        return torch.cat(outputs)


class QuantFeedForward(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(hidden, dim))
        self.w2 = nn.Parameter(torch.randn(hidden, dim))
        self.w3 = nn.Parameter(torch.randn(dim, hidden))

    def forward(self, x):
        x = F.silu(F.linear(x, self.w1)) * F.linear(x, self.w2)
        return F.linear(x, self.w3)


class HelperBlock(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w_gate = nn.Parameter(torch.randn(hidden, dim))
        self.w_up = nn.Parameter(torch.randn(hidden, dim))
        self.w_down = nn.Parameter(torch.randn(dim, hidden))

    def forward(self, x):
        return _gated(x, self.w_gate, self.w_up, self.w_down)
'''

NOT_WEIGHTS = '''
import torch
import torch.nn.functional as F
from torch import nn


class ReluExperts(nn.Module):
    def __init__(self, e, dim, hidden):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(e, dim, hidden))
        self.w3 = nn.Parameter(torch.randn(e, dim, hidden))

    def forward(self, x):
        return F.relu(torch.bmm(x, self.w1)) * torch.bmm(x, self.w3)


class OneWeight(nn.Module):
    def __init__(self, e, dim, hidden):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(e, dim, hidden))

    def forward(self, x):
        return F.silu(torch.bmm(x, self.w1)) * torch.bmm(x, self.w1)


class TwoInputs(nn.Module):
    def __init__(self, e, dim, hidden):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(e, dim, hidden))
        self.w3 = nn.Parameter(torch.randn(e, dim, hidden))

    def forward(self, x, y):
        return F.silu(torch.bmm(x, self.w1)) * torch.bmm(y, self.w3)


class Activations(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.to_k = nn.Linear(dim, dim)
        self.to_v = nn.Linear(dim, dim)

    def forward(self, q, x):
        k = self.to_k(x).transpose(-2, -1)
        v = self.to_v(x).transpose(-2, -1)
        return F.silu(q @ k) * (q @ v)
'''

PASSED_IN = '''
import torch
from torch import nn


class GLU(nn.Module):
    def __init__(self, dim_in, dim_out, activation, mult_bias=False):
        super().__init__()
        self.act = activation
        self.proj = nn.Linear(dim_in, dim_out * 2)
        self.mult_bias = nn.Parameter(torch.ones(dim_out)) if mult_bias else 1.0

    def forward(self, x):
        x, gate = self.proj(x).chunk(2, dim=-1)
        return x * self.act(gate) * self.mult_bias


class DauphinFeedForward(nn.Module):
    def __init__(self, dim, inner, inner_activation=None):
        super().__init__()
        self.inner_proj = nn.Linear(dim, inner * 2)
        self.inner_activation = nn.SiLU() if inner_activation is None else inner_activation
        self.output_proj = nn.Linear(inner, dim)

    def forward(self, seqs):
        seqs = self.inner_proj(seqs)
        split1, split2 = seqs.chunk(2, dim=-1)
        seqs = self.inner_activation(split1) * split2
        return self.output_proj(seqs)


class FeedForward(nn.Module):
    # x-transformers builds its GLU in the same file with the activation its flags chose (a local): the file
    # chooses it, so the GLU is reported (with no construction here it would be the caller's choice)
    def __init__(self, dim, inner, swish=False):
        super().__init__()
        activation = nn.SiLU() if swish else nn.GELU()
        self.glu = GLU(dim, inner, activation)

    def forward(self, x):
        return self.glu(x)
'''

NOT_GATED = '''
from torch import nn


class ReGLU(nn.Module):
    def __init__(self, dim_in, dim_out):
        super().__init__()
        self.act = nn.ReLU()
        self.proj = nn.Linear(dim_in, dim_out * 2)

    def forward(self, x):
        x, gate = self.proj(x).chunk(2, dim=-1)
        return x * self.act(gate)


class SigmoidGLU(nn.Module):
    def __init__(self, dim_in, dim_out):
        super().__init__()
        self.gate_act = nn.Sigmoid()
        self.proj = nn.Linear(dim_in, dim_out * 2)

    def forward(self, x):
        x, gate = self.proj(x).chunk(2, dim=-1)
        return x * self.gate_act(gate)


class NormGate(nn.Module):
    def __init__(self, dim_in, dim_out):
        super().__init__()
        self.norm = nn.LayerNorm(dim_out)
        self.proj = nn.Linear(dim_in, dim_out * 2)

    def forward(self, x):
        x, gate = self.proj(x).chunk(2, dim=-1)
        return x * self.norm(gate)


class ListActs(nn.Module):
    def __init__(self, dim_in, dim_out):
        super().__init__()
        self.acts = nn.ModuleList([nn.SiLU(), nn.ReLU()])
        self.proj = nn.Linear(dim_in, dim_out * 2)

    def forward(self, x):
        x, gate = self.proj(x).chunk(2, dim=-1)
        return x * self.acts[1](gate)
'''

EXACT = {"atol": 0.0, "rtol": 0.0, "grad_atol": 0.0, "grad_rtol": 0.0}


def test_weight_products_are_found_without_a_fix() -> None:
    found = sorted((f.scope_name, f.rule_id, f.fixable) for f in findings_of(WEIGHTS, RULES))
    assert found == [
        ("GroupedExperts", "f14-gated-weights", False),
        ("HelperBlock", "f14-gated-weights", False),
        ("LoopExperts", "f14-gated-weights", False),
        ("QuantFeedForward", "f14-gated-weights", False),
    ]


def test_weight_look_alikes_are_refused() -> None:
    assert [(f.scope_name, f.rule_id) for f in findings_of(NOT_WEIGHTS, RULES)] == []


def test_passed_in_activation_is_found_and_fixed() -> None:
    found = sorted((f.scope_name, f.rule_id, f.fixable) for f in findings_of(PASSED_IN, RULES))
    assert found == [
        ("DauphinFeedForward", "f14-gated-chunked-first", True),
        ("GLU", "f14-gated-chunked", True),
    ]
    new = fixed(PASSED_IN, RULES, applied=2)
    assert "fused_gated_activation(self.proj(x), self.act) * self.mult_bias" in new
    assert "fused_gated_activation(seqs, self.inner_activation, gate=0)" in new


@pytest.mark.parametrize("activation", ["silu", "gelu", "sigmoid"])
def test_passed_in_activation_fix_is_equivalent(activation: str) -> None:
    new = fixed(PASSED_IN, RULES, applied=2)
    old_mod, new_mod = load(PASSED_IN, f"passed_old_{activation}"), load(new, f"passed_new_{activation}")
    act = {"silu": torch.nn.SiLU, "gelu": torch.nn.GELU, "sigmoid": torch.nn.Sigmoid}[activation]
    torch.manual_seed(0)
    original = old_mod["GLU"](8, 12, act(), mult_bias=True)
    compare_modules(original, new_mod["GLU"](8, 12, act(), mult_bias=True), lambda: (torch.randn(3, 5, 8),),
                    **EXACT)
    torch.manual_seed(0)
    original = old_mod["DauphinFeedForward"](8, 12, None if activation == "silu" else act())
    rewritten = new_mod["DauphinFeedForward"](8, 12, None if activation == "silu" else act())
    compare_modules(original, rewritten, lambda: (torch.randn(3, 5, 8),), **EXACT)


def test_other_gates_are_refused() -> None:
    assert [(f.scope_name, f.rule_id) for f in findings_of(NOT_GATED, RULES)] == []
