"""adopter.positions: tree-sitter bytes → code points → UTF-16 / libcst, and back."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adopter.dsl.types import Span
from adopter.positions import (
    LineIndex,
    byte_column,
    from_libcst,
    from_lsp,
    span_to_libcst,
    span_to_lsp,
    to_libcst,
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


def test_libcst_lines_are_one_based() -> None:
    assert to_libcst(0, 4) == (1, 4) and from_libcst(1, 4) == (0, 4)
    assert span_to_libcst(Span(2, 0, 3, 5)) == ((3, 0), (4, 5))


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
