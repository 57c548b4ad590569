"""A Sequential a method builds in a local and hands to a same-file block class that holds and calls it
(torchvision 0.28 `resnet.py`: `downsample = nn.Sequential(conv1x1(...), norm_layer(...))` in
`ResNet._make_layer`, passed to `block(self.inplanes, planes, stride, downsample, ...)` with
`block: type[Union[BasicBlock, Bottleneck]]`, run at `identity = self.downsample(x)`): the chain keeps its
site in the method and lists the block's call among its statements (`engine.passed_in.chain_statements`),
through `check` and through the language server's unit matching alike."""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules
from adopter.session import RuleContext, UnitMatcher

BLOCKS = '''from typing import Optional, Union

from torch import nn


def conv1x1(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample: Optional[nn.Module] = None, norm_layer=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.relu(self.conv1(x))
        if self.downsample is not None:
            identity = self.downsample(x)  # basic
        return out + identity


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None, norm_layer=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes * 4, 1, stride, bias=False)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.relu(self.conv1(x))
        if self.downsample is not None:
            identity = self.downsample(x)  # bottleneck
        return out + identity
'''

ANNOTATED = BLOCKS + '''

class ResNet(nn.Module):
    def __init__(self, block: type[Union[BasicBlock, Bottleneck]], layers, norm_layer=None):
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        self._norm_layer = norm_layer
        self.inplanes = 64
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], stride=2)

    def _make_layer(self, block: type[Union[BasicBlock, Bottleneck]], planes, blocks, stride=1):
        norm_layer = self._norm_layer
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                conv1x1(self.inplanes, planes * block.expansion, stride),
                norm_layer(planes * block.expansion),
            )
        layers = []
        layers.append(block(self.inplanes, planes, stride, downsample, norm_layer))
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes, norm_layer=norm_layer))
        return nn.Sequential(*layers)

    def forward(self, x):
        return self.layer2(self.layer1(x))
'''

ENV = Environment("cpu", frozenset(), "2.13.0")


def line(code: str, needle: str) -> int:
    return next(i for i, text in enumerate(code.splitlines()) if needle in text)


def statements(code: str) -> list[tuple[str, list[int]]]:
    found = check(analyse(code, "m.py"), load_rules().rules, ENV).findings
    return [(f.scope_name, sorted({s.start_line for s in f.stmt_spans})) for f in found if f.scope_name == "ResNet._make_layer"]


def chain_lines(code: str) -> list[int]:
    return [line(code, "conv1x1(self.inplanes, planes * block.expansion, stride),"),
            line(code, "norm_layer(planes * block.expansion),")]


def test_the_blocks_calls_are_statements_of_the_methods_site() -> None:
    runs = [line(ANNOTATED, "# basic"), line(ANNOTATED, "# bottleneck")]
    assert statements(ANNOTATED) == [("ResNet._make_layer", sorted(runs + chain_lines(ANNOTATED)))]


def test_the_language_server_reports_the_same_statements() -> None:
    rules = load_rules().rules
    mf = analyse(ANNOTATED, "m.py")
    expected = [(f.scope_name, f.stmt_spans) for f in check(mf, rules, ENV).findings]
    matcher, context = UnitMatcher(), RuleContext(tuple(rules), environment=ENV)
    found, _ = matcher.match(mf, context)
    again, _ = matcher.match(mf, context)
    assert [(f.scope_name, f.stmt_spans) for f in found] == expected
    assert [(f.scope_name, f.stmt_spans) for f in again] == expected
    assert all(a is b for a, b in zip(found, again, strict=True))
    assert line(ANNOTATED, "# bottleneck") in {s.start_line for f in found for s in f.stmt_spans}


@pytest.mark.parametrize(("old", "new", "runs"), [
    # a default naming the class, passed by keyword
    ("block: type[Union[BasicBlock, Bottleneck]], planes", "block=Bottleneck, planes",
     ["# bottleneck"]),
    # the class called by its own name
    ("layers.append(block(self.inplanes, planes, stride, downsample, norm_layer))",
     "layers.append(Bottleneck(self.inplanes, planes, stride, downsample=downsample))", ["# bottleneck"]),
])
def test_other_spellings_of_the_block(old: str, new: str, runs: list[str]) -> None:
    code = ANNOTATED.replace(old, new)
    assert new in code
    expected = sorted([line(code, r) for r in runs] + chain_lines(code))
    assert statements(code) == [("ResNet._make_layer", expected)]


@pytest.mark.parametrize(("old", "new"), [
    # the block class is not evident (no annotation, no default)
    ("block: type[Union[BasicBlock, Bottleneck]], planes", "block, planes"),
    # the local holds another module too
    ("        layers = []\n", "        layers = []\n        downsample = downsample or nn.Identity()\n"),
    # passed in a position that is not the held parameter's
    ("block(self.inplanes, planes, stride, downsample, norm_layer)",
     "block(self.inplanes, planes, downsample, stride, norm_layer)"),
    # passed after a splat: its position is not evident
    ("block(self.inplanes, planes, stride, downsample, norm_layer)", "block(*(self.inplanes, planes), downsample)"),
])
def test_no_statements_added(old: str, new: str) -> None:
    code = ANNOTATED.replace(old, new)
    assert new in code
    assert statements(code) == [("ResNet._make_layer", chain_lines(code))]


def test_a_block_that_stores_it_under_a_condition_adds_nothing() -> None:
    code = ANNOTATED.replace("        self.downsample = downsample\n",
                             "        self.downsample = downsample if stride != 1 else None\n")
    assert statements(code) == [("ResNet._make_layer", chain_lines(code))]
