"""`matches_at_word_starts(p, data)` gives what `re.compile(rb"\\b" + p.pattern).finditer(data)` gave, for the
patterns `idioms.entry_methods` searches without their leading `\\b` (issue 20, spdana)."""

from __future__ import annotations

import random
import re

import pytest

from adopter.analysis.idioms import entry_methods
from adopter.analysis.parse.words import matches_at_word_starts

PATTERNS = [entry_methods._LAYER_CALL, entry_methods._RUNS_ITSELF]

TEXTS = [
    b"",
    b"self.a(x)",
    b"self(x) + self.forward (y)",
    b"myself.a(x) + _self.b(x) + self_.c(x) + 2self.d(x) + myself(x)",
    b"\xc3\xa9self.a(x)",  # a non-ASCII byte before is no word character for a bytes `\b`
    b"self.self.a(x) self.self(x)",
    b"selfself.a(x) self..a(x) .self.b(x) )self.c(x) self.forward\n(x)",
    b"self.x\t.\nforward\n(y)  self.y  ( z )",
]


@pytest.mark.parametrize("pattern", PATTERNS, ids=["_LAYER_CALL", "_RUNS_ITSELF"])
def test_matches_at_word_starts_is_finditer_with_a_word_boundary(pattern: re.Pattern[bytes]) -> None:
    bounded = re.compile(rb"\b" + pattern.pattern)
    rng = random.Random(20)
    alphabet = b"self.forward()_ab1\n\t \xc3"
    pieces = [b"self.", b"self(", b"self.a(", b"myself.b(", b".forward(", b" ", b"x", b"(", b"_", b"self.self.c("]
    texts = list(TEXTS)
    texts += [bytes(rng.choice(alphabet) for _ in range(rng.randrange(60))) for _ in range(3000)]
    texts += [b"".join(rng.choice(pieces) for _ in range(rng.randrange(20))) for _ in range(3000)]
    for text in texts:
        expected = [(m.span(), m.groups()) for m in bounded.finditer(text)]
        assert [(m.span(), m.groups()) for m in matches_at_word_starts(pattern, text)] == expected, text
