"""salvage's tokenization of a chunk a keystroke changed, re-read from the chunk's last reading (`_rescan`),
equals a fresh tokenization (`_scan`), and reads only the lines around the change."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from adopter.analysis.parse import salvage
from adopter.analysis.parse.salvage import Lines, ParseMemo, _rescan, _scan

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.py"))
# What changes a tokenization: brackets, quotes (one, three, prefixed), comments, continuations, line breaks,
# indentation, and lines that read as statements (which end a bracket opened at their indentation or deeper).
PIECES = (b"a", b"(", b")", b" ", b"\n", b"#", b'"""', b"'''", b"'", b'"', b"\\\n", b"\\", b"[", b"]", b"{", b"}",
          b"\r\n", b"\t", b"    ", b"\n    x = (", b"return ", b"if x:", b"f'", b'b"', b"):\n", b"=", b" = ")


def _chunks(data: bytes) -> list[tuple[bytes, bool]]:
    bounds = [0, *(m.start() + 1 for m in salvage._CHUNK.finditer(data)), len(data)]
    return [(data[bounds[k] : bounds[k + 1]], bounds[k + 1] == len(data)) for k in range(len(bounds) - 1)]


def _edited(old: bytes, last: bool, rng: random.Random) -> bytes:
    at = rng.randrange(len(old) + 1)
    kind = rng.randrange(5)
    if kind == 0:
        new = old[:at] + rng.choice(PIECES) + old[at:]
    elif kind == 1:
        new = old[:at] + old[at + rng.randint(1, 4) :]
    elif kind == 2:  # at a line start: indentation, a statement ending a bracket above
        s = old.rfind(b"\n", 0, at) + 1
        new = old[:s] + rng.choice(PIECES) + old[s:]
    elif kind == 3:
        new = old[:at] + old[at + rng.randint(0, 300) :]
    else:
        new = old[:at] + rng.choice(PIECES) + old[at + rng.randint(0, 3) :]
    return new if last or new.endswith(b"\n") else new + b"\n"  # a chunk before another ends its line


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_a_rescanned_chunk_equals_a_fresh_scan(path: Path) -> None:
    rng = random.Random(path.name)
    chunks = _chunks(path.read_bytes())
    compared = 0
    for _ in range(300):
        old, last = rng.choice(chunks)
        for _ in range(rng.randint(1, 3)):  # keystrokes in a row, each from the reading of the one before
            new = _edited(old, last, rng)
            got = _rescan(old, _scan(old, last), new, last)
            if got is not None:
                compared += 1
                assert got == _scan(new, last), (old, new)
            old = new
    assert compared >= 250


@pytest.mark.parametrize(("old", "new"), [
    # A line that reads as a statement ends the bracket opened above it at its indentation: edited so that it
    # no longer does (a keyword typed over, or indented deeper), the lines below it are inside the bracket.
    (b"class C:\n    def f(self):\n        y = g(a\n        return y\n        z = 1\n",
     b"class C:\n    def f(self):\n        y = g(a\n        rrn y\n        z = 1\n"),
    (b"class C:\n    def f(self):\n        y = g(a\n        return y\n        z = 1\n",
     b"class C:\n    def f(self):\n        y = g(a\n         return y\n        z = 1\n"),
    # ... and the other way round; a string opened and closed; a continuation; a comment; a bracket closed.
    (b"def f():\n    y = g(a\n    rrn y\n    z = 1\n", b"def f():\n    y = g(a\n    return y\n    z = 1\n"),
    (b"def f():\n    x = 1\n    y = 2\n    z = 3\n", b"def f():\n    x = '''1\n    y = 2\n    z = 3\n"),
    (b"def f():\n    x = '''1\n    y = 2\n    z = 3\n", b"def f():\n    x = '''1\n    y = 2'''\n    z = 3\n"),
    (b"def f():\n    x = 1\n    y = 2\n    z = 3\n", b"def f():\n    x = 1 \\\n    y = 2\n    z = 3\n"),
    (b"def f():\n    x = (1\n    y = 2\n    z = 3)\n", b"def f():\n    x = (1  # )\n    y = 2\n    z = 3)\n"),
    (b"def f():\n    x = [1\n    y = 2\n    z = 3]\n", b"def f():\n    x = [1]\n    y = 2\n    z = 3]\n"),
    (b"x = 1\n", b" x = 1\n"),
    (b"", b"x"),
    (b"x", b""),
])
@pytest.mark.parametrize("last", [True, False])
def test_rescans_where_a_bracket_or_string_changes_extent(old: bytes, new: bytes, last: bool) -> None:
    if not last:
        old, new = old + b"\n" * (not old.endswith(b"\n")), new + b"\n" * (not new.endswith(b"\n"))
    for a, b in ((old, new), (new, old)):
        got = _rescan(a, _scan(a, last), b, last)
        assert got is not None
        assert got == _scan(b, last)


class _CountedTokens:
    """`salvage._TOKENS` counting its searches."""

    def __init__(self, pattern: re.Pattern[bytes]) -> None:
        self.pattern = pattern
        self.searches = 0

    def search(self, data: bytes, pos: int) -> re.Match[bytes] | None:
        self.searches += 1
        return self.pattern.search(data, pos)


@pytest.mark.pure_python  # counts searches through a patched module global the compiled build binds natively
def test_a_keystroke_in_a_long_chunk_reads_the_lines_around_it(monkeypatch: pytest.MonkeyPatch) -> None:
    body = b"".join(b"        x%d = f(a, b[%d], 'c')  # note\n" % (i, i) for i in range(400))
    data = b"class C:\n    def forward(self, a, b):\n" + body + b"        return x0\n"
    memo = ParseMemo()
    Lines(data, memo)
    at = data.index(b"x200 = f(") + len(b"x200 = f(")
    edited = data[:at] + b"(" + data[at:]  # a bracket left open (the next statement line ends it)
    counted = _CountedTokens(salvage._TOKENS)
    monkeypatch.setattr(salvage, "_TOKENS", counted)
    after = Lines(edited, memo)
    read = counted.searches
    monkeypatch.undo()
    assert read < 40  # a fresh scan: ~2,400 (six tokens a line)
    fresh = Lines(edited)
    assert (after.starts, after.ends, after.indent, after.fresh, after._inside, after._comment) == (
        fresh.starts, fresh.ends, fresh.indent, fresh.fresh, fresh._inside, fresh._comment)
