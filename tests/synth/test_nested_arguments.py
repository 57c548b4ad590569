"""`nested_arguments._unwrapped`: the parentheses `argument_text` puts around a compound argument are dropped where
the template makes it a call's only argument (`liger_softmax(a / t)`), and only when they are one pair around one
expression."""

from __future__ import annotations

import pytest

from adopter.synth.strategies.nested_arguments import _unwrapped


@pytest.mark.parametrize(("text", "out"), [
    ("(logits / temperature)", "logits / temperature"),
    ("((teacher - center) / temp)", "(teacher - center) / temp"),
    ("(\n    (t - c) / temp\n)", "(t - c) / temp"),
    ("self.linear(x)", "self.linear(x)"),
    ("(a) + (b)", "(a) + (b)"),  # two pairs, not one around the whole
    ("(a, b)", "(a, b)"),  # a tuple needs its parentheses
    ("(x for x in xs)", "(x for x in xs)"),  # a generator expression too
])
def test_unwrapped(text: str, out: str) -> None:
    assert _unwrapped(text) == out
