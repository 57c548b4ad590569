"""An `nn.Sequential` subclass whose own forward runs its children in turn (`for mod in self: x = mod(x)`,
torchvision 0.20 `segmentation/deeplabv3.py` `ASPPPooling`, between a size read and an interpolation) is read
as the chain its `__init__` hands to the Sequential, as one without a forward is
(`chains.sequential_classes.runs_children_in_turn`); the site is placed at the loop's statement, where the
layers run, and has no automatic fix: building the class on `FoldedConvBnSequential` would not change its
own forward. Counter-examples: a forward that does anything else with the children is not read."""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules
from adopter.engine.types import Finding

HEADER = "import torch\nfrom torch import nn\nfrom torch.nn import functional as F\n\n\n"

ASPP_POOLING = '''
class ASPPPooling(nn.Sequential):
    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__(
            nn.AdaptiveAvgPool2d(1),
            nn.Conv2d(in_channels, out_channels, 1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        size = x.shape[-2:]
        for mod in self:
            x = mod(x)
        return F.interpolate(x, size=size, mode="bilinear", align_corners=False)


class Plain(nn.Sequential):
    def __init__(self, c):
        super().__init__(nn.Conv2d(c, c, 3, bias=False), nn.BatchNorm2d(c), nn.ReLU())
'''


def line(code: str, needle: str) -> int:
    return next(i for i, text in enumerate((HEADER + code).splitlines()) if needle in text)


def conv_bn(code: str) -> list[Finding]:
    env = Environment("cpu", frozenset(), "2.13.0")
    return [f for f in check(analyse(HEADER + code, "m.py"), load_rules().rules, env).findings if f.family == 7]


def test_a_forward_that_runs_the_children_in_turn_is_the_chain() -> None:
    found = {f.scope_name: f for f in conv_bn(ASPP_POOLING)}
    pooling = found["ASPPPooling"]
    assert pooling.span.start_line == line(ASPP_POOLING, "x = mod(x)")
    assert {line(ASPP_POOLING, "nn.Conv2d(in_channels"), line(ASPP_POOLING, "nn.BatchNorm2d(out_channels)")} <= {
        s.start_line for s in pooling.init_spans}
    assert not pooling.fixable and "own forward" in (pooling.no_fix_reason or "")
    assert found["Plain"].fixable  # without a forward of its own: FoldedConvBnSequential folds it


@pytest.mark.parametrize(("old", "new"), [
    ("            x = mod(x)\n", "            x = mod(x) + x\n"),  # a residual around each child
    ("            x = mod(x)\n", "            y = mod(x)\n        x = y\n"),  # not chained
    ("            x = mod(x)\n", "            x = mod(x)\n            x = x * 2\n"),  # more in the loop
    ("        for mod in self:\n            x = mod(x)\n", "        x = self[1](self[0](x))\n"),  # by index
    ("        for mod in self:\n", "        for mod in self.children():\n"),  # not read as the children here
])
def test_a_forward_that_does_anything_else_is_not_read(old: str, new: str) -> None:
    code = ASPP_POOLING.replace(old, new)
    assert "ASPPPooling" not in {f.scope_name for f in conv_bn(code)}
