"""A Sequential built with its first layers and then extended by `add_module` in a loop keeps those first layers
at their positions (`Ctor.lead`), so its stem's conv -> BN pair is read where the Sequential runs.

DenseNet (torchvision 0.20 `models/densenet.py`, timm, monai, torchxrayvision `models.py:274`, super_gradients):
`self.features = nn.Sequential(OrderedDict([("conv0", Conv2d), ("norm0", BatchNorm2d), ("relu0", ...), ...]))`,
then `self.features.add_module("denseblock%d" % (i + 1), block)` in a loop (a transition under an `if`) and a
final norm. Before, the additions made the items a union in no order and nothing was read. Each later addition
has a name none of the first children has, so it goes after them (`child_names.keeps_positions`); the call runs
the first layers, then the rest as one call of the slice (`self.features[4:]`), whose layers are not read.

The fix builds the Sequential as `FoldedConvBnSequential` (still a Sequential: `add_module` works on it; it folds
adjacent stock children at run time), and the rewritten module computes what the original computes: outputs,
input and parameter gradients in eval and training mode (`equivalence.compare_modules`: float64, CPU,
seed 0, outputs and gradients at rtol 1e-6 / atol 1e-9; the original state dict loads with `strict=True`;
running statistics at `torch.allclose`'s tolerances).

Not sites (each asserted after its site twin): an addition whose name may replace a first child
(`add_module("conv0", ...)`, a name built from digits only, `f"norm{i}"` beside a `norm0`), a class that sets a
child by position (`self.features[1] = ...`), and an `insert`.
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

ENV = Environment("cpu", frozenset(), "2.13.0")
RULES = [r for r in load_rules().rules if r.family == 7]

MODEL = '''
from collections import OrderedDict

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.lin = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.lin(x)) + x


class DenseNet(nn.Module):
    def __init__(self, c_in=3, c=4, blocks=(1, 2, 1), classes=5):
        super().__init__()
        self.features = nn.Sequential(OrderedDict([
            ("conv0", nn.Conv2d(c_in, c, kernel_size=3, padding=1, bias=False)),
            ("norm0", nn.BatchNorm2d(c)),
            ("relu0", nn.ReLU(inplace=True)),
        ]))
        for i, n in enumerate(blocks):
            self.features.add_module(NAME, Block(c))
            if i != len(blocks) - 1:
                self.features.add_module("transition%d" % (i + 1), nn.AvgPool2d(1))
        self.features.add_module("norm5", nn.BatchNorm2d(c))
        self.classifier = nn.Linear(c, classes)

    def forward(self, x):
        features = self.features(x)
        out = torch.relu(features).mean((2, 3))
        return self.classifier(out)
'''

SITE = MODEL.replace("NAME", '"denseblock%d" % (i + 1)')


def _module(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    return module


def _sites(source: str) -> list[tuple[str, bool]]:
    return [(f.rule_id, f.fixable) for f in find(analyse(source, "model.py"), RULES, ENV)]


def test_the_first_layers_are_read_and_their_fold_computes_the_same() -> None:
    findings = find(analyse(SITE, "model.py"), RULES, ENV)
    assert [(f.rule_id, f.fixable) for f in findings] == [("f07-conv-bn", True)]
    lines = SITE.splitlines()
    assert "self.features(x)" in lines[findings[0].span.start_line]
    result = rewrite(SITE, findings, rules=RULES, env=ENV, path="model.py")
    assert isinstance(result, Rewritten), result
    assert "self.features = FoldedConvBnSequential(OrderedDict" in result.new_source
    original, fixed = _module(SITE, "original"), _module(result.new_source, "fixed")
    torch.manual_seed(0)
    a = original.DenseNet().double()
    b = fixed.DenseNet().double()
    trained_statistics(a)
    # outputs, input and parameter gradients (as strict as before the harness: atol 1e-9), running statistics
    # (the harness's buffer check at torch.allclose's tolerances), in eval and training mode
    compare_modules(a, b, lambda: (torch.randn(2, 3, 6, 6, dtype=torch.float64),), atol=1e-9, rtol=1e-6,
                    grad_atol=1e-9, same_parameters=True)


@pytest.mark.parametrize("near", [
    MODEL.replace("NAME", '"conv0"'),  # replaces the first conv in place
    MODEL.replace("NAME", "str(i)"),  # may be "1": replaces the BatchNorm
    MODEL.replace("NAME", '"%d" % i'),
    MODEL.replace("NAME", 'f"norm{i}"'),  # "norm0" on the first pass
    SITE.replace("        self.classifier = nn.Linear(c, classes)\n",
                 "        self.classifier = nn.Linear(c, classes)\n        self.features[1] = nn.Identity()\n"),
    SITE.replace('self.features.add_module("norm5", nn.BatchNorm2d(c))',
                 "self.features.insert(0, nn.Identity())"),
])
def test_near_forms_stay_silent(near: str) -> None:
    assert _sites(SITE) == [("f07-conv-bn", True)]
    assert _sites(near) == []
