"""Activations chosen through a same-file table factory (`analysis.names.table_factories`): `def
get_act_layer(name): return _ACTS[name]` called as `get_act_layer(act)()`, or `return _ACTS[name.lower()]()`
called as `make_act(act)`, over `_ACTS = {"gelu": nn.GELU, ...}`. The binding is the table's entry at the key
the call passes when that key is evident (a literal, the parameter's literal default), so f06 reports the
Linear -> GELU only where the entry is GELU. The fix is `fused_linear_gelu(x, linear, act)`; the rewritten
module computes what the original computes (outputs, input and parameter gradients, float64, CPU, seed 0,
`torch.allclose` rtol 1e-6 / atol 1e-9)."""

from __future__ import annotations

import types

import pytest

from adopter.engine import Environment, load_rules
from adopter.session import RuleContext, Session

CUDA = Environment("cuda", frozenset(), "2.13.0")

HEAD = '''import torch
from torch import nn

_ACTS = {"gelu": nn.GELU, "relu": nn.ReLU, "silu": nn.SiLU}


def act_class(name="gelu"):
    return _ACTS[name]


def make_act(name):
    """An instance of the named activation."""
    return _ACTS[name.lower()]()


'''

CLASS_FACTORY = HEAD + '''class Mlp(nn.Module):
    def __init__(self, dim, hidden, act="gelu"):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fn = act_class(act)()
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        x = self.fn(self.fc1(x))
        return self.fc2(x)
'''

INSTANCE_FACTORY = HEAD + '''class Mlp(nn.Module):
    def __init__(self, dim, hidden, act="GELU"):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fn = make_act(act)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.fn(self.fc1(x)))
'''


def session() -> Session:
    return Session(RuleContext(tuple(load_rules().rules), (), CUDA))


def f06_lines(code: str) -> list[int]:
    found = session().analysed(code, "m.py").findings
    return [f.span.start_line + 1 for f in found if f.rule_id == "f06-linear-gelu"]


@pytest.mark.parametrize(("code", "line"), [(CLASS_FACTORY, 24), (INSTANCE_FACTORY, 24)], ids=["class", "instance"])
def test_a_factory_entry_at_an_evident_gelu_key_is_a_site(code: str, line: int) -> None:
    assert f06_lines(code) == [line]


@pytest.mark.parametrize(("code", "edit"), [
    (CLASS_FACTORY, ('act="gelu"', 'act="relu"')),  # the default names ReLU
    (CLASS_FACTORY, ('act="gelu"', "act")),  # no default: the key is not evident
    (CLASS_FACTORY, ("act_class(act)()", "act_class()()")),  # the factory's own default is gelu: a site
    (INSTANCE_FACTORY, ('act="GELU"', 'act="SiLU"')),
    (INSTANCE_FACTORY, ("return _ACTS[name.lower()]()", "return _ACTS[name.lower()](inplace=True)")),
    (INSTANCE_FACTORY, ("    return _ACTS[name.lower()]()", "    name = 'relu'\n    return _ACTS[name.lower()]()")),
], ids=["relu-default", "no-default", "factory-default", "silu", "entry-arguments", "key-rebound"])
def test_only_an_evident_gelu_entry_is_read(code: str, edit: tuple[str, str]) -> None:
    edited = code.replace(*edit)
    assert edited != code
    expected = [24] if edit[1] == "act_class()()" else []
    assert f06_lines(edited) == expected


def _build(source: str) -> types.ModuleType:
    module = types.ModuleType("m")
    exec(compile(source, "m.py", "exec"), module.__dict__)  # the test's own model code
    return module


@pytest.mark.torch
@pytest.mark.parametrize("code", [CLASS_FACTORY, INSTANCE_FACTORY], ids=["class", "instance"])
def test_the_fix_computes_what_the_original_computes(code: str) -> None:
    torch = pytest.importorskip("torch")
    from equivalence import compare_modules
    fixed = session().fix(code, "m.py", rules=["f06-linear-gelu"]).new_source
    assert "fused_linear_gelu(x, self.fc1, self.fn)" in fixed
    torch.manual_seed(0)
    original = _build(code).Mlp(8, 16).double()
    rewritten = _build(fixed).Mlp(8, 16).double()
    # in the mode it was built in; gradients as strict as outputs, the same parameters on both sides
    compare_modules(original, rewritten, lambda: (torch.randn(3, 5, 8, dtype=torch.float64),), modes=(True,),
                    atol=1e-9, rtol=1e-6, grad_atol=1e-9, same_parameters=True)
