"""Activations held in a class attribute (`analysis.names.class_attributes`): `act_layer = nn.GELU` in the
class body, `self.act = self.act_layer()` in `__init__`. The first same-file class of the analysed class's
order that assigns the attribute decides (a subclass's `act_layer = nn.ReLU` makes its binding ReLU); an
instance attribute of the same name anywhere in those classes leaves it unread. The f06 fix on the site
computes what the original computes (outputs, input and parameter gradients, float64, CPU, seed 0,
`torch.allclose` rtol 1e-6 / atol 1e-9), for the class and for a ReLU subclass (whose instance the
run-time check sends down the original path)."""

from __future__ import annotations

import types

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, load_rules
from adopter.session import RuleContext, Session

CUDA = Environment("cuda", frozenset(), "2.13.0")

CODE = '''import torch
from torch import nn


class Mlp(nn.Module):
    act_layer = nn.GELU

    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = self.act_layer()
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class ReluMlp(Mlp):
    act_layer = nn.ReLU
'''


def session() -> Session:
    return Session(RuleContext(tuple(load_rules().rules), (), CUDA))


def act_bindings(code: str) -> dict[str, str]:
    arch = analyse(code, "m.py")
    out = {}
    for model in arch.architectures:
        assert model.init is not None
        out[model.name] = next(repr(b.value) for b in model.init.bindings if b.attr == "act")
    return out


def test_the_class_attribute_names_the_layer_class() -> None:
    bindings = act_bindings(CODE)
    assert "torch.nn.GELU" in bindings["Mlp"] and "torch.nn.ReLU" in bindings["ReluMlp"]
    found = [f for f in session().analysed(CODE, "m.py").findings if f.rule_id == "f06-linear-gelu"]
    assert [f.span.start_line + 1 for f in found] == [15]


@pytest.mark.parametrize("edit", [
    ("act_layer = nn.GELU", "act_layer = nn.ReLU"),
    ("        super().__init__()\n", "        super().__init__()\n        self.act_layer = nn.ReLU\n"),
    ("self.act = self.act_layer()", "self.act = self.act_cls()"),
], ids=["relu", "instance-attribute", "another-name"])
def test_no_site_without_an_evident_gelu_attribute(edit: tuple[str, str]) -> None:
    code = CODE.replace(*edit)
    assert code != CODE
    assert not [f for f in session().analysed(code, "m.py").findings if f.rule_id == "f06-linear-gelu"]


def _build(source: str) -> types.ModuleType:
    module = types.ModuleType("m")
    exec(compile(source, "m.py", "exec"), module.__dict__)  # the test's own model code
    return module


@pytest.mark.torch
@pytest.mark.parametrize("cls", ["Mlp", "ReluMlp"])
def test_the_fix_computes_what_the_original_computes(cls: str) -> None:
    torch = pytest.importorskip("torch")
    from equivalence import compare_modules
    fixed = session().fix(CODE, "m.py", rules=["f06-linear-gelu"]).new_source
    assert "fused_linear_gelu(x, self.fc1, self.act)" in fixed
    torch.manual_seed(0)
    original = getattr(_build(CODE), cls)(8, 16).double()
    rewritten = getattr(_build(fixed), cls)(8, 16).double()
    # in the mode it was built in; gradients as strict as outputs, the same parameters on both sides
    compare_modules(original, rewritten, lambda: (torch.randn(3, 5, 8, dtype=torch.float64),), modes=(True,),
                    atol=1e-9, rtol=1e-6, grad_atol=1e-9, same_parameters=True)
