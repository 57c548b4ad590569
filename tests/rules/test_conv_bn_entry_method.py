"""The conv -> BN fix in a public method nothing in its class calls (`adopter.analysis.idioms.entry_methods`:
pyannote-audio's `ResNet.forward_frames`, the stem `F.relu(self.bn1(self.conv1(fbank)))`, called by another
class as `self.resnet.forward_frames(fbank)`). The fix rewrites the method's statement to
`folded_conv_bn(fbank, self.conv1, self.bn1)`; the rewritten method computes what the original computes in
eval and training mode: outputs, input and parameter gradients, running statistics after a training pass
(float64, CPU, seed 0, `torch.allclose` at rtol 1e-6 / atol 1e-9); the state dict loads with `strict=True`."""

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
from torch.nn import functional as F


class Stem(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(1, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.layer1 = nn.Conv2d(c, c, 3, padding=1)
        self.head = nn.Linear(c, 4)

    def forward_frames(self, fbank):
        fbank = fbank.permute(0, 2, 1).unsqueeze(1)
        out = F.relu(self.bn1(self.conv1(fbank)))
        return self.layer1(out)

    def forward(self, fbank):
        return self.head(fbank.mean(-1))


class Wrapper(nn.Module):
    def __init__(self):
        super().__init__()
        self.resnet = Stem(8)

    def forward(self, fbank):
        return self.resnet.forward_frames(fbank)
'''


def _module(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    return module


def _fixed() -> str:
    env = Environment("cpu", frozenset(), "2.13.0")
    rules = [r for r in load_rules().rules if r.family == 7]
    findings = find(analyse(MODEL, "model.py"), rules, env)
    assert [(f.rule_id, f.scope_name, f.fixable) for f in findings] == [("f07-conv-bn", "Stem.forward_frames", True)]
    result = rewrite(MODEL, findings, rules=rules, env=env, path="model.py")
    assert isinstance(result, Rewritten), result
    assert "out = F.relu(folded_conv_bn(fbank, self.conv1, self.bn1))" in result.new_source
    return result.new_source


def test_the_fix_computes_what_the_original_computes() -> None:
    source = _fixed()
    torch.manual_seed(0)
    original = _module(MODEL, "before").Wrapper().double()
    fixed = _module(source, "after").Wrapper().double()
    trained_statistics(original, weight=(0.5, 2))
    # running statistics alike; `head` is not on this path (no gradient on either side)
    compare_modules(original, fixed, lambda: (torch.randn(2, 10, 6, dtype=torch.float64),),
                    atol=1e-9, rtol=1e-6, grad_atol=1e-9, same_parameters=True, buffer_atol=1e-9, buffer_rtol=1e-6)


INDEXED = '''
import torch
from torch import nn


class Indexed(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(c, c, 3, bias=False), nn.BatchNorm2d(c), nn.ReLU())

    def forward(self, x):
        x = self.features[0](x)
        x = self.features[1](x)
        return self.features[2](x)
'''


def test_the_fix_of_items_called_by_index_computes_what_the_original_computes() -> None:
    """Items of a literal Sequential called by index (`self.features[0](x)`, `self.features[1](x)`):
    `folded_conv_bn(x, self.features[0], self.features[1])`, same tolerances as above."""
    env = Environment("cpu", frozenset(), "2.13.0")
    rules = [r for r in load_rules().rules if r.family == 7]
    findings = find(analyse(INDEXED, "model.py"), rules, env)
    assert [(f.scope_name, f.fixable) for f in findings] == [("Indexed", True)]
    result = rewrite(INDEXED, findings, rules=rules, env=env, path="model.py")
    assert isinstance(result, Rewritten), result
    assert "x = folded_conv_bn(x, self.features[0], self.features[1])" in result.new_source
    torch.manual_seed(0)
    original = _module(INDEXED, "before_indexed").Indexed(4).double()
    fixed = _module(result.new_source, "after_indexed").Indexed(4).double()
    trained_statistics(original.features[1], weight=(0.5, 2))
    # running statistics alike
    compare_modules(original, fixed, lambda: (torch.randn(2, 4, 9, 9, dtype=torch.float64),),
                    atol=1e-9, rtol=1e-6, grad_atol=1e-9, same_parameters=True, buffer_atol=1e-9, buffer_rtol=1e-6)
