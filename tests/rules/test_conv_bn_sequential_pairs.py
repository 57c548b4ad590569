"""The conv -> BN fix for each pair of one literal `nn.Sequential(Conv2d, BatchNorm2d, ReLU, Conv2d,
BatchNorm2d, ReLU)` (a VGG/U-Net block, anomalib DRAEM's `block1`...`block5`), now one site per pair: fixing
either pair alone builds the Sequential as `FoldedConvBnSequential`, which folds every stock Conv ->
BatchNorm pair of its children at run time (eval mode, running statistics) and runs them unfolded in
training. The rewritten module computes what the original computes whichever pair was fixed: outputs,
input and parameter gradients in eval and training mode, and the running statistics training leaves
(float64, CPU, seed 0, `torch.allclose` at rtol 1e-6 / atol 1e-9); and the other pair is no site left.
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


class Encoder(nn.Module):
    def __init__(self, in_channels=3, width=4):
        super().__init__()
        self.block1 = nn.Sequential(
            nn.Conv2d(in_channels, width, kernel_size=3, padding=1),
            nn.BatchNorm2d(width),
            nn.ReLU(inplace=True),
            nn.Conv2d(width, width, kernel_size=3, padding=1),
            nn.BatchNorm2d(width),
            nn.ReLU(inplace=True),
        )
        self.mp1 = nn.MaxPool2d(2)
        self.block2 = nn.Sequential(
            nn.Conv2d(width, width * 2, kernel_size=3, padding=1),
            nn.BatchNorm2d(width * 2),
            nn.ReLU(inplace=True),
            nn.Conv2d(width * 2, width * 2, kernel_size=3, padding=1),
            nn.BatchNorm2d(width * 2),
            nn.ReLU(inplace=True),
        )

    def forward(self, x):
        act1 = self.block1(x)
        return self.block2(self.mp1(act1))
'''

ENV = Environment("cpu", frozenset(), "2.13.0")


def _module(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    return module


def _fixed(which: int) -> str:
    rules = [r for r in load_rules().rules if r.family == 7]
    findings = find(analyse(MODEL, "model.py"), rules, ENV)
    assert [(f.rule_id, f.fixable) for f in findings] == [("f07-conv-bn", True)] * 4
    result = rewrite(MODEL, [findings[which]], rules=rules, env=ENV, path="model.py")
    assert isinstance(result, Rewritten), result
    # The other pair of the same Sequential is folded by the same class: no site of it is left.
    left = find(analyse(result.new_source, "model.py"), rules, ENV)
    assert len(left) == 2 and all(f.span != findings[which].span for f in left)
    return result.new_source


@pytest.mark.parametrize("which", [0, 1])
def test_fixing_either_pair_computes_what_the_original_computes(which: int) -> None:
    fixed_source = _fixed(which)
    assert fixed_source.count("FoldedConvBnSequential(\n") == 1
    original = _module(MODEL, "before").Encoder().double()
    fixed = _module(fixed_source, "after").Encoder().double()
    torch.manual_seed(0)
    trained_statistics(original, weight=(0.5, 2))
    # training updated the same running statistics
    compare_modules(original, fixed, lambda: (torch.randn(2, 3, 16, 16, dtype=torch.float64),),
                    atol=1e-9, rtol=1e-6, grad_atol=1e-9, same_parameters=True, buffer_atol=1e-9, buffer_rtol=1e-6)
