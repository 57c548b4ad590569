"""The conv -> BN fix on a Sequential built from a list filled in a loop (`sequence += [conv, norm_layer(...),
act]` in `for n in range(1, n_layers)`, `self.main = nn.Sequential(*sequence)`: taming-transformers-rom1504
0.0.6 `NLayerDiscriminator`, `norm_layer` aliased to BatchNorm2d or a norm of the file's own under
`if/else`). The site is read as one pass of the loop (`scope.bindings.InitAnalysis._one_pass`) and fixed by
building the Sequential as `FoldedConvBnSequential`, which folds stock Conv -> BatchNorm children at run
time (eval mode, running statistics) and leaves any other child as it is. The rewritten module computes
what the original computes for both norms, in eval and training mode: outputs, input gradients and
parameter gradients (float64, CPU, seed 0, `torch.allclose` at rtol 1e-6 / atol 1e-9).
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

MODEL = '''
import functools
import torch
from torch import nn


class ActNorm(nn.Module):
    def __init__(self, num_features):
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(1, num_features, 1, 1))

    def forward(self, x):
        return x + self.loc


class NLayerDiscriminator(nn.Module):
    def __init__(self, input_nc=3, ndf=8, n_layers=3, use_actnorm=False):
        super().__init__()
        if not use_actnorm:
            norm_layer = nn.BatchNorm2d
        else:
            norm_layer = ActNorm
        if type(norm_layer) == functools.partial:
            use_bias = norm_layer.func != nn.BatchNorm2d
        else:
            use_bias = norm_layer != nn.BatchNorm2d

        kw = 4
        padw = 1
        sequence = [nn.Conv2d(input_nc, ndf, kernel_size=kw, stride=2, padding=padw), nn.LeakyReLU(0.2, True)]
        nf_mult = 1
        nf_mult_prev = 1
        for n in range(1, n_layers):
            nf_mult_prev = nf_mult
            nf_mult = min(2 ** n, 8)
            sequence += [
                nn.Conv2d(ndf * nf_mult_prev, ndf * nf_mult, kernel_size=kw, stride=2, padding=padw, bias=use_bias),
                norm_layer(ndf * nf_mult),
                nn.LeakyReLU(0.2, True)
            ]

        sequence += [
            nn.Conv2d(ndf * nf_mult, 1, kernel_size=kw, stride=1, padding=padw)]
        self.main = nn.Sequential(*sequence)

    def forward(self, input):
        return self.main(input)
'''


def _module(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    return module


def _fixed() -> str:
    env = Environment("cpu", frozenset(), "2.13.0")
    rules = [r for r in load_rules().rules if r.family == 7]
    findings = find(analyse(MODEL, "model.py"), rules, env)
    assert [(f.rule_id, f.fixable) for f in findings] == [("f07-conv-bn", True)]
    result = rewrite(MODEL, findings, rules=rules, env=env, path="model.py")
    assert isinstance(result, Rewritten), result
    assert "FoldedConvBnSequential(*sequence)" in result.new_source
    return result.new_source


@pytest.mark.parametrize("use_actnorm", [False, True])
def test_the_fix_computes_what_the_original_computes(use_actnorm: bool) -> None:
    original_cls = _module(MODEL, "before").NLayerDiscriminator
    fixed_cls = _module(_fixed(), "after").NLayerDiscriminator
    torch.manual_seed(0)
    original = original_cls(use_actnorm=use_actnorm).double()
    fixed = fixed_cls(use_actnorm=use_actnorm).double()
    trained_statistics(original, weight=(0.5, 2))
    compare_modules(original, fixed, lambda: (torch.randn(2, 3, 32, 32, dtype=torch.float64),),
                    atol=1e-9, rtol=1e-6, grad_atol=1e-9, same_parameters=True)
