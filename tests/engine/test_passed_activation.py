"""Families 6 and 14: an activation a class stores from a constructor parameter, passed by the file's own
constructions of the class (helper `mech46`; the oracle's misses pytorch-tabular
`models/common/layers/gated_units.py:144` (f6) and `:147` (f14)).

pytorch-tabular's `PositionWiseFeedForward(..., activation=nn.ReLU(), is_gated=False)` stores
`self.activation = activation`; `GEGLU` in the same file builds it with `nn.GELU()` and `is_gated=True`. The
default alone was read (ReLU: no site); each torch activation a construction of the file passes is now one
binding of the attribute, under `activation is nn.GELU()` (`adopter.analysis.chains.passed_layers`). The same
for a class default called once (`act_layer=nn.ReLU`, `self.act = act_layer()`, built with `act_layer=nn.GELU`).
The f06 fix calls `fused_linear_gelu`, which checks the activation at run time: it is exec'd beside the
original and compared on CPU (float64, seed 0, rtol 1e-6 / atol 1e-9 on outputs and on input and parameter
gradients) with the default and with the GELU passed; state dicts load both ways with `strict=True`.
Near forms that stay silent, each beside its positive twin: only the default or another non-GELU passed, a
name passed (not evident), a parameter rebound in `__init__`, GELU passed to another parameter, a class of the
file (not torch's) passed, the same call through an attribute (`mod.Mlp(...)`, another module's class).
"""

from __future__ import annotations

import types

import pytest

from adopter.analysis import analyse
from adopter.analysis.incremental import DocumentAnalysis
from adopter.engine import Environment, check, find, load_rules
from adopter.session import rewrite
from adopter.synth import Rewritten

CPU = Environment(device="cpu", packages=frozenset(), torch_version="2.13.0")
CUDA = Environment(device="cuda", packages=frozenset(), torch_version="2.13.0")

GATED = '''import torch
from torch import nn


class PositionWiseFeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.1, activation=nn.ReLU(), is_gated=False, bias1=True):
        super().__init__()
        self.layer1 = nn.Linear(d_model, d_ff, bias=bias1)
        self.layer2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)
        self.activation = activation
        self.is_gated = is_gated
        if is_gated:
            self.linear_v = nn.Linear(d_model, d_ff, bias=False)

    def forward(self, x):
        g = self.activation(self.layer1(x))
        if self.is_gated:
            x = g * self.linear_v(x)
        else:
            x = g
        x = self.dropout(x)
        return self.layer2(x)


class GEGLU(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.1):
        super().__init__()
        self.ffn = PositionWiseFeedForward(d_model, d_ff, dropout, nn.GELU(), True, False)

    def forward(self, x):
        return self.ffn(x)
'''

MLP = '''import torch
from torch import nn


class Mlp(nn.Module):
    def __init__(self, dim=8, hidden=16, act_layer=nn.ReLU):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = act_layer()
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.mlp = Mlp(dim, 2 * dim, act_layer=nn.GELU)

    def forward(self, x):
        return x + self.mlp(self.norm(x))
'''


def _sites(source: str, env: Environment = CPU) -> list[tuple[str, int, bool]]:
    rules = [r for r in load_rules().rules if r.family in (6, 14)]
    return sorted((f.rule_id, f.span.start_line + 1, f.fixable)
                  for f in check(analyse(source, "case.py"), rules, env).findings)


def test_a_gated_block_built_with_gelu_in_the_file() -> None:
    # both on the gate's line: the gated path is f14 (no fix: `g` is also the ungated path's value), and
    # the Linear -> GELU pair is f06 (CPU: the rule's target is CUDA)
    assert _sites(GATED) == [("f06-linear-gelu", 17, False), ("f14-swiglu", 17, False)]


def test_a_class_default_called_once() -> None:
    assert _sites(MLP) == [("f06-linear-gelu", 13, False)]
    assert _sites(MLP, CUDA) == [("f06-linear-gelu", 13, True)]


@pytest.mark.parametrize(("base", "edit"), [
    (GATED, ("nn.GELU(), True, False)", "nn.ReLU(), True, False)")),  # another activation passed
    (GATED, ("dropout, nn.GELU(), True, False)", "dropout)")),  # the default
    (GATED, ("nn.GELU(), True, False)", "act, True, False)")),  # a name: not evident
    (GATED, ("        self.activation = activation\n",
             "        activation = nn.Tanh()\n        self.activation = activation\n")),  # rebound first
    (GATED, ("nn.GELU(), True, False)", "nn.ReLU(), True, nn.GELU())")),  # GELU to another parameter
    (MLP, ("act_layer=nn.GELU)", "act_layer=nn.SiLU)")),
    (MLP, ("act_layer=nn.GELU)", "act_layer=nn.GELU())")),  # an instance where a class is called
    (MLP, ("act_layer=nn.GELU)", "act_layer=GELU)\n\n\nclass GELU(nn.GELU):\n    pass\n")),  # the file's class
    (MLP, ("self.mlp = Mlp(", "self.mlp = nn.Mlp(")),  # an attribute: another module's class
])
def test_near_forms_stay_silent(base: str, edit: tuple[str, str]) -> None:
    assert any(rule == "f06-linear-gelu" for rule, _, _ in _sites(base))  # the positive form beside them
    near = base.replace(*edit)
    assert near != base
    assert _sites(near) == []


def test_an_edit_of_the_constructing_class_is_read_in_the_constructed_one() -> None:
    # the construction lies outside the class's cached unit: an editor's document must follow it both ways
    doc = DocumentAnalysis(MLP, "case.py")
    rules = [r for r in load_rules().rules if r.family == 6]
    assert [f.rule_id for f in check(doc.result(), rules, CPU).findings] == ["f06-linear-gelu"]
    for text, expected in ((MLP.replace("act_layer=nn.GELU)", "act_layer=nn.SiLU)"), []),
                           (MLP, ["f06-linear-gelu"])):
        doc.update(text)
        got = doc.result()
        assert got == analyse(text, "case.py")
        assert [f.rule_id for f in check(got, rules, CPU).findings] == expected


def _build(source: str) -> types.ModuleType:
    module = types.ModuleType("m")
    exec(compile(source, "m.py", "exec"), module.__dict__)  # the test's own model code
    return module


@pytest.mark.torch
@pytest.mark.parametrize("passed", ["default", "gelu"])
def test_the_fix_computes_what_the_original_computes(passed: str) -> None:
    torch = pytest.importorskip("torch")
    from equivalence import compare_modules
    rules = [r for r in load_rules().rules if r.id == "f06-linear-gelu"]
    result = rewrite(MLP, find(analyse(MLP, "case.py"), rules, CUDA), rules=rules, env=CUDA, path="case.py")
    assert isinstance(result, Rewritten) and len(result.applied) == 1
    assert "self.fc2(fused_linear_gelu(x, self.fc1, self.act))" in result.new_source
    kwargs = {} if passed == "default" else {"act_layer": torch.nn.GELU}
    torch.manual_seed(0)
    original = _build(MLP).Mlp(**kwargs).double()
    rewritten = _build(result.new_source).Mlp(**kwargs).double()
    # in the mode it was built in; gradients as strict as outputs, the same parameters on both sides
    compare_modules(original, rewritten, lambda: (torch.randn(3, 5, 8, dtype=torch.float64),), modes=(True,),
                    atol=1e-9, rtol=1e-6, grad_atol=1e-9, same_parameters=True, round_trip=True)
