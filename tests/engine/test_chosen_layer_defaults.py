"""Norm and conv layers chosen by a value: a `None` default stays undecided, and a class picked by a parameter
without a default gets no automatic fix (families 7 and 8).

- akita-torch 0.1.0 `akita_torch/nn/block.py:216–272, 288–292` (`AkitaConvBlock2D`, fresh6 W6): `norm_type=None`,
  `if norm_type == "batch": self.norm = nn.BatchNorm2d(...)` / `elif "batch-sync"` / `else: self.norm = None`,
  forward `x = self.conv(x); if self.norm: x = self.norm(x)`. At the defaults there is no norm; the checker
  reports Conv2d -> BatchNorm2d from the first arm, and keeps doing so: reading `None` as a value that equals no
  string (helper mech92's first version) drops the common `if norm_type is None: norm_type = "batch"` /
  `norm_type = norm_type or "batch"` rebinding's true site, which the bindings cannot tell apart (the lead's
  review). In the library's own use akita passes `norm_type="batch"` from its config (fresh6.md W6), so the
  finding is right there.
- atomai 0.8.1 `atomai/nets/blocks.py:176, 195–197, 205–209` (`ResBlock`): `conv = nn.Conv2d if ndim == 2 else
  nn.Conv1d`, `bn = nn.BatchNorm2d if ndim == 2 else nn.BatchNorm1d` with `ndim` required (mech86's fixture `C`).
  The pair is a site on the `ndim == 2` path (RULES.md counting) but the layer classes are the caller's choice:
  detection-only (`scope.chosen_layers`). With a default, with a choice among BatchNorms only, or with the chosen
  layer an item of a Sequential beside the pair, the fix stays.
Every fixture is rewritten at fixture size; the classes, not the packages, are what is read.
"""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules

CPU = Environment("cpu", frozenset(), "2.13.0")
RULES = [r for r in load_rules().rules if r.family in (7, 8)]

# akita-torch 0.1.0 nn/block.py 216-292, reduced: the conv, the norm chosen by name, the guarded forward.
AKITA = '''from torch import nn


class ConvBlock2D(nn.Module):
    def __init__(self, in_dim, out_dim, kernel_size=3, norm_type={default}, bn_momentum=0.99):
        super().__init__()
        self.conv = nn.Conv2d(in_dim, out_dim, kernel_size, padding="same", bias=(norm_type is None))
        {choice}

    def forward(self, x):
        x = self.conv(x)
        if self.norm:
            x = self.norm(x)
        return x
'''

CHAIN = '''if norm_type == "batch":
            self.norm = nn.BatchNorm2d(out_dim, momentum=bn_momentum)
        elif norm_type == "batch-sync":
            self.norm = nn.SyncBatchNorm(out_dim, momentum=bn_momentum)
        else:
            self.norm = None'''

# the same choice with no binding of `self.norm` on the default's path: the default is not the module's use
ONLY_BN = '''if norm_type == "batch":
            self.norm = nn.BatchNorm2d(out_dim, momentum=bn_momentum)'''

# a flag, not a name: a switch for an optional layer, reported on its path as before
FLAG = '''self.norm = nn.BatchNorm2d(out_dim) if norm_type else None'''

# atomai 0.8.1 nets/blocks.py 160-209 (ResBlock), reduced: classes chosen by `ndim`, one pair in forward.
ATOMAI = '''import torch.nn.functional as F
from torch import nn


class ResBlock(nn.Module):
    def __init__(self, ndim{default}, input_channels=8, output_channels=8):
        super().__init__()
        conv = {conv}
        bn = {bn}
        self.c1 = conv(input_channels, output_channels, kernel_size=3, padding=1)
        self.bn1 = bn(output_channels)

    def forward(self, x):
        out = self.c1(x)
        out = self.bn1(out)
        return F.leaky_relu(out, negative_slope=0.01)
'''

CONV_BY_DIM = "nn.Conv2d if ndim == 2 else nn.Conv1d"
BN_BY_DIM = "nn.BatchNorm2d if ndim == 2 else nn.BatchNorm1d"

# bottleneck-transformer-pytorch 0.1.4 BottleBlock, reduced: the chosen layer is an item beside the pair
BOTTLE = '''from torch import nn


class BottleBlock(nn.Module):
    def __init__(self, dim, dim_out, downsample):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(dim, dim_out, 1, bias=False),
            nn.BatchNorm2d(dim_out),
            nn.ReLU(),
            nn.AvgPool2d((2, 2)) if downsample else nn.Identity(),
        )

    def forward(self, x):
        return self.net(x)
'''


def _found(source: str) -> list[tuple[int, int, bool]]:
    findings = check(analyse(source, "m.py"), RULES, CPU).findings
    return [(f.family, f.span.start_line + 1, f.fixable) for f in findings]


def _line(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), 1) if line.strip() == text)


@pytest.mark.parametrize("rebind", ["", 'if norm_type is None:\n            norm_type = "batch"\n        ',
                                    'norm_type = norm_type or "batch"\n        '],
                         ids=["as-written", "is-none-rebound", "or-rebound"])
def test_a_none_default_stays_undecided_as_init_may_rebind_it(rebind: str) -> None:
    source = AKITA.format(default="None", choice=rebind + CHAIN)
    assert [(f, line) for f, line, _ in _found(source)] == [(7, _line(source, "x = self.conv(x)"))]


def test_a_string_default_naming_the_batch_norm_stays_a_site() -> None:
    source = AKITA.format(default='"batch"', choice=CHAIN)
    assert [(f, line) for f, line, _ in _found(source)] == [(7, _line(source, "x = self.conv(x)"))]


@pytest.mark.parametrize("choice", [ONLY_BN, FLAG])
def test_a_none_default_that_decides_nothing_stays_a_site(choice: str) -> None:
    source = AKITA.format(default="None", choice=choice)
    assert [(f, line) for f, line, _ in _found(source)] == [(7, _line(source, "x = self.conv(x)"))]


def test_classes_chosen_by_a_parameter_without_a_default_are_a_site_without_a_fix() -> None:
    source = ATOMAI.format(default="", conv=CONV_BY_DIM, bn=BN_BY_DIM)
    findings = check(analyse(source, "m.py"), RULES, CPU).findings
    assert [(f.family, f.span.start_line + 1, f.fixable) for f in findings] == [
        (7, _line(source, "out = self.c1(x)"), False)]
    assert "chosen by `ndim == 2`" in (findings[0].no_fix_reason or "")


@pytest.mark.parametrize(("default", "conv", "bn"), [
    (" = 2", CONV_BY_DIM, BN_BY_DIM),  # a default: the class is the module's own, as written
    ("", "nn.Conv2d", "nn.SyncBatchNorm if ndim == 2 else nn.BatchNorm2d"),  # BatchNorms only: each folds
])
def test_choices_a_default_decides_or_among_batch_norms_keep_the_fix(default: str, conv: str, bn: str) -> None:
    source = ATOMAI.format(default=default, conv=conv, bn=bn)
    assert _found(source) == [(7, _line(source, "out = self.c1(x)"), True)]


def test_a_chosen_item_beside_the_pair_keeps_the_fix() -> None:
    assert _found(BOTTLE) == [(7, _line(BOTTLE, "return self.net(x)"), True)]
