"""`norm_layer = norm_layer or partial(nn.BatchNorm2d, eps=1e-3)` with `norm_layer=None` (timm's `resnetv2`,
`norm_layer or partial(GroupNormAct, num_groups=32)`; monai): the local holds the partial's class, as
`norm_layer = partial(...)` written alone does, so `norm_layer(c)` builds it. Before, it was bound to
`functools.partial(c)`. A parameter with another default (a caller's choice unknown here) keeps the `or` as
written, and so does a partial of anything not a class."""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.dsl.types import Ctor
from adopter.engine import Environment, check, load_rules

SOURCE = '''
from functools import partial

import torch.nn as nn


def helper(x, y):
    return x


class ConvNorm(nn.Module):
    def __init__(self, c, norm_layer={default}):
        super().__init__()
        norm_layer = norm_layer or {fallback}
        self.conv = nn.Conv2d(c, c, 3, bias=False)
        self.bn = norm_layer(c)

    def forward(self, x):
        return self.bn(self.conv(x))
'''


@pytest.mark.parametrize(("default", "fallback", "expected"), [
    ("None", "partial(nn.BatchNorm2d, eps=1e-3)", "torch.nn.BatchNorm2d"),
    ("None", "partial(nn.GroupNorm, 4)", "torch.nn.GroupNorm"),
    ("nn.Identity", "partial(nn.BatchNorm2d, eps=1e-3)", None),  # a default not None: as written
    ("None", "partial(helper, y=1)", None),  # a function, not a class: as written
])
def test_a_partial_fallback_of_a_none_parameter(default: str, fallback: str, expected: str | None) -> None:
    mf = analyse(SOURCE.format(default=default, fallback=fallback), "model.py")
    init = mf.architectures[0].init
    assert init is not None
    bn = next(b.value for b in init.bindings if b.attr == "bn")
    if expected is None:
        assert not (isinstance(bn, Ctor) and bn.callee.startswith("torch.nn."))
    else:
        assert isinstance(bn, Ctor) and bn.callee == expected
    found = [f.rule_id for f in check(mf, [r for r in load_rules().rules if r.family == 7],
                                      Environment("cpu", frozenset(), "2.13.0")).findings]
    assert ("f07-conv-bn" in found) == (expected == "torch.nn.BatchNorm2d")
