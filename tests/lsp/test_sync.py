"""Content changes → tree-sitter edits, and minimal text edits: pure functions, property-tested."""

from __future__ import annotations

import tree_sitter_python
from hypothesis import given, settings
from hypothesis import strategies as st
from tree_sitter import Language, Parser

from adopter.lsp.edits import apply_changes, minimal_changes, split_lines
from adopter.lsp.sync import LineStarts, byte_edit, offset_of

PARSER = Parser(Language(tree_sitter_python.language()))
ALPHABET = st.sampled_from(["a", "x", " ", "(", ")", ":", "\n", "\r\n", "é", "😀", "def ", "    ", "=", '"'])
texts = st.lists(ALPHABET, max_size=40).map("".join)


def utf16_position(text: str, offset: int) -> tuple[int, int]:
    """What a client sends for a str offset: LSP line and UTF-16 column."""
    lines = split_lines(text[:offset])
    if not lines or lines[-1].endswith(("\n", "\r")):
        return len(lines), 0
    last = lines[-1]
    return len(lines) - 1, sum(2 if ord(c) > 0xFFFF else 1 for c in last)


@st.composite
def edits(draw: st.DrawFn) -> tuple[str, int, int, str]:
    text = draw(texts)
    a = draw(st.integers(0, len(text)))
    b = draw(st.integers(a, len(text)))
    # Never split a \r\n pair: a client cannot place a position between them.
    if 0 < a < len(text) and text[a - 1 : a + 1] == "\r\n":
        a -= 1
    if 0 < b < len(text) and text[b - 1 : b + 1] == "\r\n":
        b += 1
    return text, a, max(a, b), draw(texts)


@settings(max_examples=150, deadline=None)
@given(edits())
def test_byte_edit_splices_like_the_client(case: tuple[str, int, int, str]) -> None:
    text, a, b, new = case
    start, end = utf16_position(text, a), utf16_position(text, b)
    assert offset_of(text, *start) == a
    updated, edit = byte_edit(text, start, end, new)
    assert updated == text[:a] + new + text[b:]
    old_bytes, new_bytes = text.encode(), updated.encode()
    assert old_bytes[: edit.start_byte] == new_bytes[: edit.start_byte]
    assert old_bytes[edit.old_end_byte :] == new_bytes[edit.new_end_byte :]
    assert new_bytes[edit.start_byte : edit.new_end_byte] == new.encode()


@settings(max_examples=100, deadline=None)
@given(edits())
def test_incremental_reparse_equals_fresh_parse(case: tuple[str, int, int, str]) -> None:
    """The edit's bytes and points are what tree-sitter needs: re-parsing with the old tree agrees."""
    text, a, b, new = case
    tree = PARSER.parse(text.encode())
    updated, e = byte_edit(text, utf16_position(text, a), utf16_position(text, b), new)
    tree.edit(e.start_byte, e.old_end_byte, e.new_end_byte, e.start_point, e.old_end_point, e.new_end_point)
    incremental = PARSER.parse(updated.encode(), tree)
    fresh = PARSER.parse(updated.encode())
    assert str(incremental.root_node) == str(fresh.root_node)
    assert incremental.root_node.end_point == fresh.root_node.end_point


@settings(max_examples=300, deadline=None)
@given(st.lists(edits(), min_size=1, max_size=1), st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6), texts), max_size=8))
def test_line_index_follows_edit_sequences(first: list[tuple[str, int, int, str]], more: list[tuple[int, int, str]]) -> None:
    """Kept up to date edit by edit, the line index locates positions like a fresh scan does."""
    text = first[0][0]
    lines = LineStarts(text)
    for a, b, new in more:
        a, b = sorted((a % (len(text) + 1), b % (len(text) + 1)))
        if 0 < a < len(text) and text[a - 1 : a + 1] == "\r\n":
            a -= 1
        if 0 < b < len(text) and text[b - 1 : b + 1] == "\r\n":
            b += 1
        expected_text = text[:a] + new + text[b:]
        old = text
        text, edit = byte_edit(text, utf16_position(text, a), utf16_position(text, b), new, lines)
        assert text == expected_text
        assert lines.starts == LineStarts(text).starts
        assert lines.rows_are_lines == LineStarts(text).rows_are_lines
        # The points read from the index (no `\r`) or counted (`\r` present) are the same either way.
        assert edit == byte_edit(old, utf16_position(old, a), utf16_position(old, b), new)[1]


@settings(max_examples=300, deadline=None)
@given(st.lists(edits(), min_size=1, max_size=1),
       st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 3), st.sampled_from(["", "a", "xy", "\n", "é", "😀"])),
                max_size=12))
def test_pending_line_moves_read_like_a_fresh_index(first: list[tuple[str, int, int, str]],
                                                     more: list[tuple[int, int, str]]) -> None:
    """Keystrokes that add or remove no line break leave the later lines' move pending (`LineStarts._move`);
    read through the index (each line, the edits' points) without settling it, it is a fresh scan's."""
    text = first[0][0]
    lines = LineStarts(text)
    for a, width, new in more:
        a = a % (len(text) + 1)
        b = min(len(text), a + width)
        if "\r" in text[max(a - 1, 0) : b + 1]:
            continue  # CR pairs re-index from scratch (the other test)
        old = text
        text, edit = byte_edit(text, utf16_position(text, a), utf16_position(text, b), new, lines)
        fresh = LineStarts(text)
        assert len(lines) == len(fresh) and [lines[n] for n in range(len(lines))] == fresh.starts
        assert edit == byte_edit(old, utf16_position(old, a), utf16_position(old, b), new)[1]
    assert lines.starts == LineStarts(text).starts


def test_a_keystroke_moves_no_later_line_start() -> None:
    """Typing and deleting a character near the top of a long text touches none of the later lines' entries
    (their move is pending); the index still locates every line."""
    text = "x = 1\n" * 2000
    lines = LineStarts(text)
    kept = lines._starts[1000:]
    for new, width in (("a", 0), ("", 1), ("b", 0)):
        text, _ = byte_edit(text, (3, 1), (3, 1 + width), new, lines)
    assert lines._starts[1000:] == kept and lines[1000] == kept[0] + 1 and lines.offset(text, 1999, 0) == 1999 * 6 + 1


def test_positions_past_the_line_end_clamp_like_editors() -> None:
    text = "ab\ncd\n"
    assert offset_of(text, 0, 99) == 2
    assert offset_of(text, 1, 1) == 4
    assert offset_of(text, 2, 0) == 6
    assert offset_of(text, 7, 0) == 6


@settings(max_examples=150, deadline=None)
@given(texts, texts)
def test_minimal_changes_round_trip(old: str, new: str) -> None:
    assert apply_changes(old, minimal_changes(old, new)) == new


def test_minimal_changes_touch_only_what_differs() -> None:
    old = "x = 1\ny = torch.matmul(a, b)\nz = 3\n"
    new = "x = 1\ny = a @ b\nz = 3\n"
    (only,) = minimal_changes(old, new)
    assert (only.span.start_line, only.span.end_line) == (1, 1)
    assert only.span.start_col == 4 and only.new_text.startswith("a @ b")
    assert minimal_changes(old, old) == []
