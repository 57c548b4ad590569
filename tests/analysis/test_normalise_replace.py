"""`normalise` removes bracket padding with `str.replace`, exactly as the three regex substitutions it replaced
(issue 20, spdana): checked over random texts made of the characters that matter."""

from __future__ import annotations

import random
import re

import pytest

from adopter.analysis.parse.source import normalise

_TRAILING_COMMA = re.compile(r", ([)\]}])")
_OPEN_SPACE = re.compile(r"([(\[{]) ")
_SPACE_CLOSE = re.compile(r" ([)\]}])")


def _by_regex(text: str) -> str:
    """`normalise` as it was written with `re.sub`."""
    if "\n" not in text and "\t" not in text and "  " not in text:
        return text
    text = " ".join(text.split())
    text = _TRAILING_COMMA.sub(r"\1", text)
    text = _OPEN_SPACE.sub(r"\1", text)
    return _SPACE_CLOSE.sub(r"\1", text)


_ALPHABET = "(){}[], \n\tab,,  "


@pytest.mark.parametrize("seed", range(20))
def test_normalise_is_the_regex_substitutions(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(2000):
        text = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 24)))
        assert normalise(text) == _by_regex(text), repr(text)


@pytest.mark.parametrize("text", [
    "f(\n    a,\n    b,\n)",
    "x[ 1 ,  2 ]",
    "{ 'a': ( 1, ), }",
    "g( ( [ a ] ) )",
    ", , ))",
    "(\n)",
    "a ,\n)",
])
def test_normalise_written_cases(text: str) -> None:
    assert normalise(text) == _by_regex(text)
