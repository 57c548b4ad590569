"""Two more ways research code picks its activation (`scope.bindings`): a same-file dict of layer
*instances* at an evident key (`ACTS = {"gelu": nn.GELU(), ...}; self.act = ACTS[act]` with `act="gelu"`),
and `act_layer = act_layer or nn.GELU` with `act_layer=None` (the caller's default, read like the
`default(act_layer, nn.GELU)` helper). f06 reports the Linear -> GELU only where the entry or the fallback is
GELU; its fix computes what the original computes (outputs, input and parameter gradients, float64, CPU,
seed 0, `torch.allclose` rtol 1e-6 / atol 1e-9)."""

from __future__ import annotations

import types

import pytest

from adopter.engine import Environment, load_rules
from adopter.session import RuleContext, Session

CUDA = Environment("cuda", frozenset(), "2.13.0")

TABLE = '''import torch
from torch import nn

ACTS = {"gelu": nn.GELU(), "relu": nn.ReLU()}


class Mlp(nn.Module):
    def __init__(self, dim, hidden, act="gelu"):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = ACTS[act]
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))
'''

OR_DEFAULT = '''import torch
from torch import nn


class Mlp(nn.Module):
    def __init__(self, dim, hidden, act_layer=None):
        super().__init__()
        act_layer = act_layer or nn.GELU
        self.fc1 = nn.Linear(dim, hidden)
        self.act = act_layer()
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        x = self.fc1(x)
        x = self.act(x)
        return self.fc2(x)
'''


def session() -> Session:
    return Session(RuleContext(tuple(load_rules().rules), (), CUDA))


def f06_lines(code: str) -> list[int]:
    return [f.span.start_line + 1 for f in session().analysed(code, "m.py").findings if f.rule_id == "f06-linear-gelu"]


def test_the_sites_are_found() -> None:
    assert f06_lines(TABLE) == [15]
    assert f06_lines(OR_DEFAULT) == [14]


@pytest.mark.parametrize(("code", "edit"), [
    (TABLE, ('act="gelu"', 'act="relu"')),
    (TABLE, ('act="gelu"', "act")),
    (TABLE, ('"gelu": nn.GELU()', '"gelu": nn.GELU(approximate=approx)')),  # an entry with arguments: unread
    (OR_DEFAULT, ("act_layer or nn.GELU", "act_layer or nn.ReLU")),
    (OR_DEFAULT, ("act_layer=None", "act_layer=nn.ReLU")),  # the caller's default is ReLU: `or` never falls back
    (OR_DEFAULT, ("act_layer or nn.GELU", "act_layer and nn.GELU")),
], ids=["relu-key", "no-default", "entry-arguments", "relu-fallback", "relu-default", "and"])
def test_no_site_without_an_evident_gelu(code: str, edit: tuple[str, str]) -> None:
    edited = code.replace(*edit)
    assert edited != code
    assert f06_lines(edited) == []


def _build(source: str) -> types.ModuleType:
    module = types.ModuleType("m")
    exec(compile(source, "m.py", "exec"), module.__dict__)  # the test's own model code
    return module


@pytest.mark.torch
@pytest.mark.parametrize("code", [TABLE, OR_DEFAULT], ids=["instance-table", "or-default"])
def test_the_fix_computes_what_the_original_computes(code: str) -> None:
    torch = pytest.importorskip("torch")
    from equivalence import compare_modules
    fixed = session().fix(code, "m.py", rules=["f06-linear-gelu"]).new_source
    assert "fused_linear_gelu(x, self.fc1, self.act)" in fixed
    torch.manual_seed(0)
    original = _build(code).Mlp(8, 16).double()
    rewritten = _build(fixed).Mlp(8, 16).double()
    # in the mode it was built in; gradients as strict as outputs, the same parameters on both sides
    compare_modules(original, rewritten, lambda: (torch.randn(3, 5, 8, dtype=torch.float64),), modes=(True,),
                    atol=1e-9, rtol=1e-6, grad_atol=1e-9, same_parameters=True)
