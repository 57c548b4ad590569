"""The unannotated `block` of ResNet copies (facexlib `hyperiqa_net.py`, torchvision before 0.13 and the
research code copied from it): `def _make_layer(self, block, planes, blocks, stride=1)` called from
`__init__(self, block, layers)`, the class built by a factory (`ResNet(Bottleneck, [3, 4, 6, 3])`, through
`_resnet('resnet50', Bottleneck, ...)`) or a subclass (`super().__init__(Bottleneck, ...)`). The classes
`block` may be are read from what the file passes (`adopter.analysis.chains.class_callers`); the chain's
finding then lists the block's `identity = self.downsample(x)` as in `test_passed_to_blocks`. Any caller
passing something not evident leaves the chain's own statements only."""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.analysis.analyser import Analyser
from adopter.analysis.parse.source import new_parser
from adopter.engine import Environment, check, load_rules
from adopter.session import RuleContext, UnitMatcher

from .test_passed_to_blocks import BLOCKS, line

RESNET = BLOCKS + '''

class ResNet(nn.Module):
    def __init__(self, block, layers, num_classes=1000):
        super().__init__()
        self.inplanes = 64
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], stride=2)
        self.fc = nn.Linear(512 * block.expansion, num_classes)

    def _make_layer(self, block, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes * block.expansion, kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(planes * block.expansion),
            )
        layers = []
        layers.append(block(self.inplanes, planes, stride, downsample))
        self.inplanes = planes * block.expansion
        for i in range(1, blocks):
            layers.append(block(self.inplanes, planes))
        return nn.Sequential(*layers)

    def forward(self, x):
        return self.fc(self.layer2(self.layer1(x)))
'''

FACTORY = RESNET + '''

def resnet50(pretrained=False, **kwargs):
    """Constructs a ResNet-50 model."""
    model = ResNet(Bottleneck, [3, 4, 6, 3], **kwargs)
    return model
'''

OLD_TORCHVISION = RESNET + '''

def _resnet(arch, block, layers, pretrained, progress, **kwargs) -> ResNet:
    model = ResNet(block, layers, **kwargs)
    return model


def resnet18(pretrained=False, progress=True, **kwargs):
    return _resnet('resnet18', BasicBlock, [2, 2, 2, 2], pretrained, progress, **kwargs)


def resnet50(pretrained=False, progress=True, **kwargs):
    return _resnet('resnet50', Bottleneck, [3, 4, 6, 3], pretrained, progress, **kwargs)
'''

SUBCLASS = RESNET + '''

class ResNet50(ResNet):
    def __init__(self, num_classes=10):
        super(ResNet50, self).__init__(Bottleneck, [3, 4, 6, 3], num_classes=num_classes)
'''

ENV = Environment("cpu", frozenset(), "2.13.0")
SCOPE = "ResNet._make_layer"


def statements(code: str) -> list[tuple[str, list[int]]]:
    found = check(analyse(code, "m.py"), load_rules().rules, ENV).findings
    return [(f.scope_name, sorted({s.start_line for s in f.stmt_spans})) for f in found if f.scope_name == SCOPE]


def chain_lines(code: str) -> list[int]:
    return [line(code, "nn.Conv2d(self.inplanes, planes * block.expansion, kernel_size=1"),
            line(code, "nn.BatchNorm2d(planes * block.expansion),")]


def expect(code: str, *runs: str) -> list[tuple[str, list[int]]]:
    return [(SCOPE, sorted([line(code, r) for r in runs] + chain_lines(code)))]


@pytest.mark.parametrize(("code", "runs"), [
    (FACTORY, ["# bottleneck"]),  # facexlib hyperiqa_net: a module-level factory
    (OLD_TORCHVISION, ["# basic", "# bottleneck"]),  # through `_resnet`'s parameter
    (SUBCLASS, ["# bottleneck"]),  # a subclass's super().__init__
    # the default of __init__'s parameter, the class built in no call of the file
    (RESNET.replace("def __init__(self, block, layers,", "def __init__(self, block=BasicBlock, layers=(2, 2),"),
     ["# basic"]),
    # a call that leaves the parameter to its default
    (RESNET.replace("def __init__(self, block, layers,", "def __init__(self, layers, block=BasicBlock,")
     + "\n\nnet = ResNet([2, 2])\n", ["# basic"]),
    # the class's name written in `__init__`'s calls of the method
    (RESNET.replace("self._make_layer(block, ", "self._make_layer(Bottleneck, "), ["# bottleneck"]),
])
def test_the_classes_the_file_passes(code: str, runs: list[str]) -> None:
    assert statements(code) == expect(code, *runs)


@pytest.mark.parametrize(("code", "old", "new"), [
    # a caller passes a local: what it holds is not read
    (FACTORY, "model = ResNet(Bottleneck,", "block = Bottleneck\n    model = ResNet(block,"),
    # a caller passes something that is not a class's name
    (FACTORY, "model = ResNet(Bottleneck,", "model = ResNet('bottleneck',"),
    # one caller known, another not: nothing
    (FACTORY, "    return model\n", "    return model\n\n\ndef custom(b):\n    return [ResNet(b, [2, 2])]\n"),
    # the factory's own caller passes its parameter on from a method
    (OLD_TORCHVISION, "def resnet18(pretrained=False, progress=True, **kwargs):",
     "class Zoo:\n    def make(self, block):\n        return _resnet('x', block, [1], False, True)\n\n\n"
     "def resnet18(pretrained=False, progress=True, **kwargs):"),
    # the class used otherwise than called (partial, a registry)
    (FACTORY, "    return model\n", "    return model\n\n\nREGISTRY = {'resnet': ResNet}\n"),
    # the parameter after a splat: its position is not evident
    (FACTORY, "model = ResNet(Bottleneck, [3, 4, 6, 3], **kwargs)", "model = ResNet(*(Bottleneck, [3, 4, 6, 3]))"),
    # __init__ rebinds the parameter (facexlib hopenet: `if block == 'resnet': block = ...`)
    (FACTORY, "        self.inplanes = 64\n", "        if block == 'resnet':\n            block = Bottleneck\n"
     "        self.inplanes = 64\n"),
    # a subclass calls the method itself
    (SUBCLASS, "num_classes=num_classes)\n", "num_classes=num_classes)\n        self.extra = self._make_layer(BasicBlock, 64, 1)\n"),
    # no call in the file and no default: nothing is known
    (RESNET, "", ""),
])
def test_nothing_added_when_a_caller_is_not_evident(code: str, old: str, new: str) -> None:
    changed = code.replace(old, new) if old else code
    assert new in changed
    assert statements(changed) == [(SCOPE, chain_lines(changed))]


def test_the_language_server_reports_the_same_statements() -> None:
    rules = load_rules().rules
    mf = analyse(OLD_TORCHVISION, "m.py")
    expected = [(f.scope_name, f.stmt_spans) for f in check(mf, rules, ENV).findings]
    matcher, context = UnitMatcher(), RuleContext(tuple(rules), environment=ENV)
    found, _ = matcher.match(mf, context)
    assert [(f.scope_name, f.stmt_spans) for f in found] == expected
    assert line(OLD_TORCHVISION, "# bottleneck") in {s.start_line for f in found for s in f.stmt_spans}


def test_a_document_keeps_the_chain_while_its_callers_do_not_change() -> None:
    analyser, parser = Analyser(), new_parser()
    data = FACTORY.encode()
    first = analyser.run(data, parser.parse(data), "m.py")
    again = analyser.run(data, parser.parse(data), "m.py")
    chain = next(c for c in first.chains if c.passed_to)
    assert chain.passed_to[0].classes == ("Bottleneck",)
    assert chain in again.chains and any(c is chain for c in again.chains)
    edited = FACTORY.replace("model = ResNet(Bottleneck,", "model = ResNet(BasicBlock,").encode()
    other = next(c for c in analyser.run(edited, parser.parse(edited), "m.py").chains if c.passed_to)
    assert other.passed_to[0].classes == ("BasicBlock",)
