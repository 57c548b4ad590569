"""salvage's chunk starts carried from a document's last text equal a fresh search, edit by edit."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from adopter.analysis.parse.salvage import _CHUNK, Lines, ParseMemo, _chunk_starts

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.py"))
PIECES = (b"a", b"(", b" ", b"\n", b"\ndef f(", b"\nclass C:", b"class D(", b"def ", b"\n    def g(", b"async def h(",
          b"\t", b":", b"\r\n", b"#", b'"""')


def _fresh(data: bytes) -> list[int]:
    return [m.start() + 1 for m in _CHUNK.finditer(data)]


def _edit(data: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(data) + 1)
    kind = rng.randrange(5)
    if kind == 0:
        return data[:at] + rng.choice(PIECES) + data[at:]
    if kind == 1:
        return data[:at] + data[at + rng.randint(1, 8):]
    if kind == 2:  # at a line start
        s = data.rfind(b"\n", 0, at) + 1
        return data[:s] + rng.choice(PIECES) + data[s:]
    if kind == 3:  # a line deleted
        s, e = data.rfind(b"\n", 0, at) + 1, data.find(b"\n", at)
        return data[:s] + data[e + 1:] if e >= 0 else data[:s]
    return data[:at] + data[at + rng.randint(0, 600):]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_carried_chunk_starts_equal_a_fresh_search(path: Path) -> None:
    rng = random.Random(path.name)
    data = path.read_bytes()
    memo = ParseMemo()
    for _ in range(300):
        data = _edit(data, rng)
        assert _chunk_starts(data, memo) == _fresh(data)
        if rng.random() < 0.1:  # a text seen again, and one with no chunk at all
            assert _chunk_starts(data, memo) == _fresh(data)
    for data in (b"", b"x = 1", b"\ndef f(", b"def f(\n", b"\nclass C:\n\nclass D(", b"\n"):
        assert _chunk_starts(data, memo) == _fresh(data)


def test_lines_with_a_memo_equal_lines_without() -> None:
    rng = random.Random(7)
    data = EXAMPLES[0].read_bytes()
    memo = ParseMemo()
    for _ in range(100):
        data = _edit(data, rng)
        a, b = Lines(data, memo), Lines(data)
        assert (a.starts, a.indent, a.fresh, a.column0, a.ends) == (b.starts, b.indent, b.fresh, b.column0, b.ends)
        assert a.state(0, len(a.starts)) == b.state(0, len(b.starts))
