"""A rule's constant matched by its value, not its spelling.

`one_of($k, 0.7978845608, `math.sqrt(2.0 / math.pi)`)` lists spellings of one number; code writes the same
number many other ways (`torch.sqrt(torch.tensor(2.0 / torch.pi))`, `(2 / math.pi) ** 0.5`, `np.sqrt(2 / np.pi)`).
When the bound expression is a constant (numbers, `pi`, `sqrt`/`exp`/... of `math`, `torch` or `numpy`, a
one-number `torch.tensor`; see `formula_functions.constant_value`) and every listed choice is one too, it matches
when it equals one of them in float32: a relative difference under 2**-23, the spacing of float32 numbers near 1,
so the kernel's float32 constant and the written one are the same number or its neighbour.
"""

from __future__ import annotations

from collections.abc import Sequence

from adopter.analysis.names.formula_functions import constant_value

_FLOAT32_SPACING = 2.0**-23


def same_number(text: str, choices: Sequence[str]) -> bool:
    """Whether the constant expression `text` equals one of the constant `choices` in float32 (all of them must
    be constants: a list of names or patterns is never compared by value)."""
    values = [constant_value(c) for c in choices]
    if not values or any(v is None for v in values):
        return False
    mine = constant_value(text)
    if mine is None or mine != mine:
        return False
    return any(abs(mine - v) <= _FLOAT32_SPACING * max(abs(mine), abs(v)) for v in values if v is not None)
