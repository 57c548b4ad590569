"""adopter.positions: tree-sitter bytes → code points → UTF-16, and back."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adopter.dsl.types import Span
from adopter.positions import (
    LineIndex,
    LspLines,
    byte_column,
    from_lsp,
    span_to_lsp,
    to_lsp,
)


def test_ascii_fast_path_is_identity() -> None:
    index = LineIndex(b"abc\ndef\n")
    assert index.is_ascii and index.point((1, 2)) == (1, 2)
    assert index.span((0, 1), (1, 3)) == Span(0, 1, 1, 3)


@pytest.mark.parametrize(
    "line, byte_col, col",
    [("x = 'é' + y", 9, 8), ("😀😀x", 8, 2), ("a€b", 4, 2), ("a€b", 1, 1), ("ascii", 3, 3)],
)
def test_byte_to_code_point_columns(line: str, byte_col: int, col: int) -> None:
    data = ("first line\n" + line + "\n").encode()
    assert LineIndex(data).column(1, byte_col) == col
    assert byte_column(line, col) == byte_col


@pytest.mark.parametrize(
    "line, col, utf16", [("abc", 2, 2), ("é x", 2, 2), ("😀x", 1, 2), ("😀😀x", 2, 4), ("a😀b", 3, 4)]
)
def test_lsp_utf16_round_trip(line: str, col: int, utf16: int) -> None:
    assert to_lsp(line, 3, col) == (3, utf16)
    assert from_lsp(line, 3, utf16) == (3, col)


def test_from_lsp_clamps_past_the_end() -> None:
    assert from_lsp("ab", 0, 10) == (0, 2) and from_lsp("a😀", 0, 10) == (0, 2)


def test_span_to_lsp_uses_each_lines_text() -> None:
    lines = ["😀 = 1", "x = '😀' + y"]
    assert span_to_lsp(Span(0, 1, 1, 8), lines) == ((0, 2), (1, 9))


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=30))
def test_columns_agree_for_any_line(line: str) -> None:
    data = line.encode("utf-8")
    index = LineIndex(data)
    for col in range(len(line) + 1):
        b = byte_column(line, col)
        assert index.column(0, b) == col
        utf16 = to_lsp(line, 0, col)[1]
        assert utf16 == len(line[:col].encode("utf-16-le")) // 2
        assert from_lsp(line, 0, utf16) == (0, col)


# --- LSP lines: one line-break rule (\r\n, \r, \n) for every conversion to and from LSP positions -------

_TEXT = st.lists(st.sampled_from(["a", " ", "\n", "\r", "\r\n", "é", "😀"]), max_size=30).map("".join)


def _lsp_reference(text: str, offset: int) -> tuple[int, int]:
    """LSP (line, UTF-16 column) of a str offset, reading the text a character at a time."""
    line = start = i = 0
    while i < offset:
        step = 2 if text[i : i + 2] == "\r\n" else 1
        if text[i] in "\r\n":
            line, start = line + 1, i + step
        i += step
    return line, len(text[start:offset].encode("utf-16-le")) // 2


@given(_TEXT)
def test_lsp_lines_agree_with_the_lsp_rule_at_every_offset(text: str) -> None:
    from adopter.positions import LspLines

    lines = LspLines(text)
    for offset in range(len(text) + 1):
        if 0 < offset < len(text) and text[offset - 1] == "\r" and text[offset] == "\n":
            continue  # inside a CRLF: no position
        internal = lines.from_offset(offset)
        lsp = lines.to_lsp(*internal)
        assert lsp == _lsp_reference(text, offset), (text, offset)
        assert lines.from_lsp(*lsp) == internal, (text, offset)


def test_a_lone_cr_ends_an_lsp_line_but_not_an_internal_one() -> None:
    from adopter.positions import LspLines, split_lines

    text = 'a = 1\rb = "é😀"\r\nc = 2\n'
    lines = LspLines(text)
    assert split_lines(text) == ["a = 1\r", 'b = "é😀"\r\n', "c = 2\n"]
    assert not lines.trivial and lines.line_count == 4
    assert lines.to_lsp(0, 6) == (1, 0) and lines.to_lsp(0, 12) == (1, 6) and lines.to_lsp(1, 0) == (2, 0)
    assert lines.from_lsp(1, 99) == (0, 14)  # clamped to the line's end, before its line break
    assert LspLines("x\r\ny\n").trivial and LspLines("x\r\ny\n").from_lsp(0, 5) == (0, 1)


def test_a_column_on_a_crlf_lines_break_is_the_lines_end() -> None:
    """A syntax error's node can end after the \\r of a CRLF line: the LSP position is the line's end."""
    lines = LspLines("x = (\r\ny = 1\r\n")
    assert lines.to_lsp(0, 6) == (0, 5) and lines.to_lsp(0, 5) == (0, 5) and lines.to_lsp(1, 2) == (1, 2)
    assert LspLines("é = (\r\n").to_lsp(0, 6) == (0, 5)
    # The same with a lone \r further on (positions then go through string offsets).
    lone = LspLines("x = (\r\ny = 1\rz = 2\n")
    assert lone.to_lsp(0, 6) == (0, 5) and lone.to_lsp(1, 6) == (2, 0) and lone.to_lsp(1, 5) == (1, 5)
