"""Conv -> BN pairs of an empty `nn.Sequential()` filled by `add_module` (RepVGG's `conv_bn` and the builders
copied from it: a module-level factory, a builder method that keeps the BN under `if use_bn:` with
`use_bn=True`, MobileOne's branches built in a loop of `__init__` and appended to a `ModuleList`, DarkNet's
conv block with a LeakyReLU). Each is a site, fixed by building the Sequential as `FoldedConvBnSequential`
(`adopter.analysis.chains.added_modules`). The rewritten modules compute what the originals compute, in eval
and training mode: outputs, input and parameter gradients (float64, CPU, seed 0, `torch.allclose` at rtol 1e-6
/ atol 1e-9). Refused: an `add_module` in a loop (whose body adds a BN or a ReLU after the conv as `i` decides),
under a condition the defaults leave open, or after the Sequential was passed to a call; a name rebound to
another Sequential; a BN appended to a list after `nn.Sequential(*layers)` copied it."""

from __future__ import annotations

import types

import pytest

torch = pytest.importorskip("torch")

from adopter.analysis import analyse  # noqa: E402
from adopter.engine import Environment, find, load_rules  # noqa: E402
from adopter.session import rewrite  # noqa: E402
from adopter.synth import Rewritten  # noqa: E402
from equivalence import compare_modules, trained_statistics  # noqa: E402

pytestmark = pytest.mark.torch

MODEL = '''
import torch
from torch import nn


def conv_bn(c_in, c_out, kernel_size, stride, padding, groups=1):
    result = nn.Sequential()
    result.add_module("conv", nn.Conv2d(c_in, c_out, kernel_size, stride, padding, groups=groups, bias=False))
    result.add_module("bn", nn.BatchNorm2d(c_out))
    return result


class RepBlock(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.dense = conv_bn(c_in, c_out, 3, 1, 1)
        self.one = conv_bn(c_in, c_out, 1, 1, 0)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.dense(x) + self.one(x))


class QARepBlock(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.branch = self._conv_bn(c_in, c_out, 3, 1)

    def forward(self, x):
        return self.branch(x)

    @staticmethod
    def _conv_bn(c_in, c_out, kernel_size, padding, use_bn=True):
        seq = nn.Sequential()
        seq.add_module("conv", nn.Conv2d(c_in, c_out, kernel_size, padding=padding, bias=not use_bn))
        if use_bn:
            seq.add_module("bn", nn.BatchNorm2d(c_out))
        return seq


class MobileOneBlock(nn.Module):
    def __init__(self, c_in, c_out, branches=2):
        super().__init__()
        self.branches = branches
        self.rbr_conv = nn.ModuleList()
        for _ in range(branches):
            mod_list = nn.Sequential()
            mod_list.add_module("conv", nn.Conv2d(c_in, c_out, 3, padding=1, bias=False))
            mod_list.add_module("bn", nn.BatchNorm2d(c_out))
            self.rbr_conv.append(mod_list)

    def forward(self, x):
        out = 0
        for i in range(self.branches):
            out = out + self.rbr_conv[i](x)
        return out


def create_conv_module(c_in, c_out, kernel_size=3, stride=1):
    block = nn.Sequential()
    block.add_module("Conv2d", nn.Conv2d(c_in, c_out, kernel_size, stride, (kernel_size - 1) // 2, bias=False))
    block.add_module("BatchNorm2d", nn.BatchNorm2d(c_out))
    block.add_module("LeakyRelu", nn.LeakyReLU())
    return block


class DarkBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer1 = create_conv_module(c, c // 2, kernel_size=1)
        self.layer2 = create_conv_module(c // 2, c)

    def forward(self, x):
        return x + self.layer2(self.layer1(x))
'''

# Each holds a Conv2d and a BatchNorm2d added to one Sequential, in an order the reading cannot be sure of.
REFUSED = {
    "loop_with_conditional_order": '''
import torch.nn as nn


def stack(c, n):
    result = nn.Sequential()
    for i in range(n):
        result.add_module(f"conv{i}", nn.Conv2d(c, c, 3, padding=1))
        if i % 2:
            result.add_module(f"act{i}", nn.ReLU())
        else:
            result.add_module(f"bn{i}", nn.BatchNorm2d(c))
    return result
''',
    "open_condition": '''
import torch.nn as nn


def conv_bn(c_in, c_out, act):
    result = nn.Sequential()
    result.add_module("conv", nn.Conv2d(c_in, c_out, 3, padding=1, bias=False))
    if act:
        result.add_module("act", nn.ReLU())
    result.add_module("bn", nn.BatchNorm2d(c_out))
    return result
''',
    "list_changed_after_the_build": '''
import torch.nn as nn


def conv_bn(c_in, c_out):
    layers = [nn.Conv2d(c_in, c_out, 3, padding=1, bias=False)]
    block = nn.Sequential(*layers)
    layers.append(nn.BatchNorm2d(c_out))
    return block
''',
    "passed_to_a_call": '''
import torch.nn as nn


def conv_bn(c_in, c_out, extra):
    result = nn.Sequential()
    result.add_module("conv", nn.Conv2d(c_in, c_out, 3, padding=1, bias=False))
    extra(result)
    result.add_module("bn", nn.BatchNorm2d(c_out))
    return result
''',
    "rebound": '''
import torch.nn as nn


def conv_bn(c_in, c_out, deep=False):
    result = nn.Sequential()
    result.add_module("conv", nn.Conv2d(c_in, c_out, 3, padding=1, bias=False))
    result = nn.Sequential()
    result.add_module("bn", nn.BatchNorm2d(c_out))
    return result
''',
}


def _module(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    return module


def _findings(source: str) -> list:  # type: ignore[type-arg]
    env = Environment("cpu", frozenset(), "2.13.0")
    rules = [r for r in load_rules().rules if r.family == 7]
    return find(analyse(source, "model.py"), rules, env)


def test_each_added_pair_is_a_fixable_site_at_its_conv() -> None:
    findings = _findings(MODEL)
    conv_lines = [i + 1 for i, line in enumerate(MODEL.splitlines()) if "nn.Conv2d(" in line]
    assert sorted((f.rule_id, f.fixable, f.span.start_line + 1) for f in findings) == [
        ("f07-conv-bn", True, line) for line in conv_lines]


def _fixed() -> str:
    env = Environment("cpu", frozenset(), "2.13.0")
    rules = [r for r in load_rules().rules if r.family == 7]
    findings = find(analyse(MODEL, "model.py"), rules, env)
    result = rewrite(MODEL, findings, rules=rules, env=env, path="model.py")
    assert isinstance(result, Rewritten), result
    assert result.new_source.count("FoldedConvBnSequential()") == 4
    assert "nn.Sequential()" not in result.new_source
    return result.new_source


CASES = {
    "factory": ("RepBlock", (3, 8)),
    "builder_method": ("QARepBlock", (3, 8)),
    "loop_branches": ("MobileOneBlock", (3, 8)),
    "with_activation": ("DarkBlock", (8,)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_fix_computes_what_the_original_computes(case: str) -> None:
    name, args = CASES[case]
    source = _fixed()
    torch.manual_seed(0)
    original = getattr(_module(MODEL, "before"), name)(*args).double()
    fixed = getattr(_module(source, "after"), name)(*args).double()
    trained_statistics(original, weight=(0.5, 2))
    compare_modules(original, fixed, lambda: (torch.randn(2, args[0], 12, 12, dtype=torch.float64),),
                    atol=1e-9, rtol=1e-6, grad_atol=1e-9, same_parameters=True)
    assert any(type(m).__name__ == "FoldedConvBnSequential" for m in fixed.modules())


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_an_order_the_statements_do_not_fix_is_no_site(case: str) -> None:
    assert list(_findings(REFUSED[case])) == []


def test_the_refused_forms_hold_both_layers_in_one_sequential() -> None:
    # the refusals are not refused for lacking a pair: each adds a conv and then a BN to one container
    for source in REFUSED.values():
        assert "nn.Sequential(" in source and source.index("nn.Conv2d(") < source.rindex("nn.BatchNorm2d(")
