"""A conv (or Linear) then a BatchNorm added to a list under a test the parameters' defaults decide (`if bn:`
with `bn=True`, `elif norm == "bn":` with `norm="bn"`) is a site on the default's path
(`adopter.analysis.chains.default_branches`), in the three list readers: a Sequential subclass handing the list
to `super().__init__(*m)` (super-image `modeling_utils.BasicBlock`, EDSR-style blocks), a factory function
returning `nn.Sequential(*m)`, and a loop body (MLP builders), also of a Sequential subclass's `__init__` that hands
the list to `super().__init__(*layers)` (sequence-models `FCStack`; before, only `nn.Sequential(*layers)` was read
there). Before, an addition
under any test but `is not None` cut the chain there.

The fixes are the existing in-place ones (the Sequential built as `FoldedConvBnSequential`, or the subclass derived
from it), which decide at run time which adjacent stock children fold; the rewritten module computes what the
original computes with the default and with the other branch (`bn=False`): outputs, input and parameter gradients
in eval and training mode (`equivalence.compare_modules`: float64, CPU, seed 0, outputs rtol 1e-6 / atol
1e-9, gradients atol 1e-8; the state dict loads with `strict=True`). The loop-body chain is reported without a fix
(the chains of `adopter.analysis.chains.lists` have none), with the existing reason.

Not sites (each asserted after its site twin): the default takes the other branch (`bn=False`, `norm="ln"`), the
parameter is rebound before the test, it has no default, and a test that reads more than one name.
"""

from __future__ import annotations

import types

import pytest

torch = pytest.importorskip("torch")

from adopter.analysis import analyse  # noqa: E402
from adopter.engine import Environment, find, load_rules  # noqa: E402
from adopter.session import rewrite  # noqa: E402
from adopter.synth import Rewritten  # noqa: E402
from equivalence import compare_modules  # noqa: E402

pytestmark = pytest.mark.torch

ENV = Environment("cpu", frozenset(), "2.13.0")
RULES = [r for r in load_rules().rules if r.family in (7, 8)]

SUBCLASS = '''
from torch import nn


class BasicBlock(nn.Sequential):
    def __init__(self, c_in, c_out, k=3, bias=False, bn=True, act=nn.ReLU(True)):
        m = [nn.Conv2d(c_in, c_out, k, padding=k // 2, bias=bias)]
        if bn:
            m.append(nn.BatchNorm2d(c_out))
        if act is not None:
            m.append(act)
        super(BasicBlock, self).__init__(*m)
'''

FACTORY = '''
from torch import nn


def conv_block(c_in, c_out, norm="bn"):
    layers = [nn.Conv2d(c_in, c_out, 3, padding=1)]
    if norm == "gn":
        layers.append(nn.GroupNorm(2, c_out))
    elif norm == "bn":
        layers.append(nn.BatchNorm2d(c_out))
    layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class Net(nn.Module):
    def __init__(self, c=4, norm="bn"):
        super().__init__()
        self.body = conv_block(3, c, norm)

    def forward(self, x):
        return self.body(x)
'''

LOOP = '''
from torch import nn


class FCStack(nn.Module):
    def __init__(self, sizes, norm="bn", p=0.0):
        super().__init__()
        layers = []
        for d0, d1 in zip(sizes, sizes[1:]):
            layers.append(nn.Linear(d0, d1))
            if norm == "ln":
                layers.append(nn.LayerNorm(d1))
            elif norm == "bn":
                layers.append(nn.BatchNorm1d(d1))
            if p != 0:
                layers.append(nn.Dropout(p))
            layers.append(nn.ReLU(inplace=True))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)
'''

SUBCLASS_LOOP = '''
from torch import nn


class FCStack(nn.Sequential):
    def __init__(self, sizes, norm="bn", p=0.0):
        layers = []
        for d0, d1 in zip(sizes, sizes[1:]):
            layers.append(nn.Linear(d0, d1))
            if norm == "ln":
                layers.append(nn.LayerNorm(d1))
            elif norm == "bn":
                layers.append(nn.BatchNorm1d(d1))
            layers.append(nn.ReLU(inplace=True))
        super().__init__(*layers)
'''


def _module(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    return module


def _sites(source: str) -> list[tuple[str, bool, int]]:
    return [(f.rule_id, f.fixable, f.span.start_line + 1) for f in find(analyse(source, "model.py"), RULES, ENV)]


def _trained(model: torch.nn.Module) -> torch.nn.Module:
    with torch.no_grad():  # statistics a trained model would have
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-1, 1)
                m.running_var.uniform_(0.5, 2)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-1, 1)
    return model


def _fixed(source: str) -> str:
    findings = find(analyse(source, "model.py"), RULES, ENV)
    result = rewrite(source, findings, rules=RULES, env=ENV, path="model.py")
    assert isinstance(result, Rewritten), result
    return result.new_source


def _line(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


def test_a_sequential_subclass_list_grown_under_a_default_test() -> None:
    assert _sites(SUBCLASS) == [("f07-conv-bn", True, _line(SUBCLASS, "m = [nn.Conv2d"))]
    new = _fixed(SUBCLASS)
    assert "class BasicBlock(FoldedConvBnSequential):" in new
    original, fixed = _module(SUBCLASS, "original"), _module(new, "fixed")
    for kwargs in ({}, {"bn": False}, {"bias": True, "act": None}):
        torch.manual_seed(0)
        a = _trained(original.BasicBlock(3, 4, **kwargs).double())
        b = fixed.BasicBlock(3, 4, **kwargs).double()
        compare_modules(a, b, lambda: (torch.randn(2, 3, 6, 6, dtype=torch.float64),), atol=1e-9, rtol=1e-6)


def test_a_factory_list_grown_under_an_elif_on_a_default() -> None:
    assert _sites(FACTORY) == [("f07-conv-bn", True, _line(FACTORY, "layers = [nn.Conv2d"))]
    new = _fixed(FACTORY)
    assert "return FoldedConvBnSequential(*layers)" in new
    original, fixed = _module(FACTORY, "original"), _module(new, "fixed")
    for norm in ("bn", "gn", "none"):
        torch.manual_seed(0)
        a = _trained(original.Net(norm=norm).double())
        b = fixed.Net(norm=norm).double()
        compare_modules(a, b, lambda: (torch.randn(2, 3, 6, 6, dtype=torch.float64),), atol=1e-9, rtol=1e-6)


def test_a_loop_body_addition_under_an_elif_on_a_default() -> None:
    assert _sites(LOOP) == [("f08-linear-bn", False, _line(LOOP, "layers.append(nn.Linear"))]


def test_a_sequential_subclass_list_filled_in_a_loop() -> None:
    # sequence-models `layers.FCStack`: the loop body's run is handed to the Sequential base
    assert _sites(SUBCLASS_LOOP) == [("f08-linear-bn", False, _line(SUBCLASS_LOOP, "layers.append(nn.Linear"))]


@pytest.mark.parametrize(("site", "near"), [
    (SUBCLASS, SUBCLASS.replace("bn=True", "bn=False")),  # the default skips the BatchNorm
    (SUBCLASS, SUBCLASS.replace("        if bn:\n", "        bn = c_out > 8\n        if bn:\n")),  # rebound
    (SUBCLASS, SUBCLASS.replace("bias=False, bn=True, act", "bias=False, *, bn, act")),  # no default
    (SUBCLASS, SUBCLASS.replace("        if bn:\n", "        if bn and k > 1:\n")),  # reads another name
    (FACTORY, FACTORY.replace('def conv_block(c_in, c_out, norm="bn")', 'def conv_block(c_in, c_out, norm="gn")')),
    (LOOP, LOOP.replace('norm="bn", p=0.0', 'norm="ln", p=0.0')),
    (LOOP, LOOP.replace('            if norm == "ln":', '            norm = "ln"\n            if norm == "ln":')),
    (SUBCLASS_LOOP, SUBCLASS_LOOP.replace("(nn.Sequential)", "(nn.ModuleList)")),  # a ModuleList runs nothing
    (SUBCLASS_LOOP, SUBCLASS_LOOP.replace('norm="bn"', 'norm="ln"')),
])
def test_near_forms_stay_silent(site: str, near: str) -> None:
    assert len(_sites(site)) == 1
    assert _sites(near) == []
