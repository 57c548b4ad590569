"""A `+` or `*` step whose operands unify in the written order but leave no match below is tried in the other
order: `cos * x + sin * rotate_half(x)` binds `$x` to `cos` in `$xc = $x * $cos` first (rotary embedding, both
operand orders; the brief of issue 20's family 15).

Until now the other order was tried only when the written one failed at once, so a step that binds fresh
variables (the first step of a pattern) kept its first reading and the search below it failed.
"""

from __future__ import annotations

import pytest
from attention_harness import findings_of, rules_of

from adopter.dsl import parse_rules

RULES = rules_of("f15-rope", "f15-rope-forms")

ROTARY = '''
import torch
from torch import nn


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Rotary(nn.Module):
    def forward(self, x, cos, sin):
        return FORMULA
'''


def _sites(formula: str) -> list[tuple[str, int]]:
    return [(f.rule_id, f.span.start_line + 1) for f in findings_of(ROTARY.replace("FORMULA", formula), RULES)]


@pytest.mark.parametrize("formula", [
    "x * cos + rotate_half(x) * sin",
    "cos * x + rotate_half(x) * sin",
    "cos * x + sin * rotate_half(x)",
    "x * cos + sin * rotate_half(x)",
    "sin * rotate_half(x) + cos * x",
])
def test_rotary_in_any_operand_order_is_a_site(formula: str) -> None:
    assert _sites(formula) == [("f15-rope-chunk-single", 13)]


@pytest.mark.parametrize("formula", [
    "cos * sin + sin * rotate_half(x)",  # the rotated tensor is not the one scaled by cos
    "cos * x + x * rotate_half(sin)",
])
def test_rotary_of_other_tensors_is_not_a_site(formula: str) -> None:
    assert _sites(formula) == []


PAIR = parse_rules('''
rule t-pair {
  family 5
  title "t"
  message "a scaled value added to its own square"
  severity warning
  scope forward
  target portable {
    kernel "k"
    preferred
  }
  forward {
    $s = $x * $c
    $q = $x.pow(2)
    $y = $s + $q
  }
}
''', "t.adl")

PAIR_SOURCE = '''
import torch
from torch import nn


class M(nn.Module):
    def forward(self, x, c):
        return PRODUCT + x.pow(2)
'''


@pytest.mark.parametrize(("product", "sites"), [("x * c", 1), ("c * x", 1), ("c * c", 0)])
def test_a_first_step_is_read_in_both_operand_orders(product: str, sites: int) -> None:
    assert len(findings_of(PAIR_SOURCE.replace("PRODUCT", product), PAIR)) == sites
