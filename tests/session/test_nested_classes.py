"""A module class nested in a class body (`Outer.Inner`, its finding's scope): `fix` applies every site
`check` calls fixable, `verify` finds the class to run, `arch FILE:Outer.Inner` selects it."""

from __future__ import annotations

from pathlib import Path

from adopter.commands.arch import _split
from adopter.verify.cases import changed_classes, site_classes

from .test_fix_contract import assert_fix_contract, session

NESTED = '''import torch
import torch.nn as nn


class Block:
    """A builder that holds the module class it builds."""

    def __init__(self, d_model):
        self.d_model = d_model

    def build(self):
        return self._Block(self.d_model)

    class _Block(nn.Module):
        def __init__(self, d_model=16):
            super().__init__()
            self.proj = nn.Linear(d_model, d_model)
            self.dropout = nn.Dropout(0.1)
            self.norm = nn.LayerNorm(d_model)

        def forward(self, x):
            x = x + self.dropout(self.proj(x))
            x = self.norm(x)
            return x
'''


def test_a_nested_class_site_is_fixable_and_fix_applies_it() -> None:
    s = session()
    analysed = s.analysed(NESTED, "nested.py")
    fixable = [(f.scope_name, f.rule_id) for f in s.fixable(analysed)]
    assert fixable == [("Block._Block", "f05-dropout-add-layernorm")]
    assert_fix_contract(NESTED, "nested.py")
    out = s.fix(NESTED, "nested.py")
    assert [(f.scope_name, f.rule_id) for f in out.applied] == fixable
    assert "x = x + self.dropout(self.proj(x))" not in out.new_source


def test_verify_runs_the_nested_class_a_fix_changed() -> None:
    out = session().fix(NESTED, "nested.py")
    assert "Block._Block" in changed_classes(NESTED, out.new_source)
    assert site_classes(NESTED, "Block._Block") == ("Block._Block",)


def test_arch_selects_a_nested_class_by_its_qualified_name() -> None:
    assert _split("/no/such/m.py:Block._Block") == (Path("/no/such/m.py"), "Block._Block")
    assert _split("/no/such/m.py:Block") == (Path("/no/such/m.py"), "Block")
