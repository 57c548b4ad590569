"""String constants of the flow analysis (`adopter.analysis.flow.fstrings`): an einsum equation built from
locals bound by statements, as audiocraft's streaming attention builds it (issue 20, helper `mech28`).

Each row: the statements binding the layout, the f-string read, and the equation the einsum op carries
(the conditional of two strings under the `if`'s test, one string, or the f-string as written).
"""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.dsl.types import Expr, Op, OpKind

TEMPLATE = """
import torch
from torch import nn


class A(nn.Module):
    def forward(self, q, k, time_dim=2):
{binding}
        return torch.einsum({equation}, q, k)
"""

IF_ELSE = '        if time_dim == 2:\n            layout = "b h t d"\n        else:\n            layout = "b t h d"'
DERIVED = "\n        key_layout = layout.replace('t', 'k')\n        query_layout = layout"
BOTH = 'f"{query_layout},{key_layout}-> b h t k"'


def _equation(binding: str, equation: str) -> str:
    module = analyse(TEMPLATE.format(binding=binding, equation=equation), "m.py")
    forward = module.architectures[0].forward
    assert forward is not None
    # the einsum as written: the op itself, or the origin of the product the canonical pass made of it
    written = {op.origin or op for op in forward.body if isinstance(op, Op)}
    ops = [op for op in written if op.kind == OpKind.FUNCTION and op.target == "torch.einsum"]
    assert len(ops) == 1
    first = ops[0].args[0]
    assert isinstance(first, Expr)
    return first.text


@pytest.mark.parametrize(("binding", "equation", "expected"), [
    # if/else of two constants, `str.replace` of it and an alias of it: one test decides both placeholders
    (IF_ELSE + DERIVED, BOTH,
     '"b h t d,b h k d-> b h t k" if time_dim == 2 else "b t h d,b k h d-> b h t k"'),
    # an `if` without `else` rebinding a constant bound before it: a name bound twice to different strings
    # names no constant (as everywhere in the function, loops included), so the f-string stays as written
    ('        layout = "b t h d"\n        if time_dim == 2:\n            layout = "b h t d"' + DERIVED, BOTH, BOTH),
    # the same constant on both paths is that constant
    ('        if time_dim == 2:\n            layout = "b h t d"\n        else:\n            layout = "b h t d"'
     + DERIVED, BOTH, '"b h t d,b h k d-> b h t k"'),
    # three paths (`elif`): no one test chooses, the f-string stays as written
    ('        if time_dim == 2:\n            layout = "b h t d"\n        elif time_dim == 1:\n'
     '            layout = "b t h d"\n        else:\n            layout = "t b h d"' + DERIVED, BOTH, BOTH),
    # two placeholders chosen by different tests: four strings, kept as written
    (IF_ELSE + '\n        if q.ndim == 4:\n            key_layout = "b h k d"\n        else:\n'
     '            key_layout = "b k d"', 'f"{layout},{key_layout}-> b h t k"',
     'f"{layout},{key_layout}-> b h t k"'),
    # `replace` with an argument that is not a literal: no constant
    (IF_ELSE + "\n        key_layout = layout.replace('t', time_dim)\n        query_layout = layout", BOTH, BOTH),
])
def test_string_constants_bound_by_statements(binding: str, equation: str, expected: str) -> None:
    assert _equation(binding, equation) == expected
