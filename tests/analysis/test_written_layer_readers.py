"""The readers of written-out layers: `gelu_approximation` (which GELU a module's forward writes out) and
`layer_norm_roles` (whether it writes a LayerNorm over the last axis out, and which attribute is which), table
driven; and the incremental analysis of a user, which depends on their answers, not on the forward's text.

Forms from the dev census (`bench/written_layers_census.py`): bert-pytorch 0.0.1a4 `model/utils/gelu.py:12`,
sagar-neuron-gpt2 0.1.9 `transfomer/gelu.py:8` and `transfomer/layer_norm.py:11`, texar-pytorch 0.2.4
`custom/activation.py:24` and `:32`, pytorch-pretrained-bert's `BertLayerNorm` (`u`, `s`, `variance_epsilon`).
"""

from __future__ import annotations

import ast
import textwrap

import pytest

from adopter.analysis.names.formula_functions import gelu_approximation
from adopter.analysis.names.formula_norms import layer_norm_roles

from .helpers import arch, reanalysed_after


def _forward(body: str) -> ast.FunctionDef:
    node = ast.parse("def forward(self, x):\n" + textwrap.indent(textwrap.dedent(body), "    ")).body[0]
    assert isinstance(node, ast.FunctionDef)
    return node


@pytest.mark.parametrize(("body", "expected"), [
    ("return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * torch.pow(x, 3))))", "tanh"),
    ("return 0.5 * x * (1 + torch.tanh(torch.sqrt(torch.tensor(2.0 / torch.pi)) * (x + 0.044715 * torch.pow(x, 3))))",
     "tanh"),
    ("return 0.5 * x * (1.0 + torch.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))", "tanh"),
    ("cdf = 0.5 * (1.0 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x.pow(3))))\nreturn x * cdf", "tanh"),
    ("return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))", "none"),
    ('"""Exact GELU."""\nreturn x * 0.5 * (1.0 + torch.erf(x / 1.4142135623730951))', "none"),
    # refused: another activation, an attribute, a rebound local, a call the interpreter does not know
    ("return x * torch.sigmoid(1.702 * x)", None),
    ("return 0.5 * x * (1 + torch.tanh(x))", None),
    ("return self.scale * x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))", None),
    ("y = x * 0.5\ny = y * (1.0 + torch.erf(x / math.sqrt(2.0)))\nreturn y", None),
    ("return F.gelu(x)", None),
    ("return 0.5 * x * (1.0 + torch.tanh(0.79 * (x + 0.044715 * x ** 3)))", None),  # a constant too far off
])
def test_gelu_approximation(body: str, expected: str | None) -> None:
    assert gelu_approximation(_forward(body)) == expected


SAGAR = """
mean = x.mean(dim=-1, keepdim=True)
var = x.var(dim=-1, keepdim=True, unbiased=False)
norm_x = (x - mean) / torch.sqrt(var + self.eps)
return self.scale * norm_x + self.shift
"""
BERT = """
u = x.mean(-1, keepdim=True)
s = (x - u).pow(2).mean(-1, keepdim=True)
x = (x - u) / torch.sqrt(s + self.variance_epsilon)
return self.weight * x + self.bias
"""


@pytest.mark.parametrize(("body", "expected"), [
    (SAGAR, (("eps", "eps"), ("scale", "weight"), ("shift", "bias"))),
    (BERT, (("bias", "bias"), ("variance_epsilon", "eps"), ("weight", "weight"))),
    (BERT.replace("self.variance_epsilon", "1e-12"), (("bias", "bias"), ("weight", "weight"))),
    (BERT.replace("torch.sqrt(s + self.variance_epsilon)", "torch.rsqrt(s + self.eps) ** -1"),
     (("bias", "bias"), ("eps", "eps"), ("weight", "weight"))),
    (SAGAR.replace("x.var(dim=-1, keepdim=True, unbiased=False)", "torch.var(x, dim=-1, keepdim=True, correction=0)"),
     (("eps", "eps"), ("scale", "weight"), ("shift", "bias"))),
    (SAGAR.replace(" + self.shift", ""), (("eps", "eps"), ("scale", "weight"))),
    (SAGAR.replace("norm_x = (x - mean)", "norm_x = (x.float() - mean)"), (("eps", "eps"), ("scale", "weight"),
                                                                          ("shift", "bias"))),
    # transformers' DebertaLayerNorm (modeling_deberta.py:265): computed in float32, cast back to `x.dtype`
    ("dtype = x.dtype\nx = x.float()\n" + BERT.replace("x = (x - u) / torch.sqrt(s + self.variance_epsilon)",
                                                      "x = ((x - u) / torch.sqrt(s + self.variance_epsilon)).to(dtype)"),
     (("bias", "bias"), ("variance_epsilon", "eps"), ("weight", "weight"))),
    # refused
    ("dtype = x.dtype\nx = x.float()\n" + BERT.replace("self.bias", "self.bias * dtype"), None),
    (SAGAR.replace("dim=-1, keepdim=True, unbiased", "dim=1, keepdim=True, unbiased"), None),  # another axis
    (SAGAR.replace("x.mean(dim=-1, keepdim=True)", "x.mean(dim=(-2, -1), keepdim=True)"), None),
    (SAGAR.replace(", unbiased=False", ""), None),  # unbiased variance
    (SAGAR.replace("torch.sqrt(var + self.eps)", "(torch.sqrt(var) + self.eps)"), None),  # eps outside the root
    (SAGAR.replace("torch.sqrt(var + self.eps)", "torch.sqrt(var.clamp(min=self.eps))"), None),
    (SAGAR.replace("return self.scale * norm_x + self.shift", "return self.shift * norm_x"), (("eps", "eps"),
                                                                                             ("shift", "weight"))),
    (SAGAR.replace("return self.scale * norm_x + self.shift", "return norm_x + self.shift"), None),  # no scale
    (SAGAR.replace("return self.scale * norm_x + self.shift", "return self.scale * norm_x + self.shift + x"), None),
    (BERT.replace("self.variance_epsilon", "1e-12").replace("return self.weight", "return 1e-5 + self.weight"), None),
    (SAGAR.replace("mean = x.mean(dim=-1, keepdim=True)", "mean = x.mean(dim=-1)"), None),  # no keepdim
    (SAGAR.replace("return self.scale", "return self.drop(self.scale") + ")", None),  # a module call
])
def test_layer_norm_roles(body: str, expected: tuple[tuple[str, str], ...] | None) -> None:
    assert layer_norm_roles(_forward(body)) == expected


USER = """
class GELU(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * torch.pow(x, 3))))


class FFN(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, 4 * d)
        self.act = GELU()

    def forward(self, x):
        return self.act(self.fc(x))
"""


def test_the_binding_is_nn_gelu_with_the_tanh_approximation() -> None:
    net = arch(USER, "FFN")
    assert net.init is not None
    (act,) = [b.value for b in net.init.bindings if b.attr == "act"]
    assert act.callee == "torch.nn.GELU" and [(k.name, k.value.text) for k in act.kwargs] == [("approximate", '"tanh"')]


def test_an_edit_that_keeps_the_gelu_does_not_reanalyse_its_users() -> None:
    units, same = reanalysed_after(
        USER, "        return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * torch.pow(x, 3))))",
        "return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))")
    assert "class GELU" in units and "class FFN" not in units and same


def test_an_edit_that_makes_it_no_gelu_reanalyses_its_users() -> None:
    units, same = reanalysed_after(
        USER, "        return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * torch.pow(x, 3))))",
        "return torch.relu(x)")
    assert "class FFN" in units and same


def test_carried_gelu_and_norm_fingerprints_equal_fresh_ones_through_edits() -> None:
    from adopter.analysis.incremental import DocumentAnalysis

    from .helpers import HEADER
    from .test_fingerprint_carry import _check

    text = HEADER + textwrap.dedent(USER)
    doc = DocumentAnalysis(text, "m.py")
    doc.result()
    for old, new in (
        ("torch.pow(x, 3)", "x ** 3"),
        ("(x + 0.044715 *", "(x + 0.5 *"),
        ("(x + 0.5 *", "(x + 0.044715 *"),
        ("class GELU(nn.Module):", "class GELU(nn.Linear):"),
        ("class GELU(nn.Linear):", "class GELU(nn.Module):"),
    ):
        assert old in text, old
        text = text.replace(old, new, 1)
        doc.update(text)
        _check(doc, text)
    assert any(k.startswith("method-gelu:") for k in doc._analyser._fingerprints)
