"""Sequentials built in a module's methods but not bound to an attribute (`adopter.analysis.chains.methods`)."""

from __future__ import annotations

from adopter.dsl.types import Ctor
from adopter.engine import Environment, check, load_rules

from .helpers import HEADER, module

CODE = """
def conv1x1(i, o, stride=1):
    return nn.Conv2d(i, o, 1, stride, bias=False)


class ResNet(nn.Module):
    def __init__(self, block, layers, norm_layer=None):
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        self._norm_layer = norm_layer
        self.inplanes = 64
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), norm_layer(64))
        self.stages = nn.ModuleList()
        for c in layers:
            self.stages.append(nn.Sequential(nn.Conv2d(64, c, 3, 2, 1, bias=False), nn.BatchNorm2d(c), nn.ReLU()))
        self.layer1 = self._make_layer(block, 64, layers[0])

    def _make_layer(self, block, planes, blocks, stride=1):
        norm_layer = self._norm_layer
        downsample = nn.Sequential(
            conv1x1(self.inplanes, planes, stride),
            norm_layer(planes),
        )
        return nn.Sequential(*[block(self.inplanes, planes, stride, downsample) for _ in range(blocks)])

    def forward(self, x):
        x = self.stem(x)
        for stage in self.stages:
            x = stage(x)
        return self.layer1(x)
"""


def _line(needle: str) -> int:
    return next(i for i, line in enumerate((HEADER + CODE).splitlines()) if needle in line)


def test_unbound_sequentials_in_methods_are_chains() -> None:
    chains = module(CODE).chains
    assert [c.name for c in chains] == ["ResNet.__init__", "ResNet._make_layer"]
    callees = [[b.value.callee for b in c.init.bindings if isinstance(b.value, Ctor)] for c in chains if c.init]
    # `self._norm_layer` holds the class `__init__` chose; `conv1x1` is a same-file factory of a Conv2d.
    assert callees == [["torch.nn.Conv2d", "torch.nn.BatchNorm2d", "torch.nn.ReLU"],
                       ["torch.nn.Conv2d", "torch.nn.BatchNorm2d"]]


def test_each_site_is_reported_once_and_folded() -> None:
    env = Environment("cpu", frozenset(), "2.13.0")
    findings = [f for f in check(module(CODE), load_rules().rules, env).findings if f.family == 7]
    # The stem is bound to `self.stem`: the forward's call reports it (once), not a chain.
    assert sorted(f.span.start_line for f in findings) == sorted(
        [_line("self.stem(x)"), _line("nn.Conv2d(64, c, 3"), _line("conv1x1(self.inplanes")])
    assert all(f.fixable for f in findings)  # conv-BN pairs in a Sequential are folded in place (synth/strategies/conv_bn_sequential.py)
