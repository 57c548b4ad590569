"""The one place that converts source positions between tree-sitter, Adopter, LSP and libcst.

Conventions:
- tree-sitter: 0-based rows, 0-based *byte* columns into the UTF-8 encoded line.
- Adopter (internal, `Span`): 0-based lines, 0-based *code-point* columns (Python `str` indices).
- LSP: 0-based lines, 0-based *UTF-16 code unit* columns (the default `positionEncoding`).
- libcst: 1-based lines, 0-based code-point columns.

Everything here is pure: plain tuples in and out, no lsprotocol or libcst import.
"""

from __future__ import annotations

from adopter.dsl.types import Span


class LineIndex:
    """Converts tree-sitter byte columns of one source text to code-point columns.

    ASCII sources (the common case) take a fast path where byte and code-point columns coincide;
    otherwise each non-ASCII line is decoded once, lazily, when a column on it is asked for.
    """

    __slots__ = ("_ascii", "_data", "_line_starts", "_non_ascii_rows")

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._ascii = data.isascii()
        self._line_starts: list[int] | None = None
        self._non_ascii_rows: dict[int, bytes] = {}

    @property
    def is_ascii(self) -> bool:
        return self._ascii

    def _line_bytes(self, row: int) -> bytes:
        cached = self._non_ascii_rows.get(row)
        if cached is not None:
            return cached
        if self._line_starts is None:
            starts = [0]
            find = self._data.find
            pos = find(b"\n")
            while pos >= 0:
                starts.append(pos + 1)
                pos = find(b"\n", pos + 1)
            self._line_starts = starts
        starts = self._line_starts
        if row >= len(starts):
            return b""
        end = starts[row + 1] - 1 if row + 1 < len(starts) else len(self._data)
        line = self._data[starts[row] : end]
        self._non_ascii_rows[row] = line
        return line

    def column(self, row: int, byte_col: int) -> int:
        """The code-point column of byte column `byte_col` on line `row`."""
        if self._ascii or byte_col == 0:
            return byte_col
        prefix = self._line_bytes(row)[:byte_col]
        if prefix.isascii():
            return byte_col
        # A column inside a multi-byte character counts the partial character (errors="ignore" drops it).
        return len(prefix.decode("utf-8", errors="ignore"))

    def point(self, point: tuple[int, int]) -> tuple[int, int]:
        """A tree-sitter `(row, byte column)` point as an internal `(line, code-point column)`."""
        return (point[0], self.column(point[0], point[1]))

    def span(self, start: tuple[int, int], end: tuple[int, int]) -> Span:
        """A `Span` from two tree-sitter points."""
        if self._ascii:
            return Span(start[0], start[1], end[0], end[1])
        return Span(start[0], self.column(start[0], start[1]), end[0], self.column(end[0], end[1]))


def byte_column(line_text: str, col: int) -> int:
    """Internal code-point column → UTF-8 byte column on the same line (for tree-sitter edits)."""
    head = line_text[:col]
    return col if head.isascii() else len(head.encode("utf-8"))


def to_lsp(line_text: str, line: int, col: int) -> tuple[int, int]:
    """Internal `(line, code-point column)` → LSP `(line, UTF-16 column)`; `line_text` is that line."""
    head = line_text[:col]
    if head.isascii():
        return (line, col)
    # Characters outside the BMP take two UTF-16 code units.
    return (line, col + sum(1 for ch in head if ord(ch) > 0xFFFF))


def from_lsp(line_text: str, line: int, utf16_col: int) -> tuple[int, int]:
    """LSP `(line, UTF-16 column)` → internal `(line, code-point column)`; clamps to the line end."""
    if line_text.isascii():
        return (line, min(utf16_col, len(line_text)))
    units = 0
    for index, ch in enumerate(line_text):
        if units >= utf16_col:
            return (line, index)
        units += 2 if ord(ch) > 0xFFFF else 1
    return (line, len(line_text))


def span_to_lsp(span: Span, lines: list[str]) -> tuple[tuple[int, int], tuple[int, int]]:
    """A `Span` → LSP `((start line, char), (end line, char))`, given the document's lines."""

    def line_at(n: int) -> str:
        return lines[n] if 0 <= n < len(lines) else ""

    return (
        to_lsp(line_at(span.start_line), span.start_line, span.start_col),
        to_lsp(line_at(span.end_line), span.end_line, span.end_col),
    )


def to_libcst(line: int, col: int) -> tuple[int, int]:
    """Internal `(line, column)` → libcst `CodePosition` fields `(line, column)` (1-based line)."""
    return (line + 1, col)


def from_libcst(line: int, col: int) -> tuple[int, int]:
    """libcst `(line, column)` (1-based line) → internal `(line, column)`."""
    return (line - 1, col)


def span_to_libcst(span: Span) -> tuple[tuple[int, int], tuple[int, int]]:
    """A `Span` → libcst `((start line, col), (end line, col))` with 1-based lines."""
    return (to_libcst(span.start_line, span.start_col), to_libcst(span.end_line, span.end_col))
