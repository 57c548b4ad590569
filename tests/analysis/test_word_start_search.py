"""The searches issue 22 made faster give what the regular expressions they replace gave.

`groups_at_word_starts(p, text)` stands for `re.compile(r"\\b" + p.pattern).findall(text)` (the module calls
that `inherited_layers` and `passed_layers` look for), and `normalise` splits on what `\\s+` matched.
"""

from __future__ import annotations

import random
import re
import sys

import pytest

from adopter.analysis.chains import passed_layers
from adopter.analysis.idioms import inherited_layers
from adopter.analysis.parse.source import normalise
from adopter.analysis.parse.words import groups_at_word_starts

PATTERNS = [inherited_layers._CALLED, passed_layers._SELF_CALLS]

TEXTS = [
    "",
    "self.a(x)",
    "x = self.a(x) + self.b.forward(y)\n",
    "myself.a(x) + _self.b(x) + self_.c(x) + 2self.d(x)",  # not at a word start
    "éself.a(x)\nπself.b(x)\n(self.c (x))",  # a non-ASCII letter before is a word character for `\b`
    "self.self.a(x)",  # `self.self` then `.a(`: no call of `self.self`, nor of `self.a`
    "myself.a.forward(self.b(x))",
    "self.x\t.\nforward\n(y)  self.y  ( z )",
    "self.ααα(x) self.a1(x) self._a(x) self.1a(x)",
    "self.",
    "self.a",
    "selfself.a(x) self..a(x) .self.b(x) )self.c(x)",
]


def _alphabet() -> str:
    return "self.forward()_ab1\n\t é"


@pytest.mark.parametrize("pattern", PATTERNS, ids=["inherited_layers._CALLED", "passed_layers._SELF_CALLS"])
def test_groups_at_word_starts_is_findall_with_a_word_boundary(pattern: re.Pattern[str]) -> None:
    bounded = re.compile(r"\b" + pattern.pattern)
    rng = random.Random(22)
    alphabet = _alphabet()
    pieces = ["self.", "self.a(", "myself.b(", ".forward(", " ", "x", "(", "é", "self.self.c(", "_"]
    texts = list(TEXTS)
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randrange(60))) for _ in range(3000)]
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randrange(20))) for _ in range(3000)]
    found_any = 0
    for text in texts:
        expected = bounded.findall(text)
        assert groups_at_word_starts(pattern, text) == expected, text
        found_any += bool(expected)
    assert found_any > 100  # the texts exercise matches, not only their absence


def test_the_patterns_start_with_a_word_character() -> None:
    # `groups_at_word_starts` stands for `\b` only before a word character (see its docstring).
    for pattern in PATTERNS:
        assert re.match(r"\w", pattern.pattern)
        assert pattern.groups == 1


def test_split_cuts_where_backslash_s_matches() -> None:
    space = re.compile(r"\s")
    for code in range(sys.maxunicode + 1):
        ch = chr(code)
        assert bool(space.match(ch)) == ch.isspace(), hex(code)


@pytest.mark.parametrize("text", [
    "a\n  b", "f(\n    x,\n    y,\n)", "\t( a )\t", "  x  ", "a\u00a0\u2003\n b", "a\x0b\x0c\x1c\x85 b\n", " \n\t ",
    "nn.Linear(\n        config.hidden_size,  config.intermediate_size\n    )",
])
def test_normalise_is_the_regex_form(text: str) -> None:
    ws = re.compile(r"\s+")
    expected = ws.sub(" ", text).strip()
    expected = re.sub(r", ([)\]}])", r"\1", expected)
    expected = re.sub(r"([(\[{]) ", r"\1", expected)
    expected = re.sub(r" ([)\]}])", r"\1", expected)
    assert normalise(text) == expected
