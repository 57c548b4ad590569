"""Conv -> BN (family 7) and Linear -> BN (family 8) where one layer of the pair sits in a same-file wrapper
module whose forward only chains its own layers (issue 20, mech34): `self.norm = Norm(c)` with
`Norm.forward` `return self.bn(x)` (facexlib 0.3.0 `parsing/parsenet.py` `ConvLayer` -> `NormLayer`), or
`self.conv = Conv(...)` with `return self.conv(x)`, followed in the caller by the other layer.

The site is the caller's (its forward runs the conv into the norm), at the conv's call. When the wrapper's
call runs that layer and nothing else, the fold names the layer (`folded_conv_bn(x, self.conv, self.norm.bn)`);
a wrapper that runs more (BN then ReLU) is reported without a fix, with the reason. A pair both of whose
layers sit in submodules (two wrappers called one after the other) is no site of the caller, and the
wrapper's own pairs stay its own."""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules
from adopter.engine.types import Finding

HEADER = "import torch\nfrom torch import nn\nfrom torch.nn import functional as F\n\n\n"

NORM = '''
class Norm(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels)

    def forward(self, x):
        return self.bn(x)


class ConvLayer(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv2d = nn.Conv2d(c_in, c_out, 3, padding=1, bias=False)
        self.norm = Norm(c_out)

    def forward(self, x):
        out = self.conv2d(x)
        out = self.norm(out)
        return F.relu(out)
'''

CONV = '''
class Conv(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, 3, padding=1)

    def forward(self, x):
        x = self.conv(x)
        return x


class Block(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.proj = Conv(c_in, c_out)
        self.bn = nn.BatchNorm2d(c_out)

    def forward(self, x):
        return self.bn(self.proj(x))
'''

NORM_ACT = NORM.replace(
    "        self.bn = nn.BatchNorm2d(channels)\n",
    "        self.bn = nn.BatchNorm2d(channels)\n        self.act = nn.ReLU()\n").replace(
    "        return self.bn(x)\n", "        x = self.bn(x)\n        return self.act(x)\n")

LINEAR = '''
class Norm1d(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.norm = nn.BatchNorm1d(features)

    def forward(self, x):
        return self.norm(x)


class Head(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.fc = nn.Linear(d_in, d_out)
        self.bn = Norm1d(d_out)

    def forward(self, x):
        return self.bn(self.fc(x))
'''


def line(code: str, needle: str) -> int:
    return next(i for i, text in enumerate((HEADER + code).splitlines()) if needle in text)


def pairs(code: str, family: int = 7) -> list[Finding]:
    env = Environment("cpu", frozenset(), "2.13.0")
    return [f for f in check(analyse(HEADER + code, "m.py"), load_rules().rules, env).findings if f.family == family]


def test_a_norm_wrapper_after_the_conv_is_the_callers_site_and_fixable() -> None:
    [found] = pairs(NORM)
    assert found.scope_name == "ConvLayer"
    assert found.span.start_line == line(NORM, "out = self.conv2d(x)")
    assert {line(NORM, "nn.Conv2d(c_in"), line(NORM, "nn.BatchNorm2d(channels)")} <= {
        s.start_line for s in found.init_spans}
    assert found.fixable, found.no_fix_reason


def test_a_conv_wrapper_before_the_norm_is_the_callers_site_and_fixable() -> None:
    [found] = pairs(CONV)
    assert found.scope_name == "Block"
    assert found.span.start_line == line(CONV, "return self.bn(self.proj(x))")
    assert found.fixable, found.no_fix_reason


def test_a_wrapper_that_runs_more_than_the_layer_is_a_site_without_a_fix() -> None:
    [found] = pairs(NORM_ACT)
    assert found.scope_name == "ConvLayer"
    assert not found.fixable
    assert "inside the submodule `self.norm`" in (found.no_fix_reason or "")


def test_a_linear_into_a_batchnorm1d_wrapper_is_a_family_8_site() -> None:
    [found] = pairs(LINEAR, family=8)
    assert found.scope_name == "Head"
    assert found.fixable, found.no_fix_reason


@pytest.mark.parametrize(("old", "new"), [
    # Not a BatchNorm inside the wrapper.
    ("self.bn = nn.BatchNorm2d(channels)", "self.bn = nn.GroupNorm(8, channels)"),
    # The wrapper's forward does more than chain its layers: what the call computes is not the BN's output.
    ("        return self.bn(x)\n", "        return self.bn(x) * 2.0\n"),
    # An activation runs before the BatchNorm inside the wrapper.
    ("        return self.bn(x)\n", "        return self.bn(F.relu(x))\n"),
    # The wrapper normalises the block's input, not the conv's output.
    ("        out = self.norm(out)\n", "        out = out + self.norm(x)\n"),
    # The wrapper's layer is bound on two paths: which one runs is not known here.
    ("        self.bn = nn.BatchNorm2d(channels)\n",
     "        if channels > 8:\n            self.bn = nn.BatchNorm2d(channels)\n"
     "        else:\n            self.bn = nn.GroupNorm(1, channels)\n"),
])
def test_a_wrapper_that_is_not_a_batchnorm_stays_silent(old: str, new: str) -> None:
    code = NORM.replace(old, new)
    assert code != NORM
    assert pairs(NORM) and not [f for f in pairs(code) if f.scope_name == "ConvLayer"]


def test_two_wrappers_called_in_turn_are_no_site_of_the_caller() -> None:
    # Each layer sits in its own submodule: the caller writes neither (a pair split across two modules).
    code = CONV + NORM.replace("class ConvLayer", "class Other").replace(
        "self.conv2d = nn.Conv2d(c_in, c_out, 3, padding=1, bias=False)", "self.conv2d = Conv(c_in, c_out)")
    assert [f.scope_name for f in pairs(code)] == ["Block"]


def test_a_pair_inside_the_wrapper_stays_the_wrappers_own() -> None:
    # The wrapper runs conv -> BN itself; its caller's conv feeds the wrapper's conv, not a norm.
    assert [f.scope_name for f in pairs(NORM)] == ["ConvLayer"]
    code = NORM.replace("        self.bn = nn.BatchNorm2d(channels)\n",
                        "        self.conv = nn.Conv2d(channels, channels, 1)\n"
                        "        self.bn = nn.BatchNorm2d(channels)\n").replace(
        "        return self.bn(x)\n", "        return self.bn(self.conv(x))\n")
    assert [f.scope_name for f in pairs(code)] == ["Norm"]


ITEMS = '''
class SeparableConv(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.depthwise = nn.Conv2d(c_in, c_in, 3, padding=1, groups=c_in, bias=False)
        self.pointwise = nn.Conv2d(c_in, c_out, 1, bias=False)

    def forward(self, x):
        return self.pointwise(self.depthwise(x))


class Norm(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels)

    def forward(self, x):
        return self.bn(x)


class Branch(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.body = nn.Sequential(nn.ReLU(), SeparableConv(c_in, c_out), nn.BatchNorm2d(c_out))

    def forward(self, x):
        return self.body(x)
'''


def test_a_wrapper_item_of_a_sequential_before_its_norm_is_a_site_without_a_fix() -> None:
    # The Sequential's forward runs the separable conv's pointwise conv into the BN item; the in-place fold
    # (`FoldedConvBnSequential`) folds stock children only, so no fix is offered.
    [found] = pairs(ITEMS)
    assert found.scope_name == "Branch"
    assert {line(ITEMS, "nn.Sequential(nn.ReLU(), SeparableConv"), line(ITEMS, "self.pointwise = nn.Conv2d")} <= {
        s.start_line for s in found.init_spans}
    assert not found.fixable
    assert "inside the submodule `self.body[1]`" in (found.no_fix_reason or "")


def test_two_wrapper_items_in_turn_are_no_site_of_the_caller() -> None:
    code = ITEMS.replace("nn.Sequential(nn.ReLU(), SeparableConv(c_in, c_out), nn.BatchNorm2d(c_out))",
                         "nn.Sequential(nn.ReLU(), SeparableConv(c_in, c_out), Norm(c_out))")
    assert pairs(ITEMS) and not pairs(code)
