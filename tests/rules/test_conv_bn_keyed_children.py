"""The conv -> BN of an `nn.Sequential` subclass that fills a dict key by key and hands it to the Sequential
(`module_dict = OrderedDict()`, `module_dict['conv'] = nn.Conv2d(...)`, `module_dict['bn'] =
nn.BatchNorm2d(...)`, `if uses_relu: module_dict['relu'] = ...`, `super().__init__(module_dict)`: torchdistill
1.x `models/adaptation.py` `ConvReg`), read by `chains.list_items.keyed_children`. The fix builds the class on
`FoldedConvBnSequential` (as for a list of children: `test_conv_bn_listed_children.py`), which folds a stock
Conv -> BatchNorm pair of adjacent children at run time; the rewritten class computes what the original
computes in eval and training mode (float64, CPU, seed 0; outputs, input and parameter gradients; strict
state-dict load). Refusals beside their site: a key set twice, a dict used another way, a value set under a
test the defaults leave open before the norm."""

from __future__ import annotations

import types

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, find, load_rules
from adopter.session import rewrite
from adopter.synth import Rewritten

MODEL = '''
from collections import OrderedDict

import torch
from torch import nn


class ConvRegressor(nn.Sequential):
    def __init__(self, c_in, c_out, kernel_size=3, stride=1, padding=1, uses_relu=True):
        module_dict = OrderedDict()
        module_dict['conv'] = nn.Conv2d(c_in, c_out, kernel_size=kernel_size, stride=stride, padding=padding)
        module_dict['bn'] = nn.BatchNorm2d(c_out)
        if uses_relu:
            module_dict['relu'] = nn.ReLU(inplace=True)
        super().__init__(module_dict)
'''


def _findings(source: str) -> list[tuple[str, int, bool]]:
    env = Environment("cpu", frozenset(), "2.13.0")
    rules = [r for r in load_rules().rules if r.family == 7]
    return [(f.scope_name, f.span.start_line, f.fixable) for f in find(analyse(source, "model.py"), rules, env)]


def _line(source: str, needle: str) -> int:
    return next(i for i, text in enumerate(source.splitlines()) if needle in text)


def test_the_keyed_children_are_a_chain() -> None:
    assert _findings(MODEL) == [("ConvRegressor", _line(MODEL, "module_dict['conv']"), True)]


def test_a_plain_dict_display_variable_is_read_too() -> None:
    source = MODEL.replace("module_dict = OrderedDict()", "module_dict = {}")
    assert _findings(source) == [("ConvRegressor", _line(source, "module_dict['conv']"), True)]


@pytest.mark.parametrize("change", [
    # a key set again keeps its first place in the dict: the order is not the statements'
    ("        if uses_relu:", "        module_dict['conv'] = nn.Identity()\n        if uses_relu:"),
    # the dict is used another way before the Sequential gets it
    ("        if uses_relu:", "        module_dict.update(extra=nn.Identity())\n        if uses_relu:"),
    # the norm is set under a test the defaults leave open: the chain is cut before it
    ("        module_dict['bn'] = nn.BatchNorm2d(c_out)",
     "        if c_out > 1:\n            module_dict['bn'] = nn.BatchNorm2d(c_out)"),
    # not a dict made here
    ("module_dict = OrderedDict()", "module_dict = make_dict()"),
])
def test_what_the_dict_leaves_open_is_not_read(change: tuple[str, str]) -> None:
    assert len(_findings(MODEL)) == 1  # the twin
    changed = MODEL.replace(*change)
    assert changed != MODEL
    assert _findings(changed) == []


def _module(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    return module


@pytest.mark.torch
@pytest.mark.parametrize("kwargs", [{}, {"uses_relu": False}, {"kernel_size": 1, "padding": 0, "stride": 2}])
def test_the_fix_computes_what_the_original_computes(kwargs: dict[str, object]) -> None:
    torch = pytest.importorskip("torch")
    from equivalence import compare_modules, trained_statistics

    env = Environment("cpu", frozenset(), "2.13.0")
    rules = [r for r in load_rules().rules if r.family == 7]
    result = rewrite(MODEL, find(analyse(MODEL, "model.py"), rules, env), rules=rules, env=env, path="model.py")
    assert isinstance(result, Rewritten), result
    assert "class ConvRegressor(FoldedConvBnSequential):" in result.new_source
    torch.manual_seed(0)
    original = _module(MODEL, "before").ConvRegressor(3, 8, **kwargs).double()
    fixed = _module(result.new_source, "after").ConvRegressor(3, 8, **kwargs).double()
    trained_statistics(original, weight=(0.5, 2))
    compare_modules(original, fixed, lambda: (torch.randn(2, 3, 12, 12, dtype=torch.float64),),
                    atol=1e-9, rtol=1e-6, grad_atol=1e-9, same_parameters=True)
    assert [k for k, _ in fixed.named_children()] == [k for k, _ in original.named_children()]
