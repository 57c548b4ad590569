"""A gated MLP whose projections are scaled per channel before the product (`f14-gated-scaled`, detection only):
the normalised transformers' feed-forward, `hidden = hidden * s_u`, `gate = gate * s_g * dim ** 0.5`,
`F.silu(gate) * hidden`, over projections that are `nn.Linear` or modules of the file that are one.

Shaped on (the code rewritten at fixture size):
- vit-pytorch 1.8.9 `vit_pytorch/normalized_vit.py` 37-58 (`NormLinear`: one `nn.Linear` child, its weight
  parametrised, `return self.linear(x)`), 115-141 (`FeedForward`: `nn.Parameter` scales, `* (self.dim ** 0.5)`);
- ngpt-pytorch 0.2.16 `nGPT_pytorch/nGPT.py` 67-91 (`Scale`: a module with no input returning its parameter times
  a constant), 138-189 (`NormLinear`: `return self.linear(x) * self.scale`), 315-356 (`FeedForward`: the classes
  built through `NormLinear_ = partial(NormLinear, ...)`, the scales called `self.hidden_scale()`);
- x-mlps-pytorch 0.6.9 `x_mlps_pytorch/nff.py` 96-177 (`NormLinear` with `return self.linear(x)`, `partial`, `Scale`).
- refusals: x-mlps-pytorch 0.6.9 `x_mlps_pytorch/grouped_nff.py` 127-169 (the same `NormLinear` over an
  `nn.Conv1d` of kernel 1: not a Linear of the file's reading, and a GLU over channels is not family 14); a gate
  multiplied by another projection (an activation, not a factor) or by a mask the forward is handed; an
  `nn.Embedding` lookup as the gate; ReLU and sigmoid gates; two inputs; a "scale"
  module that reads the input; a wrapper with a LoRA branch (litgpt 0.5.4 `litgpt/lora.py` 165-172: a linear map too,
  but a form of one package, not read).
"""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules

NORMALIZED_VIT = '''import torch
import torch.nn.functional as F
from torch import nn
from torch.nn import Module
from torch.nn.utils import parametrize


class L2Norm(Module):
    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, t):
        return F.normalize(t, dim=self.dim, p=2)


class NormLinear(Module):
    def __init__(self, dim, dim_out, norm_dim_in=True):
        super().__init__()
        self.linear = nn.Linear(dim, dim_out, bias=False)
        parametrize.register_parametrization(self.linear, "weight", L2Norm(dim=-1 if norm_dim_in else 0))

    @property
    def weight(self):
        return self.linear.weight

    def forward(self, x):
        return self.linear(x)


class FeedForward(Module):
    def __init__(self, dim, dim_inner):
        super().__init__()
        dim_inner = int(dim_inner * 2 / 3)
        self.dim = dim
        self.to_hidden = NormLinear(dim, dim_inner)
        self.to_gate = NormLinear(dim, dim_inner)
        self.hidden_scale = nn.Parameter(torch.ones(dim_inner))
        self.gate_scale = nn.Parameter(torch.ones(dim_inner))
        self.to_out = NormLinear(dim_inner, dim, norm_dim_in=False)

    def forward(self, x):
        hidden, gate = self.to_hidden(x), self.to_gate(x)
        hidden = hidden * self.hidden_scale
        gate = gate * self.gate_scale * (self.dim ** 0.5)
        hidden = F.silu(gate) * hidden
        return self.to_out(hidden)
'''
VIT_SITE = 43  # the projections' line

NGPT = '''from functools import partial

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn import Module


class Scale(Module):
    def __init__(self, dim, init=1.0, scale=1.0):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(dim) * scale)
        self.forward_scale = init / scale

    def forward(self):
        return self.scale * self.forward_scale


class NormLinear(Module):
    def __init__(self, dim, dim_out, parametrize=True, groups=1):
        super().__init__()
        self.linear = nn.Linear(dim, dim_out, bias=False)
        self.scale = groups ** -1
        self.parametrize = parametrize

    def forward(self, x):
        return self.linear(x) * self.scale


class FeedForward(Module):
    def __init__(self, dim, *, expand_factor=4, manual_norm_weights=False, s_hidden_init=1.0, s_gate_init=1.0):
        super().__init__()
        NormLinear_ = partial(NormLinear, parametrize=not manual_norm_weights)
        self.dim = dim
        dim_inner = int(dim * expand_factor * 2 / 3)
        self.to_hidden = NormLinear_(dim, dim_inner)
        self.to_gate = NormLinear_(dim, dim_inner)
        self.hidden_scale = Scale(dim_inner, s_hidden_init)
        self.gate_scale = Scale(dim_inner, s_gate_init)
        self.to_out = NormLinear_(dim_inner, dim)

    def forward(self, x):
        hidden, gate = self.to_hidden(x), self.to_gate(x)
        hidden = hidden * self.hidden_scale()
        gate = gate * self.gate_scale() * (self.dim ** 0.5)
        hidden = F.silu(gate) * hidden
        return self.to_out(hidden)
'''
NGPT_SITE = 43

# x-mlps-pytorch's nff: nGPT's FeedForward over normalised ViT's one-child NormLinear
NFF = NGPT.replace("        return self.linear(x) * self.scale\n", "        return self.linear(x)\n")


def gated(code: str) -> list[tuple[str, int]]:
    env = Environment("cpu", frozenset(), "2.13.0")
    return [(f.rule_id, f.span.start_line + 1) for f in check(analyse(code, "m.py"), load_rules().rules, env).findings
            if f.family == 14]


def test_normalized_vit_feed_forward() -> None:
    assert gated(NORMALIZED_VIT) == [("f14-gated-scaled", VIT_SITE)]


def test_ngpt_feed_forward_scale_modules_and_partial() -> None:
    assert gated(NGPT) == [("f14-gated-scaled", NGPT_SITE)]


def test_nff_feed_forward_one_child_wrapper() -> None:
    assert gated(NFF) == [("f14-gated-scaled", NGPT_SITE)]


def test_plain_linears_gate_scaled_only_and_one_statement() -> None:
    code = NORMALIZED_VIT.replace("NormLinear(dim, dim_inner)", "nn.Linear(dim, dim_inner, bias=False)")
    assert gated(code) == [("f14-gated-scaled", VIT_SITE)]
    gate_only = code.replace("        hidden = hidden * self.hidden_scale\n", "")
    assert gated(gate_only) == [("f14-gated-scaled", VIT_SITE)]
    inline = code.replace(
        "        hidden, gate = self.to_hidden(x), self.to_gate(x)\n"
        "        hidden = hidden * self.hidden_scale\n"
        "        gate = gate * self.gate_scale * (self.dim ** 0.5)\n"
        "        hidden = F.silu(gate) * hidden\n",
        "        hidden = F.gelu(self.gate_scale * self.to_gate(x)) * (self.to_hidden(x) * self.hidden_scale)\n")
    assert gated(inline) == [("f14-gated-scaled", VIT_SITE)]


def test_detection_only_with_a_reason() -> None:
    env = Environment("cpu", frozenset(), "2.13.0")
    for code in (NORMALIZED_VIT, NGPT):
        found = [f for f in check(analyse(code, "m.py"), load_rules().rules, env).findings if f.family == 14]
        assert found and not any(f.fixable for f in found)
        assert all(f.no_fix_reason for f in found)


def test_unscaled_gate_stays_f14_swiglu() -> None:
    code = NORMALIZED_VIT.replace("NormLinear(dim, dim_inner)", "nn.Linear(dim, dim_inner, bias=False)")
    code = code.replace("        hidden = hidden * self.hidden_scale\n", "").replace(
        "        gate = gate * self.gate_scale * (self.dim ** 0.5)\n", "")
    assert [r for r, _ in gated(code)] == ["f14-swiglu"]


GROUPED_CONV = NFF.replace("self.linear = nn.Linear(dim, dim_out, bias=False)",
                           "self.linear = nn.Conv1d(dim * groups, dim_out * groups, 1, groups=groups, bias=False)")

LORA_WRAPPER = NORMALIZED_VIT.replace(
    "        return self.linear(x)\n",
    "        pretrained = self.linear(x)\n"
    "        return pretrained + (x @ self.lora_A.transpose(0, 1) @ self.lora_B.transpose(0, 1)) * self.scaling\n")


@pytest.mark.parametrize("code", [
    GROUPED_CONV,  # a kernel-1 Conv1d inside the wrapper: not read as a Linear
    LORA_WRAPPER,  # a LoRA branch beside the Linear: not read as one Linear (still a linear map of x, but a form
    # of one dev package, litgpt; left, see docs/notes/mech102.md)
    NORMALIZED_VIT.replace("gate * self.gate_scale", "gate * self.to_hidden(x)"),  # an activation, not a factor
    NORMALIZED_VIT.replace("F.silu(gate)", "F.relu(gate)"),
    NORMALIZED_VIT.replace("F.silu(gate)", "torch.sigmoid(gate)"),
    NORMALIZED_VIT.replace("def forward(self, x):\n        hidden, gate = self.to_hidden(x), self.to_gate(x)",
                           "def forward(self, x, y):\n        hidden, gate = self.to_hidden(x), self.to_gate(y)"),
    NORMALIZED_VIT.replace("def forward(self, x):\n        hidden, gate", "def forward(self, x, mask):\n        hidden, gate").replace(
        "gate * self.gate_scale", "gate * mask"),  # a mask handed to the forward: not a learned factor
    NORMALIZED_VIT.replace("self.to_gate = NormLinear(dim, dim_inner)", "self.to_gate = nn.Embedding(dim, dim_inner)"),
    NGPT.replace("return self.scale * self.forward_scale", "return self.scale * t").replace(
        "def forward(self):", "def forward(self, t):").replace("self.gate_scale()", "self.gate_scale(x)"),
])
def test_refusals(code: str) -> None:
    assert "f14-gated-scaled" not in [r for r, _ in gated(code)]
