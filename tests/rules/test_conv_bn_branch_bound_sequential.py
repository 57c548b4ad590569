"""Conv -> BN pairs of a container bound on two paths of `__init__` (a MobileNetV2 inverted residual, as
fightingcv-attention's MobileViT `MV2Block` writes it: `if expansion == 1: self.conv = nn.Sequential(...)`,
`else: self.conv = nn.Sequential(...)`, one `self.conv(x)` in `forward`). The forward's two paths call the same
items (`self.conv[0]`, `self.conv[1]`) at the same span, but the items are built in two places: each
construction's pairs are sites (before this, the else path's first pair was taken for the if path's and
dropped). Fixing them all computes what the original computes on either path: outputs, input and parameter
gradients in eval and training mode, and the running statistics training leaves (float64, CPU, seed 0,
`torch.allclose` at rtol 1e-6 / atol 1e-9).
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


class InvertedResidual(nn.Module):
    def __init__(self, inp, out, stride=1, expansion=4):
        super().__init__()
        hidden = inp * expansion
        self.use_res = stride == 1 and inp == out
        if expansion == 1:
            self.conv = nn.Sequential(
                nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False),
                nn.BatchNorm2d(hidden),
                nn.SiLU(),
                nn.Conv2d(hidden, out, 1, 1, 0, bias=False),
                nn.BatchNorm2d(out),
            )
        else:
            self.conv = nn.Sequential(
                nn.Conv2d(inp, hidden, 1, 1, 0, bias=False),
                nn.BatchNorm2d(hidden),
                nn.SiLU(),
                nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False),
                nn.BatchNorm2d(hidden),
                nn.SiLU(),
                nn.Conv2d(hidden, out, 1, 1, 0, bias=False),
                nn.SiLU(),
                nn.BatchNorm2d(out),
            )

    def forward(self, x):
        if self.use_res:
            return x + self.conv(x)
        return self.conv(x)
'''

ENV = Environment("cpu", frozenset(), "2.13.0")
RULES = [r for r in load_rules().rules if r.family == 7]


def _module(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    return module


def test_each_construction_s_pairs_are_sites() -> None:
    findings = find(analyse(MODEL, "model.py"), RULES, ENV)
    # 1-based lines of the Conv2d of each pair: two in the if branch, two in the else branch (the last
    # Conv2d of the else branch runs into a SiLU, not a site).
    assert sorted(f.init_spans[0].start_line + 1 for f in findings) == [13, 16, 21, 24]
    assert all(f.rule_id == "f07-conv-bn" and f.fixable for f in findings)


@pytest.mark.parametrize("expansion", [1, 4])
def test_fixing_every_pair_computes_what_the_original_computes(expansion: int) -> None:
    findings = find(analyse(MODEL, "model.py"), RULES, ENV)
    result = rewrite(MODEL, findings, rules=RULES, env=ENV, path="model.py")
    assert isinstance(result, Rewritten), result
    assert result.new_source.count("FoldedConvBnSequential(\n") == 2
    assert find(analyse(result.new_source, "model.py"), RULES, ENV) == ()
    original = _module(MODEL, "before").InvertedResidual(4, 4, 1, expansion).double()
    fixed = _module(result.new_source, "after").InvertedResidual(4, 4, 1, expansion).double()
    torch.manual_seed(0)
    trained_statistics(original, weight=(0.5, 2))
    compare_modules(original, fixed, lambda: (torch.randn(2, 4, 8, 8, dtype=torch.float64),),
                    atol=1e-9, rtol=1e-6, grad_atol=1e-9, same_parameters=True, buffer_atol=1e-9, buffer_rtol=1e-6)
