"""A module class defined in a function (`build.<locals>.Block`, `names.function_classes`): its sites are reported
without a fix, so `fix` leaves the file as it was and keeps the fix contract."""

from __future__ import annotations

from pathlib import Path

from adopter.commands.arch import _split

from .test_fix_contract import assert_fix_contract, session

# The lead's probe of issue 20 (softmax attention, Linear -> GELU and Conv -> BN in a class inside `def build(d):`),
# the form of torchrl's `make_gail_discriminator` (sota-implementations/gail/gail_utils.py:44) with more families.
NESTED = '''import torch
import torch.nn as nn
import torch.nn.functional as F


def build(d):
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(d, 4 * d)
            self.fc2 = nn.Linear(4 * d, d)
            self.conv = nn.Conv2d(3, 8, 3)
            self.bn = nn.BatchNorm2d(8)

        def forward(self, x, img):
            q = k = v = x
            s = torch.softmax(q @ k.transpose(-2, -1) / 8.0, dim=-1)
            y = s @ v
            y = self.fc2(F.gelu(self.fc1(y)))
            return y, self.bn(self.conv(img))

    return Block()
'''


def test_sites_in_a_function_class_are_reported_and_not_fixed() -> None:
    s = session()
    analysed = s.analysed(NESTED, "nested.py")
    assert {(f.scope_name, f.rule_id) for f in analysed.findings} >= {
        ("build.<locals>.Block", "f10-manual-attention-sdpa"), ("build.<locals>.Block", "f07-conv-bn")}
    assert not s.fixable(analysed)
    assert_fix_contract(NESTED, "nested.py")
    assert s.fix(NESTED, "nested.py").new_source == NESTED


def test_arch_selects_a_function_class_by_its_qualified_name() -> None:
    assert _split("/no/such/m.py:build.<locals>.Block") == (Path("/no/such/m.py"), "build.<locals>.Block")
    assert _split("/no/such/m.py:C.m.<locals>.f.<locals>.B") == (Path("/no/such/m.py"), "C.m.<locals>.f.<locals>.B")
