"""The truth value of a literal's source text, as a parameter default or a branch test spells it."""

from __future__ import annotations

import re

_NUMBER = re.compile(r"-?\d+(\.\d*)?")
_STRING = re.compile(r"""(['"])([^'"\\]*)\1""")  # one plain string literal, not `'' or ''` nor one with escapes


def literal_truth(text: str | None) -> bool | None:
    """The truth of a literal's source text (`False`, `None`, `0`, `''`, `4`), None for anything else."""
    if text is None:
        return None
    if text in ("True", "False", "None"):
        return text == "True"
    if _NUMBER.fullmatch(text):
        return float(text) != 0
    if _STRING.fullmatch(text):
        return len(text) > 2
    return None
