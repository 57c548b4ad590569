"""A loop over a literal list of submodules is read as written out (issue 20, mech35).

OpenAI CLIP's `ModifiedResNet` stem, copied into cn-clip 1.6.0 (`cn_clip/clip/model.py:156`) and mmpretrain's
Chinese CLIP: `for conv, bn in [(self.conv1, self.bn1), (self.conv2, self.bn2), (self.conv3, self.bn3)]: x =
self.relu(bn(conv(x)))`, in a closure the forward calls. The flow runs the body once per item with the loop's
variables bound to that item's submodules (`flow.control.ControlFlow._unrolled`): the conv -> BN pair is one site
at the loop's statement, reported without an automatic fix (one statement runs every item, so a rewrite naming
the first item's layers would be wrong: `flow.state.unrolled_reason`). Near forms stay as they were.
"""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules
from adopter.engine.types import Finding

HEADER = "import torch\nfrom torch import nn\n\n\n"

STEM = '''
class ModifiedResNet(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width // 2, 3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width // 2)
        self.conv2 = nn.Conv2d(width // 2, width // 2, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width // 2)
        self.conv3 = nn.Conv2d(width // 2, width, 3, padding=1, bias=False)
        self.bn3 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.avgpool = nn.AvgPool2d(2)

    def forward(self, x):
        def stem(x):
            for conv, bn in [(self.conv1, self.bn1), (self.conv2, self.bn2), (self.conv3, self.bn3)]:
                x = self.relu(bn(conv(x)))
            x = self.avgpool(x)
            return x

        x = x.type(self.conv1.weight.dtype)
        return stem(x)
'''

LOOP = "for conv, bn in [(self.conv1, self.bn1), (self.conv2, self.bn2), (self.conv3, self.bn3)]:"


def conv_bn(code: str) -> list[Finding]:
    env = Environment("cpu", frozenset(), "2.13.0")
    return [f for f in check(analyse(HEADER + code, "m.py"), load_rules().rules, env).findings if f.family == 7]


def line(code: str, needle: str) -> int:
    return next(i for i, text in enumerate((HEADER + code).splitlines()) if needle in text)


def test_a_loop_over_a_literal_list_of_pairs_is_one_site_without_a_fix() -> None:
    found = conv_bn(STEM)
    assert [f.span.start_line for f in found] == [line(STEM, "x = self.relu(bn(conv(x)))")]
    assert not found[0].fixable
    assert found[0].no_fix_reason is not None and "one statement runs each item" in found[0].no_fix_reason
    # One name per item works too; so does a tuple of pairs.
    single = STEM.replace(LOOP, "for conv in (self.conv1,):").replace("bn(conv(x))", "self.bn1(conv(x))")
    assert [f.span.start_line for f in conv_bn(single)] == [line(single, "x = self.relu(self.bn1(conv(x)))")]
    # Near forms, silent as before: a pair that is no conv -> BN, a body that leaves early, an `else`, an item
    # that is no submodule, a list the body changes nothing of.
    swapped = STEM.replace("bn(conv(x))", "conv(bn(x))")
    assert conv_bn(swapped) == []


@pytest.mark.parametrize("old, new", [
    ("x = self.relu(bn(conv(x)))", "x = self.relu(bn(conv(x)))\n                if x is None:\n                    break"),
    ("x = self.relu(bn(conv(x)))", "x = self.relu(bn(conv(x)))\n            else:\n                x = x + 1"),
    ("(self.conv3, self.bn3)]", "(self.conv3, self.relu), (x, self.bn3)]"),
    ("(self.conv3, self.bn3)]", "(self.conv3, self.bn3, self.relu)]"),
])
def test_loops_not_unrolled_find_nothing_and_the_stem_without_bn_neither(old: str, new: str) -> None:
    assert conv_bn(STEM.replace(old, new)) == []
    # The stem itself is found: this near form differs from it only by `old` -> `new`.
    assert len(conv_bn(STEM)) == 1
