"""A conv (or Linear) whose raw output is read again beside its BatchNorm is no conv→BN (linear→BN) site
(`only_use($h)` in `rules/f07-conv-bn.adl`, `f08-linear-bn.adl`; `adopter.engine.matcher`): folding the
BatchNorm into the layer would change what the other reader sees, so there is no kernel to adopt (the dev2
labelling convention). Before, such a pair was reported without a fix.

The forms: the raw output concatenated with what the BatchNorm path computes (facexlib `awing_arch.ConvBlock`,
the oracle's two wrong findings), added back as a residual, returned beside the normalised value (f07, f08).
Each is asserted beside its site twin (the same code without the second reader). A second reader on the other
alternative of an `if`/`else` never runs with the BatchNorm, and one that reads only the raw output's size
(`h.shape`, `h.size(0)`, `len(h)`) sees nothing the fold changes: those pairs stay sites, without a fix (as
before; these near-form tests pass on the base too).
"""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, find, load_rules

ENV = Environment("cpu", frozenset(), "2.13.0")
RULES = [r for r in load_rules().rules if r.family in (7, 8)]

CAT = '''
import torch
import torch.nn.functional as F
from torch import nn


class ConvBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(c)
        self.conv1 = nn.Conv2d(c, c // 2, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c // 2)
        self.conv2 = nn.Conv2d(c // 2, c // 4, 3, padding=1, bias=False)
        self.bn3 = nn.BatchNorm2d(c // 4)
        self.conv3 = nn.Conv2d(c // 4, c // 4, 3, padding=1, bias=False)

    def forward(self, x):
        out1 = self.bn1(x)
        out1 = F.relu(out1, True)
        out1 = self.conv1(out1)

        out2 = self.bn2(out1)
        out2 = F.relu(out2, True)
        out2 = self.conv2(out2)

        out3 = self.bn3(out2)
        out3 = F.relu(out3, True)
        out3 = self.conv3(out3)

        return torch.cat((out1, out2, out3), 1)
'''
CAT_SITES = CAT.replace("torch.cat((out1, out2, out3), 1)", "out3")

RESIDUAL = '''
from torch import nn


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.proj = nn.Conv2d(c, c, 1, bias=False)
        self.bn = nn.BatchNorm2d(c)
        self.act = nn.ReLU()
        self.conv = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        shortcut = self.proj(x)
        out = self.act(self.bn(shortcut))
        out = self.conv(out)
        return out + shortcut
'''
RESIDUAL_SITE = RESIDUAL.replace("return out + shortcut", "return out")

RETURNED = '''
from torch import nn


class Head(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.fc = nn.Linear(d_in, d_out)
        self.bn = nn.BatchNorm1d(d_out)

    def forward(self, x):
        emb = self.fc(x)
        return emb, self.bn(emb)
'''
RETURNED_SITE = RETURNED.replace("return emb, self.bn(emb)", "return self.bn(emb)")

BRANCH = '''
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, c, use_bn=True):
        super().__init__()
        self.use_bn = use_bn
        self.conv = nn.Conv2d(c, c, 3, padding=1)
        self.bn = nn.BatchNorm2d(c)

    def forward(self, x):
        h = self.conv(x)
        if self.use_bn:
            out = self.bn(h)
        else:
            out = torch.cat((h, x), 1)
        return out
'''

SIZED = '''
from torch import nn


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)
        self.bn = nn.BatchNorm2d(c)

    def forward(self, x):
        h = self.conv(x)
        b = h.shape[0]
        return self.bn(h).view(b, -1)
'''


def _sites(source: str) -> list[tuple[str, bool, int]]:
    return sorted((f.rule_id, f.fixable, f.span.start_line + 1) for f in find(analyse(source, "model.py"), RULES, ENV))


def _line(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.split("\n"), 1) if text in line)


def test_concatenated_raw_outputs_are_no_sites() -> None:
    assert _sites(CAT_SITES) == [("f07-conv-bn", True, _line(CAT_SITES, "out1 = self.conv1(out1)")),
                                 ("f07-conv-bn", True, _line(CAT_SITES, "out2 = self.conv2(out2)"))]
    assert _sites(CAT) == []


def test_a_raw_output_added_back_as_a_residual_is_no_site() -> None:
    assert _sites(RESIDUAL_SITE) == [("f07-conv-bn", True, _line(RESIDUAL_SITE, "shortcut = self.proj(x)"))]
    assert _sites(RESIDUAL) == []


def test_a_linear_output_returned_beside_its_batchnorm_is_no_site() -> None:
    assert _sites(RETURNED_SITE) == [("f08-linear-bn", True, _line(RETURNED_SITE, "emb = self.fc(x)"))]
    assert _sites(RETURNED) == []


@pytest.mark.parametrize("reader", ["torch.cat((h, x), 1)", "h + x", "torch.relu(h)"])
def test_a_second_reader_on_the_other_branch_leaves_a_site_without_a_fix(reader: str) -> None:
    source = BRANCH.replace("torch.cat((h, x), 1)", reader)
    assert _sites(source) == [("f07-conv-bn", False, _line(source, "h = self.conv(x)"))]


@pytest.mark.parametrize("reader", ["h.shape[0]", "h.size(0)", "len(h)", "h.dim()"])
def test_a_reader_of_the_size_only_leaves_a_site_without_a_fix(reader: str) -> None:
    source = SIZED.replace("h.shape[0]", reader)
    assert _sites(source) == [("f07-conv-bn", False, _line(source, "h = self.conv(x)"))]
    beside = SIZED.replace("b = h.shape[0]", "b = h.sum()")
    assert _sites(beside) == []


PERMUTED = '''
import torch
from torch import nn


class LinearBN(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.linear_layer = torch.nn.Linear(d_in, d_out)
        self.batch_normalization = nn.BatchNorm1d(d_out)

    def forward(self, x):
        out = self.linear_layer(x)
        if len(out.shape) == 3:
            out = out.permute(1, 2, 0)
        out = self.batch_normalization(out)
        if len(out.shape) == 3:
            out = out.permute(2, 0, 1)
        return out
'''


def test_a_size_test_and_a_layout_step_on_the_way_to_the_batchnorm_are_no_second_readers() -> None:
    # coqui-tts 0.28 `tacotron/common_layers.py` LinearBN: the test reads the size, the permute feeds the BN
    assert _sites(PERMUTED) == [("f08-linear-bn", False, _line(PERMUTED, "out = self.linear_layer(x)"))]
    assert _sites(PERMUTED.replace("len(out.shape) == 3:\n            out = out.permute",
                                   "out.sum() > 0:\n            out = out.permute")) == []


CROPPED = '''
from torch import nn


class BranchSeparables(nn.Module):
    def __init__(self, c, zero_pad=False):
        super().__init__()
        self.zero_pad = zero_pad
        self.separable_1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn_sep_1 = nn.BatchNorm2d(c)

    def forward(self, x):
        x = self.separable_1(x)
        if self.zero_pad:
            x = x[:, :, 1:, 1:].contiguous()
        x = self.bn_sep_1(x)
        return x
'''


def test_steps_under_a_test_that_lead_into_the_batchnorm_are_no_second_readers() -> None:
    # pretrainedmodels 0.7.4 `pnasnet.py` / `nasnet_mobile.py` BranchSeparables: a crop on one path, two ops long
    assert _sites(CROPPED) == [("f07-conv-bn", False, _line(CROPPED, "x = self.separable_1(x)"))]


ACTIVATED = '''
import torch
from torch import nn


class LinearBlock(nn.Module):
    def __init__(self, d_in, d_out, activation="Tanh", batch_norm=False, skip_connection=False):
        super().__init__()
        self.skip_connection = skip_connection
        self.linear = nn.Linear(d_in, d_out, bias=False)
        if activation is not None:
            self.act_layer = make_activation(activation)
        else:
            self.act_layer = nn.Identity()
        self.batch_norm = batch_norm
        if batch_norm is True:
            self.bn_layer = nn.BatchNorm1d(d_out)

    def forward(self, x):
        x1 = self.linear(x)
        x1 = self.act_layer(x1)
        if self.batch_norm is True:
            x1 = self.bn_layer(x1)
        if self.skip_connection:
            x1 = torch.cat([x, x1], axis=1)
        return x1
'''


def test_a_layer_on_the_other_path_of_an_identity_choice_feeds_the_batchnorm() -> None:
    # pyod 2.x `models/dif.py` LinearBlock: the Identity path is the site; the activation path's layer is the
    # value on its way to the same BatchNorm, not a second reader
    assert _sites(ACTIVATED) == [("f08-linear-bn", False, _line(ACTIVATED, "x1 = self.linear(x)"))]
