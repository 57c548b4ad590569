"""An `nn.Sequential` subclass that hands its children over as a local list (`super().__init__(*layers)`:
torchvision 0.20 `segmentation/fcn.py` `FCNHead`, `ops/misc.py` `ConvNormActivation`) is read as the list's
items in the order its statements add them (`chains.list_items.splatted_children`); an `append` under
`if p is not None:` on a parameter whose default is a layer class is read on the default's path. And a Sequential
built from a local list written once (`layers = [conv, bn]; self.down = nn.Sequential(*layers)`) lists where
the items are written among the finding's lines. A module assigned to an attribute of a Sequential subclass
(`self.conv = nn.Conv2d(...)`, timm 1.0.12 `tiny_vit.ConvNorm`) is its next child. Counter-examples: additions whose place is not certain
(a loop, a test on a parameter defaulting to None or rebound, an `insert`, the list passed to a call)."""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules

HEADER = "import torch\nfrom torch import nn\n\n\n"

FCN_HEAD = '''
class FCNHead(nn.Sequential):
    def __init__(self, in_channels: int, channels: int) -> None:
        inter_channels = in_channels // 4
        layers = [
            nn.Conv2d(in_channels, inter_channels, 3, padding=1, bias=False),
            nn.BatchNorm2d(inter_channels),
            nn.ReLU(),
            nn.Dropout(0.1),
            nn.Conv2d(inter_channels, channels, 1),
        ]

        super().__init__(*layers)
'''

CONV_NORM_ACT = '''
class ConvNormActivation(torch.nn.Sequential):
    def __init__(self, c_in, c_out, kernel_size=3, norm_layer=torch.nn.BatchNorm2d,
                 activation_layer=torch.nn.ReLU, bias=None, conv_layer=torch.nn.Conv2d):
        if bias is None:
            bias = norm_layer is None
        layers = [conv_layer(c_in, c_out, kernel_size, padding=kernel_size // 2, bias=bias)]
        if norm_layer is not None:
            layers.append(norm_layer(c_out))
        if activation_layer is not None:
            layers.append(activation_layer(inplace=True))
        super().__init__(*layers)
        self.out_channels = c_out
'''

APPENDED = '''
class Block(nn.Sequential):
    def __init__(self, c):
        layers = []
        layers.append(nn.Conv2d(c, c, 3, bias=False))
        layers += [nn.BatchNorm2d(c), nn.ReLU()]
        nn.Sequential.__init__(self, *layers)
'''

WRITTEN_ONCE = '''
class Downsample(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        layers = [nn.Conv2d(c_in, c_out, 1, 2, bias=False), nn.BatchNorm2d(c_out)]
        self.down = nn.Sequential(*layers)

    def forward(self, x):
        return self.down(x)
'''

ATTRIBUTES = '''
class ConvNorm(torch.nn.Sequential):
    def __init__(self, in_chs, out_chs, ks=1, bn_weight_init=1):
        super().__init__()
        self.conv = nn.Conv2d(in_chs, out_chs, ks, bias=False)
        self.bn = nn.BatchNorm2d(out_chs)
        torch.nn.init.constant_(self.bn.weight, bn_weight_init)
        torch.nn.init.constant_(self.bn.bias, 0)
'''


def _findings(body: str) -> list[tuple[int, list[int], bool]]:
    """(site line, sorted finding lines, fixable) of each family-7 finding, lines 1-based in `body`."""
    text = HEADER + body
    offset = HEADER.count("\n")
    rules = [r for r in load_rules().rules if r.family == 7]
    out = []
    for f in check(analyse(text, "model.py"), rules, Environment("cpu", frozenset(), "2.13.0")).findings:
        spans = (f.span, *f.stmt_spans, *f.init_spans)
        lines = sorted({n + 1 - offset for s in spans for n in range(s.start_line, s.end_line + 1)})
        out.append((f.span.start_line + 1 - offset, lines, f.fixable))
    return out


def _line(body: str, needle: str) -> int:
    return next(i for i, line in enumerate(body.splitlines(), 1) if needle in line)


def test_a_list_handed_to_super_is_read_in_order() -> None:
    found = _findings(FCN_HEAD)
    assert [(site, fixable) for site, _, fixable in found] == [(_line(FCN_HEAD, "nn.Conv2d(in_channels"), True)]
    assert _line(FCN_HEAD, "nn.BatchNorm2d(inter") in found[0][1]


def test_an_append_under_a_test_on_a_value_default_is_read_as_taken() -> None:
    found = _findings(CONV_NORM_ACT)
    assert [(site, fixable) for site, _, fixable in found] == [(_line(CONV_NORM_ACT, "layers = [conv_layer"), True)]
    assert _line(CONV_NORM_ACT, "layers.append(norm_layer") in found[0][1]


def test_an_else_branch_the_default_does_not_take_keeps_the_chain() -> None:
    """With an `else`, the defaults still decide the test (chains/default_branches.py, mech49): the branch they take
    is read, as without one."""
    text = CONV_NORM_ACT.replace(
        "            layers.append(norm_layer(c_out))\n",
        "            layers.append(norm_layer(c_out))\n        else:\n            layers.append(nn.Identity())\n")
    found = _findings(text)
    assert [(site, fixable) for site, _, fixable in found] == [(_line(text, "layers = [conv_layer"), True)]
    assert _line(text, "layers.append(norm_layer") in found[0][1]


def test_append_and_plus_equals_before_sequential_init() -> None:
    found = _findings(APPENDED)
    assert [(site, fixable) for site, _, fixable in found] == [(_line(APPENDED, "nn.Conv2d"), True)]


def test_a_list_written_once_lists_where_its_items_are_written() -> None:
    found = _findings(WRITTEN_ONCE)
    assert len(found) == 1
    assert _line(WRITTEN_ONCE, "layers = [") in found[0][1]
    assert _line(WRITTEN_ONCE, "self.down = ") in found[0][1]


@pytest.mark.parametrize("before, after", [
    # a default of None: the test decides nothing on the default's path
    ("norm_layer=torch.nn.BatchNorm2d,", "norm_layer=None,"),
    # the parameter is rebound before the test
    ("        if bias is None:\n", "        norm_layer = make_norm()\n        if bias is None:\n"),
    # another test
    ("if norm_layer is not None:", "if use_norm(norm_layer):"),
    # something else is done with the list before it is handed over
    ("        super().__init__(*layers)", "        layers.insert(0, nn.Identity())\n        super().__init__(*layers)"),
    ("        super().__init__(*layers)", "        shuffle(layers)\n        super().__init__(*layers)"),
    # the norm is added in a loop
    ("        if norm_layer is not None:\n", "        for _ in range(2):\n"),
])
def test_additions_whose_place_is_not_certain_end_the_chain(before: str, after: str) -> None:
    assert before in CONV_NORM_ACT
    assert _findings(CONV_NORM_ACT.replace(before, after)) == []


def test_a_list_made_elsewhere_is_not_read() -> None:
    body = FCN_HEAD.replace("        layers = [", "        layers = make_layers() or [")
    assert _findings(body) == []


def test_modules_assigned_to_attributes_are_children_in_order() -> None:
    found = _findings(ATTRIBUTES)
    assert [(site, fixable) for site, _, fixable in found] == [(_line(ATTRIBUTES, "self.conv ="), True)]
    assert _line(ATTRIBUTES, "self.bn =") in found[0][1]
    # a constant is no child
    assert len(_findings(ATTRIBUTES.replace("        self.bn =", "        self.ks = 1\n        self.bn ="))) == 1


@pytest.mark.parametrize("before, after", [
    # a value that may be a module between them
    ("        self.bn =", "        self.act = make_act()\n        self.bn ="),
    ("        self.bn =", "        self.act = act\n        self.bn ="),
    # assigned under a test
    ("        self.bn =", "        if ks > 1:\n            self.pool = nn.AvgPool2d(2)\n        self.bn ="),
    # the attribute is assigned twice: it keeps its first place
    ("        self.bn = nn.BatchNorm2d(out_chs)\n",
     "        self.bn = nn.Identity()\n        self.conv2 = nn.Conv2d(out_chs, out_chs, 1)\n"
     "        self.bn = nn.BatchNorm2d(out_chs)\n"),
    # a class with a forward of its own runs what its forward says
    ("        torch.nn.init.constant_(self.bn.bias, 0)\n",
     "        torch.nn.init.constant_(self.bn.bias, 0)\n\n    def forward(self, x):\n        return self.conv(x)\n"),
])
def test_attribute_children_whose_place_is_not_certain_end_the_chain(before: str, after: str) -> None:
    assert before in ATTRIBUTES
    assert _findings(ATTRIBUTES.replace(before, after)) == []
