"""The fold of a conv -> BN (or Linear -> BN) pair one of whose layers sits in a same-file wrapper whose
forward runs that layer alone (`Norm.forward` is `return self.bn(x)`, facexlib 0.3.0 `parsing/parsenet.py`'s
`NormLayer` form): the caller's two statements become `folded_conv_bn(x, self.conv2d, self.norm.bn)`.
The rewritten module computes what the original computes: outputs, input and parameter gradients in eval
and training mode, and the running statistics training leaves; the state dict loads with `strict=True`
(float64, CPU, seed 0, BN statistics randomised, `torch.allclose` at rtol 1e-6 / atol 1e-9).
"""

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

NORM = '''
import torch
from torch import nn
from torch.nn import functional as F


class Norm(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels)

    def forward(self, x):
        return self.bn(x)


class Model(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv2d = nn.Conv2d(c_in, c_out, 3, padding=1, bias=False)
        self.norm = Norm(c_out)

    def forward(self, x):
        out = self.conv2d(x)
        out = self.norm(out)
        return F.relu(out)
'''

CONV = '''
import torch
from torch import nn


class Conv(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, 3, padding=1)

    def forward(self, x):
        x = self.conv(x)
        return x


class Model(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.proj = Conv(c_in, c_out)
        self.bn = nn.BatchNorm2d(c_out)

    def forward(self, x):
        return self.bn(self.proj(x))
'''

LINEAR = '''
import torch
from torch import nn


class Norm1d(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.norm = nn.BatchNorm1d(features)

    def forward(self, x):
        return self.norm(x)


class Model(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.fc = nn.Linear(d_in, d_out)
        self.bn = Norm1d(d_out)

    def forward(self, x):
        return self.bn(self.fc(x))
'''

ENV = Environment("cpu", frozenset(), "2.13.0")
RULES = [r for r in load_rules().rules if r.family in (7, 8)]


def _module(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    return module


@pytest.mark.parametrize(("source", "shape", "call"), [
    (NORM, (2, 3, 8, 8), "folded_conv_bn(x, self.conv2d, self.norm.bn)"),
    (CONV, (2, 3, 8, 8), "folded_conv_bn(x, self.proj.conv, self.bn)"),
    (LINEAR, (6, 3), "folded_linear_bn(x, self.fc, self.bn.norm)"),
], ids=["norm-wrapper", "conv-wrapper", "linear-bn1d-wrapper"])
def test_the_fold_through_a_wrapper_computes_the_same(source: str, shape: tuple[int, ...], call: str) -> None:
    findings = find(analyse(source, "model.py"), RULES, ENV)
    assert [f.fixable for f in findings] == [True]
    result = rewrite(source, findings, rules=RULES, env=ENV, path="model.py")
    assert isinstance(result, Rewritten), result
    assert call in result.new_source
    assert find(analyse(result.new_source, "model.py"), RULES, ENV) == ()
    original, fixed = _module(source, "original"), _module(result.new_source, "fixed")
    torch.manual_seed(0)
    a = original.Model(3, 4).double()
    trained_statistics(a)
    b = fixed.Model(3, 4).double()
    # running statistics equal to the bit
    compare_modules(a, b, lambda: (torch.randn(*shape, dtype=torch.float64),),
                    atol=1e-9, rtol=1e-6, grad_atol=1e-9, same_parameters=True, buffer_atol=0, buffer_rtol=0)


def test_a_wrapper_that_runs_an_activation_too_keeps_its_call() -> None:
    # `Norm.forward` runs BN then ReLU: naming `self.norm.bn` would drop the ReLU, so no fix is offered.
    code = NORM.replace("        self.bn = nn.BatchNorm2d(channels)\n",
                        "        self.bn = nn.BatchNorm2d(channels)\n        self.act = nn.ReLU()\n").replace(
        "        return self.bn(x)\n", "        return self.act(self.bn(x))\n")
    findings = find(analyse(code, "model.py"), RULES, ENV)
    assert [(f.fixable, "inside the submodule" in (f.no_fix_reason or "")) for f in findings] == [(False, True)]
