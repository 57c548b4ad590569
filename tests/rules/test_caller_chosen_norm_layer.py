"""A conv then a norm layer whose class the file's constructions supply to an `__init__` parameter that has no
default of its own (`adopter.analysis.chains.caller_layers`): the classic ResNet port (gluoncv-torch's, the
timm/torchvision-style blocks) stores `self.bn1 = norm_layer(planes)` with `norm_layer=None` and no fallback;
`ResNet.__init__(..., norm_layer=nn.BatchNorm2d)` passes it through `self._make_layer(block, ...,
norm_layer=norm_layer)` to `block(..., norm_layer=norm_layer)`, the class reaching `block` from a factory's
`ResNet(BasicBlock, [2, 2], **kwargs)`. Also a parent passing the class directly (by position or keyword), a
`functools.partial` of it, and a parent's own default passed on (the parent built in another file).

The fix is the existing call-site fold (`folded_conv_bn`), which folds at run time only a stock conv and
BatchNorm in eval mode and otherwise calls the two modules: the rewritten model computes what the original
computes with the BatchNorm every caller passes, and with another norm a caller in another file might pass
(`nn.Identity`, `GroupNorm`): outputs, input and parameter gradients in eval and training mode
(`equivalence.compare_modules`: float64, CPU, seed 0; the state dict loads with `strict=True`).

Not sites (each asserted beside its site twin): one construction passes another class (`nn.Identity`), a local,
or leaves the parameter out (its `None`); nothing in the file constructs the class; the class is also put in a
registry dict, subclassed, or its class-valued parameter stored; a required parameter behind a `**` splat;
every construction passes `nn.GroupNorm` (the class is read as it is: not a BatchNorm).
"""

from __future__ import annotations

import types
from functools import partial

import pytest

torch = pytest.importorskip("torch")

from adopter.analysis import analyse  # noqa: E402
from adopter.engine import Environment, find, load_rules  # noqa: E402
from adopter.session import rewrite  # noqa: E402
from adopter.synth import Rewritten  # noqa: E402
from equivalence import compare_modules  # noqa: E402

pytestmark = pytest.mark.torch

ENV = Environment("cpu", frozenset(), "2.13.0")
RULES = [r for r in load_rules().rules if r.family == 7]

RESNET = '''
import torch.nn as nn


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None, norm_layer=None):
        super(BasicBlock, self).__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = norm_layer(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = norm_layer(planes)
        self.downsample = downsample

    def forward(self, x):
        residual = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            residual = self.downsample(x)
        return self.relu(out + residual)


class ResNet(nn.Module):
    def __init__(self, block, layers, num_classes=10, norm_layer=nn.BatchNorm2d):
        super(ResNet, self).__init__()
        self.inplanes = 4
        self.stem = nn.Conv2d(3, 4, 3, 1, 1, bias=False)
        self.layer1 = self._make_layer(block, 4, layers[0], norm_layer=norm_layer)
        self.layer2 = self._make_layer(block, 8, layers[1], stride=2, norm_layer=norm_layer)
        self.fc = nn.Linear(8, num_classes)

    def _make_layer(self, block, planes, blocks, stride=1, norm_layer=None):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Conv2d(self.inplanes, planes * block.expansion, 1, stride, bias=False)
        layers = [block(self.inplanes, planes, stride, downsample, norm_layer=norm_layer)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes, norm_layer=norm_layer))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.layer2(self.layer1(self.stem(x)))
        return self.fc(x.mean((2, 3)))


def resnet10(**kwargs):
    return ResNet(BasicBlock, [1, 1], **kwargs)
'''

PARENT = '''
import functools

from torch import nn


class ConvNorm(nn.Module):
    def __init__(self, c_in, c_out, norm_layer):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, 3, padding=1, bias=False)
        self.norm = norm_layer(c_out)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.norm(self.conv(x)))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = ConvNorm(3, 4, nn.BatchNorm2d)
        self.b = ConvNorm(4, 4, norm_layer=nn.BatchNorm2d)

    def forward(self, x):
        return self.b(self.a(x))
'''

PARTIAL = '''
from functools import partial

from torch import nn


class ConvNorm(nn.Module):
    def __init__(self, c_in, c_out, norm_layer=None):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, 3, padding=1, bias=False)
        self.norm = norm_layer(c_out)

    def forward(self, x):
        return self.norm(self.conv(x))


class Stage(nn.Module):
    def __init__(self, c, norm_layer=partial(nn.BatchNorm2d, eps=1e-3, momentum=0.01)):
        super().__init__()
        self.a = ConvNorm(3, c, norm_layer=norm_layer)
        self.b = ConvNorm(c, c, norm_layer=partial(nn.BatchNorm2d, eps=1e-3))

    def forward(self, x):
        return self.b(self.a(x))
'''

SUBCLASSED = RESNET.replace("""

def resnet10(**kwargs):
    return ResNet(BasicBlock, [1, 1], **kwargs)
""", """

class ResNet10(ResNet):
    def __init__(self, num_classes=10):
        super().__init__(BasicBlock, [1, 1], num_classes=num_classes)


class ResNet10Wide(ResNet10):
    pass
""")


def _module(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    return module


def _sites(source: str) -> list[tuple[str, bool, int]]:
    return [(f.rule_id, f.fixable, f.span.start_line + 1) for f in find(analyse(source, "model.py"), RULES, ENV)]


def _line(source: str, text: str, start: int = 0) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line and i > start)


def _fixed(source: str) -> str:
    findings = find(analyse(source, "model.py"), RULES, ENV)
    result = rewrite(source, findings, rules=RULES, env=ENV, path="model.py")
    assert isinstance(result, Rewritten), result
    return result.new_source


def _trained(model: torch.nn.Module) -> torch.nn.Module:
    with torch.no_grad():  # statistics a trained model would have
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-1, 1)
                m.running_var.uniform_(0.5, 2)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-1, 1)
    return model


def _same(original: torch.nn.Module, fixed: torch.nn.Module) -> None:
    compare_modules(original, fixed, lambda: (torch.randn(2, 3, 8, 8, dtype=torch.float64),), atol=1e-9, rtol=1e-6)


def test_the_resnet_block_built_through_make_layer_and_a_factory() -> None:
    block = _line(RESNET, "def forward(self, x):")
    assert _sites(RESNET) == [("f07-conv-bn", True, _line(RESNET, "out = self.relu(self.bn1", block)),
                              ("f07-conv-bn", True, _line(RESNET, "out = self.bn2(self.conv2", block))]
    new = _fixed(RESNET)
    assert "folded_conv_bn(" in new
    original, fixed = _module(RESNET, "original"), _module(new, "fixed")
    kinds: list[dict[str, object]] = [
        {}, {"norm_layer": torch.nn.Identity}, {"norm_layer": partial(torch.nn.GroupNorm, 2)}]
    for kwargs in kinds:  # the file's BatchNorm, and what another file's caller may pass
        torch.manual_seed(0)
        a = _trained(original.resnet10(**kwargs).double())
        b = fixed.resnet10(**kwargs).double()
        _same(a, b)


def test_the_block_handed_up_by_a_subclass_super_init() -> None:
    # super-gradients' LadderNet: `class LadderNetBackBone50(LadderResNet)` passes the block to `super().__init__`
    block = _line(SUBCLASSED, "def forward(self, x):")
    assert _sites(SUBCLASSED) == [("f07-conv-bn", True, _line(SUBCLASSED, "out = self.relu(self.bn1", block)),
                                  ("f07-conv-bn", True, _line(SUBCLASSED, "out = self.bn2(self.conv2", block))]
    original, fixed = _module(SUBCLASSED, "original"), _module(_fixed(SUBCLASSED), "fixed")
    for build in ("ResNet10", "ResNet10Wide"):
        torch.manual_seed(0)
        a = _trained(getattr(original, build)().double())
        _same(a, getattr(fixed, build)().double())


def test_a_parent_passing_the_class_by_position_and_keyword() -> None:
    assert _sites(PARENT) == [("f07-conv-bn", True, _line(PARENT, "return self.act(self.norm(self.conv(x)))"))]
    original, fixed = _module(PARENT, "original"), _module(_fixed(PARENT), "fixed")
    torch.manual_seed(0)
    a = _trained(original.Net().double())
    _same(a, fixed.Net().double())


def test_a_partial_passed_and_a_parent_default_passed_on() -> None:
    assert _sites(PARTIAL) == [("f07-conv-bn", True, _line(PARTIAL, "return self.norm(self.conv(x))"))]
    original, fixed = _module(PARTIAL, "original"), _module(_fixed(PARTIAL), "fixed")
    torch.manual_seed(0)
    a = _trained(original.Stage(4).double())
    _same(a, fixed.Stage(4).double())


@pytest.mark.parametrize(("site", "near"), [
    # one construction passes another class
    (PARENT, PARENT.replace("ConvNorm(4, 4, norm_layer=nn.BatchNorm2d)", "ConvNorm(4, 4, norm_layer=nn.Identity)")),
    # a local: nothing pins it
    (PARENT, PARENT.replace("        self.a = ConvNorm(3, 4, nn.BatchNorm2d)",
                            "        norm = getattr(nn, 'BatchNorm2d')\n        self.a = ConvNorm(3, 4, norm)")),
    # all pass GroupNorm: the class as it is, not a BatchNorm
    (PARENT, PARENT.replace("nn.BatchNorm2d)", "nn.GroupNorm)")),
    # a required parameter behind a splat
    (PARENT, PARENT.replace("ConvNorm(3, 4, nn.BatchNorm2d)", "ConvNorm(3, 4, **{'norm_layer': nn.BatchNorm2d})")),
    # the class also in a registry (constructed from it elsewhere)
    (PARENT, PARENT + "\nBLOCKS = {'conv_norm': ConvNorm}\n"),
    # a subclass nothing in the file constructs: what reaches it is another file's choice
    (PARENT, PARENT + "\n\nclass Wide(ConvNorm):\n    pass\n"),
    # a second subclass hands another norm up through `super().__init__`
    (SUBCLASSED, SUBCLASSED + "\n\nclass Plain(ResNet):\n    def __init__(self):\n"
                              "        super().__init__(BasicBlock, [1, 1], norm_layer=nn.Identity)\n"),
    # nothing in the file constructs the block: another file's choice
    (PARTIAL, PARTIAL.replace("        self.a = ConvNorm(3, c, norm_layer=norm_layer)\n", "").replace(
        "        self.b = ConvNorm(c, c, norm_layer=partial(nn.BatchNorm2d, eps=1e-3))\n", "")),
    # a construction leaves the parameter out (its `None`)
    (PARTIAL, PARTIAL.replace("ConvNorm(c, c, norm_layer=partial(nn.BatchNorm2d, eps=1e-3))", "ConvNorm(c, c)")),
    # the factory's caller passes nothing evident: the class-valued parameter is stored, then called elsewhere
    (RESNET, RESNET.replace("        self.inplanes = 4\n", "        self.inplanes = 4\n        self.block = block\n")),
    # a block from the factory and one from a caller passing `nn.Identity` straight to the block
    (RESNET, RESNET + "\n\ndef plain():\n    return BasicBlock(4, 4, norm_layer=nn.Identity)\n"),
    # `_make_layer` is called with a norm the method leaves as `None`
    (RESNET, RESNET.replace(", stride=2, norm_layer=norm_layer)", ", stride=2)")),
])
def test_near_forms_stay_silent(site: str, near: str) -> None:
    block_end = _line(site, "class ", _line(site, "class "))  # the sites of the first class: the block
    assert [s for s in _sites(site) if s[2] < block_end]
    assert [s for s in _sites(near) if s[2] < block_end] == []
