"""A gated MLP (`f14-swiglu`) whose activation is held however the code holds it: a custom activation class, a
constructor parameter, a lambda, a registry or `getattr` lookup. The fused GEMM computes exactly `gate(x)`
and `up(x)`, so the fix is right whatever callable runs on the gate; the helper is handed that callable
(`gated_activation(self.w1_w3(x), self.act)`).

Each rewrite is exec'd next to the original and compared by `test_fusions._compare`: outputs, input
gradients and every parameter's gradient (mapped through the checkpoint hooks), checkpoints loading both ways
with `strict=True`, in train and eval mode, CPU, fixed seeds (0, 7, 8, 123), float32, atol 1e-5 / rtol 1e-5
(two GEMMs become one: the order of the sums may differ)."""

from __future__ import annotations

import textwrap

import pytest

torch = pytest.importorskip("torch")

from test_fusions import CPU, Case, _compare, fix, randn, rules_of  # noqa: E402

from adopter.analysis import analyse  # noqa: E402
from adopter.engine import find  # noqa: E402
from adopter.engine.types import Finding  # noqa: E402

RULES = rules_of("f14-swiglu")

# A stateful activation class of the file (so not inlined as a function), chosen when no activation is passed.
CUSTOM_CLASS = """
import torch
from torch import nn


class Swish(nn.Module):
    def __init__(self, beta=1.0):
        super().__init__()
        self.beta = beta

    def forward(self, x):
        return x * torch.sigmoid(self.beta * x)


class FeedForward(nn.Module):
    def __init__(self, dim, hidden, activation=None):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden)
        self.w2 = nn.Linear(hidden, dim)
        self.w3 = nn.Linear(dim, hidden)
        self.act = activation if activation is not None else Swish(beta=1.5)

    def forward(self, x):
        return self.w2(self.w3(x) * self.act(self.w1(x)))
"""

# torchtune's FeedForward with the projections built here: the activation a constructor parameter (with
# torchtune's SiLU default: a required one no construction in the file passes is the caller's choice and not
# reported, `engine.gate_activations`), applied in one statement and multiplied in the next.
PARAMETER = """
from torch import nn


class FeedForward(nn.Module):
    def __init__(self, dim, hidden, activation=nn.SiLU()):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        self.activation = activation

    def forward(self, x):
        h = self.activation(self.w1(x))
        h = h * self.w3(x)
        return self.w2(h)
"""

# diffusers' LuminaFeedForward: each Linear written over several lines, the activation an fp32 SiLU class.
MULTILINE = """
import torch
import torch.nn.functional as F
from torch import nn


class UpcastSiLU(nn.Module):
    def __init__(self, dtype=torch.float32):
        super().__init__()
        self.dtype = dtype

    def forward(self, inputs):
        return F.silu(inputs.to(self.dtype)).to(inputs.dtype)


class LuminaFeedForward(nn.Module):
    def __init__(self, dim, inner_dim):
        super().__init__()
        self.linear_1 = nn.Linear(
            dim,
            inner_dim,
            bias=False,
        )
        self.linear_2 = nn.Linear(
            inner_dim,
            dim,
            bias=False,
        )
        self.linear_3 = nn.Linear(
            dim,
            inner_dim,
            bias=False,
        )
        self.silu = UpcastSiLU()

    def forward(self, x):
        return self.linear_2(self.silu(self.linear_1(x)) * self.linear_3(x))
"""

# An optional activation: a submodule bound under a condition, an identity otherwise (the identity's path passes
# the gate on: `gate(x) * up(x)`); the helper calls `self.act`, whichever it is.
OPTIONAL = """
from torch import nn


class FeedForward(nn.Module):
    def __init__(self, dim, hidden, act_layer=None):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden)
        self.w2 = nn.Linear(hidden, dim)
        self.w3 = nn.Linear(dim, hidden)
        self.act = act_layer() if act_layer is not None else nn.Identity()

    def forward(self, x):
        return self.w2(self.act(self.w1(x)) * self.w3(x))
"""

CASES = [
    Case("custom-class", "f14-swiglu", CUSTOM_CLASS, "FeedForward", (8, 24), randn(2, 3, 8), atol=1e-5),
    Case("custom-class-passed", "f14-swiglu", CUSTOM_CLASS, "FeedForward", (8, 24, torch.nn.Mish()),
         randn(2, 3, 8), atol=1e-5),
    Case("parameter-module", "f14-swiglu", PARAMETER, "FeedForward", (8, 24, torch.nn.SiLU()), randn(2, 3, 8),
         atol=1e-5),
    Case("parameter-lambda", "f14-swiglu", PARAMETER, "FeedForward",
         (8, 24, lambda t: t * torch.sigmoid(1.702 * t)), randn(5, 8), atol=1e-5),
    Case("multiline-linears", "f14-swiglu", MULTILINE, "LuminaFeedForward", (8, 24), randn(2, 3, 8), atol=1e-5),
    Case("optional-absent", "f14-swiglu", OPTIONAL, "FeedForward", (8, 24), randn(2, 3, 8), atol=1e-5),
    Case("optional-present", "f14-swiglu", OPTIONAL, "FeedForward", (8, 24, torch.nn.SiLU), randn(2, 3, 8),
         atol=1e-5),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_gated_mlp_with_any_activation_is_fused_equivalently(case: Case) -> None:
    source = textwrap.dedent(case.source)
    case.source = source
    new_source, count, reasons = fix(source, RULES)
    assert count == 1 and new_source is not None and not reasons, reasons
    assert "gated_activation(self." in new_source
    _compare(case, new_source)
    again, count_again, _ = fix(new_source, RULES)
    assert again is None and count_again == 0


def test_the_multiline_linear_keeps_its_layout() -> None:
    new_source, _, reasons = fix(textwrap.dedent(MULTILINE), RULES)
    assert new_source is not None, reasons
    assert "        self.linear_1_linear_3 = nn.Linear(\n            dim,\n            2 * inner_dim,\n" in new_source


def _gated(act_binding: str, imports: str = "") -> str:
    return textwrap.dedent(f"""
        import torch
        from torch import nn
        {imports}


        class MLP(nn.Module):
            def __init__(self, dim, hidden, name="silu", config=None):
                super().__init__()
                self.gate = nn.Linear(dim, hidden)
                self.up = nn.Linear(dim, hidden)
                self.down = nn.Linear(hidden, dim)
                self.act = {act_binding}

            def forward(self, x):
                return self.down(self.act(self.gate(x)) * self.up(x))
    """)


def _findings(source: str) -> list[Finding]:
    return [f for f in find(analyse(source), RULES, CPU) if f.rule_id == "f14-swiglu"]


# (the activation's binding, the imports it needs, whether the gated MLP is a site); one test, so that the
# cases that were already right on the base do not stand alone as tests that cannot fail there
BINDINGS = [
    ("ACTIVATIONS[name]()", "from .activations import ACTIVATIONS", True),  # a registry of classes
    ("get_activation(name)", "from .activations import get_activation", True),  # a factory by name
    ('getattr(nn, "SiLU")()', "", True),
    ("lambda t: t * torch.sigmoid(t)", "", True),
    ("config.hidden_activation", "", True),  # a typed config's callable
    ("FP32SiLU()", "from .activations import FP32SiLU", True),  # a class of another file
    ('ACT2FN["relu"]', "from transformers.activations import ACT2FN", False),  # a literal key of another kind
    ("nn.Dropout(0.1)", "", False),  # a torch layer that is no activation: not a gated MLP
    ("nn.LayerNorm(hidden)", "", False),
    ("nn.Sequential(nn.SiLU(), nn.Dropout(0.1))", "", False),  # a container
]


def test_the_activation_is_read_by_what_is_known_of_it() -> None:
    found = [(binding, bool(_findings(_gated(binding, imports)))) for binding, imports, _ in BINDINGS]
    assert found == [(binding, expected) for binding, _, expected in BINDINGS]


def test_a_conditional_expression_of_the_source_is_reported_without_a_fix() -> None:
    # `(act(g) if c else g) * u`: the identity path is written in the statement, and rewriting the product as
    # `gated_activation(..., self.act)` would apply the activation on both paths; only a conditional binding
    # (the same call at the same span on every path) is fixed.
    source = OPTIONAL.replace("self.act = act_layer() if act_layer is not None else nn.Identity()",
                              "self.act = nn.GELU()\n        self.use_act = act_layer is not None")
    source = source.replace("self.w2(self.act(self.w1(x)) * self.w3(x))",
                            "self.w2((self.act(self.w1(x)) if self.use_act else self.w1(x)) * self.w3(x))")
    found = _findings(textwrap.dedent(source))
    assert len(found) == 1 and not found[0].fixable and "control-flow path" in (found[0].no_fix_reason or "")
    assert [f.fixable for f in _findings(textwrap.dedent(OPTIONAL))] == [True]
