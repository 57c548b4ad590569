"""`trailing_axes`: an axis argument written as a list names the last k axes (labml-nn's LayerNorm over the dims
`normalized_shape` names), read as text, never run."""

from __future__ import annotations

import pytest

from adopter.analysis.canonical.axes import trailing_axes


@pytest.mark.parametrize("text", [
    "-1",
    "(-2, -1)",
    "[-1, -2, -3]",
    "[-(i + 1) for i in range(len(self.normalized_shape))]",
    "[-i for i in range(1, n + 1)]",
    "[-1 - i for i in range(self.k)]",
    "tuple(range(-n, 0))",
    "list(range(-1, -len(shape) - 1, -1))",
    "tuple(-(i + 1) for i in range(2))",
])
def test_the_trailing_axes(text: str) -> None:
    assert trailing_axes(text)


@pytest.mark.parametrize("text", [
    "1",  # the channel axis: trailing only of a 2-D tensor
    "(0, 1)",
    "(-3, -1)",  # a gap
    "[i for i in range(n)]",  # the leading axes
    "[-(i + 2) for i in range(n)]",  # skips the last axis
    "[-(i + 1) for i in range(a, b)]",  # two sizes the text does not fix
    "tuple(range(-n, m))",
    "[-(i + 1) for i in range(n) if i != 1]",
    "[]",
    "dims",
])
def test_not_the_trailing_axes(text: str) -> None:
    assert not trailing_axes(text)
