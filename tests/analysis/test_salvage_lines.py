"""salvage's `Lines` carried from a document's last text (its unchanged chunks' lines) equal a fresh reading."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from adopter.analysis.parse import salvage
from adopter.analysis.parse.salvage import Lines, ParseMemo

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.py"))
PIECES = (b"a", b"(", b")", b" ", b"\n", b"\ndef f(", b"\nclass C:", b"class D(", b"def ", b"\n    def g(", b"#",
          b'"""', b"'", b"\\\n", b"[", b"\r\n", b"\t")


def _edit(data: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(data) + 1)
    kind = rng.randrange(4)
    if kind == 0:
        return data[:at] + rng.choice(PIECES) + data[at:]
    if kind == 1:
        return data[:at] + data[at + rng.randint(1, 8):]
    if kind == 2:  # at a line start
        s = data.rfind(b"\n", 0, at) + 1
        return data[:s] + rng.choice(PIECES) + data[s:]
    return data[:at] + data[at + rng.randint(0, 600):]


def _reading(lines: Lines) -> tuple[object, ...]:
    return (lines.data, lines.starts, lines.ends, lines.indent, lines.fresh, lines.column0, lines.chunks,
            lines.offsets, lines._inside, lines._comment, lines._comment_lines,
            [lines.code(i) for i in range(len(lines.starts))], lines.state(0, len(lines.starts)))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_lines_carried_over_edits_equal_a_fresh_reading(path: Path) -> None:
    rng = random.Random(path.name)
    original = data = path.read_bytes()
    memo = ParseMemo()
    for step in range(200):
        data = _edit(data, rng)
        assert _reading(Lines(data, memo)) == _reading(Lines(data)), f"step {step}"
        if rng.random() < 0.2:  # back to the text before, as a deleted keystroke or an undo
            data = original
    for data in (b"", b"x = 1", b"\ndef f(", b"def f(\n", b"\nclass C:\n\nclass D(", b"\n", original):
        assert _reading(Lines(data, memo)) == _reading(Lines(data))


@pytest.mark.pure_python  # counts reads through patched / Python-level calls the compiled build makes natively
def test_a_keystroke_reads_only_the_chunk_it_is_in(monkeypatch: pytest.MonkeyPatch) -> None:
    data = (EXAMPLES[0].parent / "bert_encoder.py").read_bytes()
    memo = ParseMemo()
    before = Lines(data, memo)
    assert len(before.chunks) >= 4
    at = data.index(b"\n", before.offsets[2]) + 9  # inside the third chunk's second line
    edited = data[:at] + b"(" + data[at:]
    looked_up: list[bytes] = []
    scan = memo.scan
    monkeypatch.setattr(memo, "scan", lambda chunk, last: looked_up.append(chunk) or scan(chunk, last))
    after = Lines(edited, memo)
    # the other chunks were carried; the edited one was read from the reading of the chunk it replaces
    assert looked_up == [edited[after.offsets[2] : after.offsets[3]], before.chunks[2][1]]
    assert [c for _, c, _ in after.chunks[:2]] == [c for _, c, _ in before.chunks[:2]]
    assert all(a is b for (_, a, _), (_, b, _) in zip(after.chunks[3:], before.chunks[3:], strict=True))
    assert after.offsets[3:] == [o + 1 for o in before.offsets[3:]]
    monkeypatch.undo()
    assert _reading(after) == _reading(Lines(edited))


def test_what_the_carried_reading_read_changing_is_read_again() -> None:
    """The carried lines are those of chunks whose text is unchanged: a bracket opened in one chunk changes
    the reading of its later lines, a `def` typed at column 0 cuts a chunk in two, and both are read again."""
    text = b"def f(x):\n    y = 1\n    print(y)\n\n\ndef g():\n    z = 2\n    return z\n\n\nclass C:\n    w = 3\n"
    memo = ParseMemo()
    first = Lines(text, memo)
    assert first.fresh == [True] * len(first.starts)
    opened = text.replace(b"y = 1", b"y = (1")
    carried = Lines(opened, memo)
    assert carried.fresh[2] is False and carried.fresh[6] is True  # `print(y)` is inside the bracket now
    assert _reading(carried) == _reading(Lines(opened))
    cut = opened.replace(b"    print(y)\n", b"    print(y)\ndef h(\n")
    carried = Lines(cut, memo)
    assert len(carried.chunks) == len(first.chunks) + 1
    assert _reading(carried) == _reading(Lines(cut))
    assert memo.last_lines is carried


def test_a_memo_from_another_text_is_not_trusted_blindly() -> None:
    """`last_lines` of a text unrelated to the new one: nothing is carried where the chunks differ."""
    memo = ParseMemo()
    a = b"def f():\n    return 1\n\n\ndef g(\n    x,\n"
    b = b"x = [\n\ndef g(\n    x,\n"
    Lines(a, memo)
    assert _reading(Lines(b, memo)) == _reading(Lines(b))
    assert salvage.mask_broken(b, None, memo) == salvage.mask_broken(b, None)
