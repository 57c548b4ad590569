"""f06's fix where forward reassigns one name (`x = self.fc1(x); x = self.act(x)`, timm's `Mlp` and its many
copies, the activation a constructor parameter `act_layer=nn.GELU`). The fix used to look the activation up
by the name `$out` binds and found the Linear that wrote `x` first ("the activation is a function call, not a
submodule"); it now takes the match's last op, the activation's own call. The rewritten module computes what
the original computes: outputs, input and parameter gradients (float64, CPU, seed 0, `torch.allclose` rtol
1e-6 / atol 1e-9), train mode with dropout 0 and eval mode."""

from __future__ import annotations

import types

import pytest

from adopter.engine import Environment, load_rules
from adopter.session import RuleContext, Session

CUDA = Environment("cuda", frozenset(), "2.13.0")

MLP = '''import torch
from torch import nn


class Mlp(nn.Module):
    def __init__(self, in_features, hidden_features=None, out_features=None, act_layer=nn.GELU, drop=0.0):
        super().__init__()
        out_features = out_features or in_features
        hidden_features = hidden_features or in_features
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = act_layer()
        self.drop1 = nn.Dropout(drop)
        self.fc2 = nn.Linear(hidden_features, out_features)

    def forward(self, x):
        x = self.fc1(x)
        x = self.act(x)
        x = self.drop1(x)
        x = self.fc2(x)
        return x
'''


def session() -> Session:
    return Session(RuleContext(tuple(load_rules().rules), (), CUDA))


@pytest.mark.parametrize("act", ["act_layer()", "nn.GELU(approximate='tanh')"])
def test_a_reassigned_name_is_fixed_with_the_activation_module(act: str) -> None:
    code = MLP.replace("self.act = act_layer()", f"self.act = {act}")
    s = session()
    analysed = s.analysed(code, "m.py")
    found = [f for f in analysed.findings if f.rule_id == "f06-linear-gelu"]
    assert len(found) == 1 and s.planned(analysed, found[0]).fixable
    fixed = s.fix(code, "m.py", rules=["f06-linear-gelu"]).new_source
    assert "        x = fused_linear_gelu(x, self.fc1, self.act)\n        x = self.drop1(x)\n" in fixed


def test_a_relu_default_is_not_a_site() -> None:
    code = MLP.replace("act_layer=nn.GELU", "act_layer=nn.ReLU")
    assert not [f for f in session().analysed(code, "m.py").findings if f.rule_id == "f06-linear-gelu"]


def _build(source: str) -> types.ModuleType:
    module = types.ModuleType("m")
    exec(compile(source, "m.py", "exec"), module.__dict__)  # the test's own model code
    return module


@pytest.mark.torch
@pytest.mark.parametrize("training", [True, False])
def test_the_fix_computes_what_the_original_computes(training: bool) -> None:
    torch = pytest.importorskip("torch")
    from equivalence import compare_modules
    fixed = session().fix(MLP, "m.py", rules=["f06-linear-gelu"]).new_source
    assert "fused_linear_gelu(x, self.fc1, self.act)" in fixed
    torch.manual_seed(0)
    original = _build(MLP).Mlp(8, 16).double().train(training)
    rewritten = _build(fixed).Mlp(8, 16).double().train(training)
    # in the mode it was built in; gradients as strict as outputs, the same parameters on both sides
    compare_modules(original, rewritten, lambda: (torch.randn(3, 5, 8, dtype=torch.float64),), modes=(training,),
                    atol=1e-9, rtol=1e-6, grad_atol=1e-9, same_parameters=True)


CONDITIONAL = '''from functools import partial

import torch
from torch import nn


class Mlp(nn.Module):
    def __init__(self, dim, hidden, act_layer=nn.GELU, use_conv=False):
        super().__init__()
        linear_layer = partial(nn.Conv2d, kernel_size=1) if use_conv else nn.Linear
        self.fc1 = linear_layer(dim, hidden)
        self.act = act_layer()

    def forward(self, x):
        x = self.fc1(x)
        x = self.act(x)
        return x
'''


@pytest.mark.parametrize(("edit", "fixable"), [
    (("", ""), False),  # timm's `use_conv`: a 1x1 Conv2d on the other path
    (("self.fc1 = linear_layer(dim, hidden)", "self.fc1 = nn.Linear(dim, hidden) if use_conv else nn.Linear(dim, 2)"),
     True),  # a Linear on both paths
])
def test_a_linear_only_under_a_condition_is_not_fixed(edit: tuple[str, str], fixable: bool) -> None:
    code = CONDITIONAL.replace(*edit) if edit[0] else CONDITIONAL
    s = session()
    analysed = s.analysed(code, "m.py")
    found = [f for f in analysed.findings if f.rule_id == "f06-linear-gelu"]
    assert len(found) == 1
    planned = s.planned(analysed, found[0])
    assert planned.fixable is fixable
    if not fixable:
        assert planned.reason is not None and "self.fc1 is a Linear only when `not (use_conv)`" in planned.reason
