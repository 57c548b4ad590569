"""A method's `norm_layer=None` parameter read as the class `__init__` passes on to it unchanged
(`analysis/chains/passed_classes.py`).

Shaped on gluoncv-torch 0.0.3 `gluoncvth/models/resnet.py:130-190` (dev2): `ResNet.__init__(..., norm_layer=
nn.BatchNorm2d)` calls `self._make_layer(block, 64, layers[0], norm_layer=norm_layer)` four times, and
`_make_layer(self, block, planes, blocks, stride=1, dilation=1, norm_layer=None)` builds the downsample
`nn.Sequential(nn.Conv2d(self.inplanes, planes * block.expansion, 1, stride=stride, bias=False),
norm_layer(planes * block.expansion))`. The same PyTorch-Encoding ResNet is in pywick
(`models/segmentation/testnets/dilated_resnet.py:170`, `tkcnet/resnet.py:171`) and super-gradients
(`training/models/segmentation_models/laddernet.py:116`). Rewritten here at fixture size.

The fix is the one the base gives a method's Sequential (`FoldedConvBnSequential`, deciding from the children's
types at run time); the fixed network computes what the original does: outputs, input and parameter gradients,
buffers, in eval and training mode (float64, CPU, seed 0, atol 1e-9 / rtol 1e-6).
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

RESNET = '''
import torch.nn as nn


class Block(nn.Module):
    expansion = 2

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.pool = nn.AvgPool2d(stride) if stride > 1 else nn.Identity()
        self.downsample = downsample

    def forward(self, x):
        out = self.pool(x)
        return out.repeat(1, 2, 1, 1)[:, : out.shape[1] * 2] if self.downsample is None else self.downsample(x)


class ResNet(nn.Module):
    def __init__(self, block, layers, norm_layer=nn.BatchNorm2d):
        super().__init__()
        self.inplanes = 4
        self.layer1 = self._make_layer(block, 4, layers[0], norm_layer=norm_layer)
        self.layer2 = self._make_layer(block, 8, layers[1], stride=2, norm_layer=norm_layer)

    def _make_layer(self, block, planes, blocks, stride=1, norm_layer=None):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes * block.expansion, kernel_size=1, stride=stride, bias=False),
                norm_layer(planes * block.expansion),
            )
        layers = [block(self.inplanes, planes, stride, downsample=downsample)]
        self.inplanes = planes * block.expansion
        return nn.Sequential(*layers)

    def forward(self, x):
        return self.layer2(self.layer1(x))
'''

CONV_LINE = next(i for i, line in enumerate(RESNET.splitlines()) if "nn.Conv2d(self.inplanes" in line)  # 0-based


def _sites(source: str) -> list[tuple[str, int, bool]]:
    return [(f.rule_id, f.span.start_line, f.fixable) for f in find(analyse(source, "model.py"), RULES, ENV)]


def _module(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    return module


def test_the_downsample_pair_of_a_method_given_init_s_batchnorm_default_is_a_site() -> None:
    assert _sites(RESNET) == [("f07-conv-bn", CONV_LINE, True)]


def test_the_fixed_network_computes_what_the_original_does() -> None:
    findings = find(analyse(RESNET, "model.py"), RULES, ENV)
    result = rewrite(RESNET, findings, rules=RULES, env=ENV, path="model.py")
    assert isinstance(result, Rewritten), result
    assert "downsample = FoldedConvBnSequential(" in result.new_source
    assert find(analyse(result.new_source, "model.py"), RULES, ENV) == ()
    original, fixed = _module(RESNET, "original"), _module(result.new_source, "fixed")
    torch.manual_seed(0)
    a = original.ResNet(original.Block, [1, 1]).double()
    b = fixed.ResNet(fixed.Block, [1, 1]).double()
    assert type(b.layer1[0].downsample).__name__ == "FoldedConvBnSequential"
    trained_statistics(a)
    x = torch.randn(2, 4, 6, 6, dtype=torch.float64)
    compare_modules(a, b, lambda: (x,), atol=1e-9, rtol=1e-6, grad_atol=1e-9, same_parameters=True)


@pytest.mark.parametrize(("old", "new"), [
    # `__init__`'s default is another norm.
    ("norm_layer=nn.BatchNorm2d):", "norm_layer=nn.InstanceNorm2d):"),
    # one call passes something else (a local), so the method's parameter is not always `__init__`'s.
    ("self.layer2 = self._make_layer(block, 8, layers[1], stride=2, norm_layer=norm_layer)",
     "other = nn.GroupNorm\n        self.layer2 = self._make_layer(block, 8, layers[1], stride=2, norm_layer=other)"),
    # one call leaves the method's `None` default.
    ("self.layer2 = self._make_layer(block, 8, layers[1], stride=2, norm_layer=norm_layer)",
     "self.layer2 = self._make_layer(block, 8, layers[1], stride=2)"),
    # `__init__` rebinds its parameter before passing it on.
    ("        self.inplanes = 4\n", "        self.inplanes = 4\n        norm_layer = nn.InstanceNorm2d\n"),
    # the method rebinds its own parameter.
    ("        downsample = None\n", "        downsample = None\n        norm_layer = nn.LayerNorm\n"),
])
def test_a_parameter_the_calls_do_not_all_pass_from_a_batchnorm_default_is_no_site(old: str, new: str) -> None:
    assert old in RESNET
    assert _sites(RESNET.replace(old, new)) == []
