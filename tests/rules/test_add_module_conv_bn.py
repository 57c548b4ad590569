"""An `nn.Sequential()` filled with `add_module` under conditions (super-gradients 3.7.1
`modules/conv_bn_act_block.py` `ConvBNAct`, dev2 batch 3): `conv`, then `bn` when `use_normalization` (the
default), then the activation when one is given. Each alternative keeps where its items are written, so the
conv -> BN pair is a site at the conv's `add_module` argument, and its fix builds the Sequential as
`FoldedConvBnSequential`, which folds adjacent stock Conv -> BatchNorm children at run time and runs any
other children as before. The rewritten module computes what the original computes with and without the
norm: outputs, input and parameter gradients in eval and training mode, and the running statistics
(float64, CPU, seed 0, `torch.allclose` at rtol 1e-6 / atol 1e-9).
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
import torch
from torch import nn


class ConvBNAct(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, padding, activation_type, use_normalization=True):
        super().__init__()
        self.seq = nn.Sequential()
        self.seq.add_module(
            "conv",
            nn.Conv2d(in_channels, out_channels, kernel_size=kernel_size, padding=padding),
        )
        if use_normalization:
            self.seq.add_module("bn", nn.BatchNorm2d(out_channels))
        if activation_type is not None:
            self.seq.add_module("act", activation_type())

    def forward(self, x):
        return self.seq(x)
'''

ENV = Environment("cpu", frozenset(), "2.13.0")
RULES = [r for r in load_rules().rules if r.family == 7]


def _module(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    return module


def _line(code: str, needle: str) -> int:
    return next(i for i, text in enumerate(code.splitlines()) if needle in text)


def test_the_pair_is_a_site_at_the_conv_and_its_fold_computes_the_same() -> None:
    findings = find(analyse(MODEL, "model.py"), RULES, ENV)
    assert [(f.rule_id, f.fixable) for f in findings] == [("f07-conv-bn", True)]
    lines = {n for s in findings[0].init_spans for n in range(s.start_line, s.end_line + 1)}
    assert _line(MODEL, "nn.Conv2d(in_channels") in lines
    result = rewrite(MODEL, findings, rules=RULES, env=ENV, path="model.py")
    assert isinstance(result, Rewritten), result
    assert find(analyse(result.new_source, "model.py"), RULES, ENV) == ()
    original, fixed = _module(MODEL, "original"), _module(result.new_source, "fixed")
    for use_normalization in (True, False):
        torch.manual_seed(0)
        a = original.ConvBNAct(3, 4, 3, 1, torch.nn.ReLU, use_normalization=use_normalization).double()
        if use_normalization:
            trained_statistics(a.seq.bn)
        b = fixed.ConvBNAct(3, 4, 3, 1, torch.nn.ReLU, use_normalization=use_normalization).double()
        # running statistics equal to the bit
        compare_modules(a, b, lambda: (torch.randn(2, 3, 8, 8, dtype=torch.float64),),
                        atol=1e-9, rtol=1e-6, grad_atol=1e-9, same_parameters=True, buffer_atol=0, buffer_rtol=0)


def test_a_module_added_between_conv_and_norm_stays_silent() -> None:
    assert len(find(analyse(MODEL, "model.py"), RULES, ENV)) == 1
    code = MODEL.replace('        if use_normalization:\n',
                         '        self.seq.add_module("act0", nn.ReLU())\n        if use_normalization:\n')
    assert find(analyse(code, "model.py"), RULES, ENV) == ()
