"""Literal indexes of a Sequential built from a list whose first items are at evident positions (MobileNetV2
copies, facexlib `matting/mobilenetv2.py`: `self.features = [conv_bn(3, 32, 2)]`, appends in loops over a
literal settings table, a last `conv_1x1_bn`, `self.features = nn.Sequential(*self.features)`, forward
`x = self.features[0](x)` ... `self.features[18](x)`): the flow keeps `self.features[0]` and the last
index (`Ctor.lead`, the loops counted by `scope.list_counts`), so the conv-BN chain of each helper's
Sequential runs at that call and the helper's site lists it among its statements. Any other index, or a
list whose items there are not evident, stays each item (`[*]`)."""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.dsl.types import Ctor, Op
from adopter.engine import Environment, check, load_rules

MOBILENET = '''from torch import nn


def conv_bn(inp, oup, stride):
    return nn.Sequential(nn.Conv2d(inp, oup, 3, stride, 1, bias=False), nn.BatchNorm2d(oup), nn.ReLU6(inplace=True))


def conv_1x1_bn(inp, oup):
    return nn.Sequential(nn.Conv2d(inp, oup, 1, 1, 0, bias=False), nn.BatchNorm2d(oup), nn.ReLU6(inplace=True))


class InvertedResidual(nn.Module):
    def __init__(self, inp, oup, stride, expansion):
        super().__init__()
        self.fc = nn.Linear(inp, oup)

    def forward(self, x):
        return self.fc(x)


class MobileNetV2(nn.Module):
    def __init__(self, in_channels, expansion=6):
        super().__init__()
        input_channel = 32
        settings = [
            [1, 16, 1, 1],
            [expansion, 24, 2, 2],
        ]
        self.features = [conv_bn(in_channels, input_channel, 2)]
        for t, c, n, s in settings:
            for i in range(n):
                if i == 0:
                    self.features.append(InvertedResidual(input_channel, c, s, expansion=t))
                else:
                    self.features.append(InvertedResidual(input_channel, c, 1, expansion=t))
                input_channel = c
        self.features.append(conv_1x1_bn(input_channel, 1280))
        self.features = nn.Sequential(*self.features)

    def forward(self, x):
        x = self.features[0](x)  # first
        x = self.features[1](x)
        x = self.features[3](x)
        return self.features[4](x)  # last
'''

ENV = Environment("cpu", frozenset(), "2.13.0")


def line(code: str, needle: str) -> int:
    return next(i for i, text in enumerate(code.splitlines()) if needle in text)


def helper_statements(code: str, helper: str = "conv_bn") -> list[int]:
    """The lines of the statements of the conv-BN site in `helper` (the file's sites are the helpers')."""
    found = check(analyse(code, "m.py"), load_rules().rules, ENV).findings
    assert [(f.rule_id, f.scope_name) for f in found] == [("f07-conv-bn", "conv_bn"), ("f07-conv-bn", "conv_1x1_bn")]
    return sorted({s.start_line for f in found if f.scope_name == helper for s in f.stmt_spans})


def helper_line(code: str, helper: str = "conv_bn") -> int:
    return line(code, f"def {helper}(") + 1


def test_the_first_item_runs_at_its_index() -> None:
    assert helper_statements(MOBILENET) == [helper_line(MOBILENET), line(MOBILENET, "# first")]


def test_the_item_after_the_counted_loops_runs_at_its_index() -> None:
    assert helper_statements(MOBILENET, "conv_1x1_bn") == [helper_line(MOBILENET, "conv_1x1_bn"),
                                                             line(MOBILENET, "# last")]


def test_a_local_list_too() -> None:
    code = (MOBILENET.replace("self.features = [conv_bn", "features = [conv_bn")
            .replace("self.features.append(", "features.append(")
            .replace("nn.Sequential(*self.features)", "nn.Sequential(*features)"))
    assert "features = [conv_bn" in code and "nn.Sequential(*features)" in code
    assert helper_statements(code) == [helper_line(code), line(code, "# first")]
    assert helper_statements(code, "conv_1x1_bn") == [helper_line(code, "conv_1x1_bn"), line(code, "# last")]


def test_the_forward_reads_the_item_and_leaves_the_others_each_item() -> None:
    mf = analyse(MOBILENET, "m.py")
    arch = next(a for a in mf.architectures if a.name == "MobileNetV2")
    assert arch.init is not None and arch.forward is not None
    features = next(b.value for b in arch.init.bindings if b.attr == "features")
    assert isinstance(features, Ctor)
    assert [c and c.callee for c in features.lead] == ["torch.nn.Sequential", None, None, None, "torch.nn.Sequential"]
    targets = [s.target for s in arch.forward.body if isinstance(s, Op)]
    assert targets == ["self.features[0][0]", "self.features[0][1]", "self.features[0][2]",
                       "self.features[*]", "self.features[*]",
                       "self.features[4][0]", "self.features[4][1]", "self.features[4][2]"]


@pytest.mark.parametrize(("old", "new"), [
    # an index past the evident positions (a loop's item), though the loop adds the helper's Sequential too
    ("x = self.features[0](x)  # first",
     "x = self.features[1](x)  # first"),
    # a computed index
    ("x = self.features[0](x)  # first",
     "x = self.features[len(self.features) - 3](x)  # first"),
    # the list's first item goes first under a condition
    ("        self.features = [conv_bn(in_channels, input_channel, 2)]\n",
     "        self.features = []\n        if expansion > 1:\n            self.features.append(nn.Identity())\n"
     "        self.features.append(conv_bn(in_channels, input_channel, 2))\n"),
    # an item put in front
    ("        self.features = nn.Sequential(*self.features)\n",
     "        self.features.insert(0, nn.Identity())\n        self.features = nn.Sequential(*self.features)\n"),
    # an item replaced
    ("        self.features = nn.Sequential(*self.features)\n",
     "        self.features[0] = nn.Identity()\n        self.features = nn.Sequential(*self.features)\n"),
    # the list handed to code that may change it
    ("        self.features = nn.Sequential(*self.features)\n",
     "        reorder(self.features)\n        self.features = nn.Sequential(*self.features)\n"),
    # an item added where no statement reads it (a comprehension) goes first
    ("        self.features = [conv_bn(in_channels, input_channel, 2)]\n",
     "        self.features = []\n        [self.features.append(nn.Identity()) for _ in range(1)]\n"
     "        self.features.append(conv_bn(in_channels, input_channel, 2))\n"),
    # items of unknown number go first
    ("        self.features = [conv_bn(in_channels, input_channel, 2)]\n",
     "        self.features = []\n        self.features += stem_layers()\n"
     "        self.features.append(conv_bn(in_channels, input_channel, 2))\n"),
    # the first item added in a loop
    ("        self.features = [conv_bn(in_channels, input_channel, 2)]\n",
     "        self.features = []\n        for _ in range(1):\n"
     "            self.features.append(conv_bn(in_channels, input_channel, 2))\n"),
])
def test_no_item_at_an_index(old: str, new: str) -> None:
    code = MOBILENET.replace(old, new).replace(
        "self.features.append(InvertedResidual(input_channel, c, 1, expansion=t))",
        "self.features.append(conv_bn(input_channel, c, 1))")
    assert new in code
    assert helper_statements(code) == [helper_line(code)]


@pytest.mark.parametrize(("old", "new"), [
    # an index past the list's evident positions
    ("return self.features[4](x)  # last", "return self.features[5](x)  # last"),
    # a count that is not a literal
    ("[expansion, 24, 2, 2],", "[expansion, 24, depth, 2],"),
    ("for i in range(n):", "for i in range(n * expansion):"),
    # a loop left early
    ("                input_channel = c\n", "                input_channel = c\n                if c > 16:\n"
                                          "                    break\n"),
    # a path that adds nothing
    ("                else:\n                    self.features.append(InvertedResidual(input_channel, c, 1, "
     "expansion=t))\n", ""),
    # a table changed before the loop
    ("        self.features = [conv_bn(", "        settings.append([6, 32, 3, 2])\n        self.features = [conv_bn("),
    # a table bound twice
    ("        self.features = [conv_bn(", "        if expansion > 6:\n            settings = settings[:1]\n"
                                        "        self.features = [conv_bn("),
])
def test_no_item_after_the_loops(old: str, new: str) -> None:
    code = MOBILENET.replace(old, new)
    assert code != MOBILENET
    assert helper_statements(code, "conv_1x1_bn") == [helper_line(code, "conv_1x1_bn")]
    assert helper_statements(code) == [helper_line(code), line(code, "# first")]
