"""The conv -> BN fix on `nn.Sequential` subclasses that hand their children over as a local list
(`super().__init__(*layers)`: torchvision 0.20 `FCNHead`, and `ConvNormActivation` whose `norm_layer`
default is BatchNorm2d and whose norm is appended under `if norm_layer is not None:`), or assign them to
attributes (`self.conv = nn.Conv2d(...)`, timm 1.0.12 `tiny_vit.ConvNorm`). The fix builds the class
on `FoldedConvBnSequential`, which folds a stock Conv -> BatchNorm pair of adjacent children at run time (eval
mode, running statistics) and runs any other child as before, so a caller passing `norm_layer=None` or a
GroupNorm gets the original computation. The rewritten classes compute what the originals compute in eval
and training mode: outputs, input and parameter gradients (float64, CPU, seed 0, `torch.allclose` at rtol 1e-6
/ atol 1e-9)."""

from __future__ import annotations

import functools
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


class FCNHead(nn.Sequential):
    def __init__(self, in_channels, channels):
        inter_channels = in_channels // 4
        layers = [
            nn.Conv2d(in_channels, inter_channels, 3, padding=1, bias=False),
            nn.BatchNorm2d(inter_channels),
            nn.ReLU(),
            nn.Dropout(0.1),
            nn.Conv2d(inter_channels, channels, 1),
        ]

        super().__init__(*layers)


class ConvNormActivation(torch.nn.Sequential):
    def __init__(self, c_in, c_out, kernel_size=3, norm_layer=torch.nn.BatchNorm2d,
                 activation_layer=torch.nn.ReLU, bias=None, conv_layer=torch.nn.Conv2d):
        if bias is None:
            bias = norm_layer is None
        layers = [conv_layer(c_in, c_out, kernel_size, padding=kernel_size // 2, bias=bias)]
        if norm_layer is not None:
            layers.append(norm_layer(c_out))
        if activation_layer is not None:
            layers.append(activation_layer(inplace=True))
        super().__init__(*layers)
        self.out_channels = c_out


class ConvNorm(torch.nn.Sequential):
    def __init__(self, in_chs, out_chs, ks=1, bn_weight_init=1):
        super().__init__()
        self.conv = nn.Conv2d(in_chs, out_chs, ks, bias=False)
        self.bn = nn.BatchNorm2d(out_chs)
        torch.nn.init.constant_(self.bn.weight, bn_weight_init)
        torch.nn.init.constant_(self.bn.bias, 0)
'''


def _module(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    return module


def _fixed() -> str:
    env = Environment("cpu", frozenset(), "2.13.0")
    rules = [r for r in load_rules().rules if r.family == 7]
    findings = find(analyse(MODEL, "model.py"), rules, env)
    assert [(f.rule_id, f.fixable) for f in findings] == [("f07-conv-bn", True)] * 3
    result = rewrite(MODEL, findings, rules=rules, env=env, path="model.py")
    assert isinstance(result, Rewritten), result
    assert "class FCNHead(FoldedConvBnSequential):" in result.new_source
    assert "class ConvNormActivation(FoldedConvBnSequential):" in result.new_source
    assert "class ConvNorm(FoldedConvBnSequential):" in result.new_source
    return result.new_source


CASES = {
    "fcn_head": ("FCNHead", (16, 3), {}),
    "conv_norm_act": ("ConvNormActivation", (3, 8), {}),
    "conv_norm_act_no_norm": ("ConvNormActivation", (3, 8), {"norm_layer": None}),
    "conv_norm_attributes": ("ConvNorm", (3, 8), {"ks": 3, "bn_weight_init": 0.5}),
    "conv_norm_act_group_norm": ("ConvNormActivation", (3, 8), {"norm_layer": functools.partial(torch.nn.GroupNorm, 2)}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_fix_computes_what_the_original_computes(case: str) -> None:
    name, args, kwargs = CASES[case]
    source = _fixed()
    torch.manual_seed(0)
    original = getattr(_module(MODEL, "before"), name)(*args, **kwargs).double()
    fixed = getattr(_module(source, "after"), name)(*args, **kwargs).double()
    trained_statistics(original, weight=(0.5, 2))
    # the same dropout mask on both sides in training mode (run_seed)
    compare_modules(original, fixed, lambda: (torch.randn(2, args[0], 12, 12, dtype=torch.float64),),
                    atol=1e-9, rtol=1e-6, grad_atol=1e-9, same_parameters=True, run_seed=1)
    # the eval-mode fold is the one that ran: the fixed class is a FoldedConvBnSequential
    assert type(fixed).__mro__[1].__name__ == "FoldedConvBnSequential"
