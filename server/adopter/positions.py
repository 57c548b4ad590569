"""The one place that converts source positions between tree-sitter, Adopter and LSP.

Conventions:
- tree-sitter: 0-based rows, 0-based *byte* columns into the UTF-8 encoded line.
- Adopter (internal, `Span`): 0-based lines, 0-based *code-point* columns (Python `str` indices).
  Lines are tree-sitter's rows: a line ends at `\n` only (a `\r` before it stays in the line).
- LSP: 0-based lines, 0-based *UTF-16 code unit* columns (the default `positionEncoding`). Lines end
  at `LINE_BREAK`: `\r\n`, `\r` or `\n` (the LSP specification's rule, and Python's tokenizer's).

The two line rules differ only in a text with a `\r` not followed by `\n` (a lone CR): there `LspLines`
maps positions through string offsets. Everything here is pure: plain tuples in and out, no lsprotocol
import.
"""

from __future__ import annotations

import bisect
import re

from adopter.dsl.types import Span

LINE_BREAK = re.compile(r"\r\n|\r|\n")  # where an LSP line ends (see the module docstring)
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


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


def tree_sitter_point(text: str, offset: int) -> tuple[int, int]:
    """Tree-sitter's `(row, byte column)` of a `str` offset: rows end at `\\n` only (internal lines)."""
    row = text.count("\n", 0, offset)
    segment = text[text.rfind("\n", 0, offset) + 1 : offset]
    return row, (len(segment) if segment.isascii() else len(segment.encode("utf-8")))


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


# ---------------------------------------------------------------------------------------------------
# LSP lines
# ---------------------------------------------------------------------------------------------------


def split_lines(text: str) -> list[str]:
    """The LSP lines of `text` with their endings (`LINE_BREAK`; not `str.splitlines`' \\f, \\v etc.)."""
    return _LINE.findall(text)


def lsp_line_starts(text: str) -> list[int]:
    """The `str` offset where each LSP line of `text` starts."""
    return [0] + [m.end() for m in LINE_BREAK.finditer(text)]


def has_lone_cr(text: str) -> bool:
    """Whether `text` has a `\\r` not followed by `\\n`: only then do internal and LSP lines differ."""
    return "\r" in text and text.count("\r") != text.count("\r\n")


def utf16_length(text: str) -> int:
    """The length of `text` in UTF-16 code units."""
    return len(text) if text.isascii() else len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


class LspLines:
    """Converts positions of one text between Adopter's internal lines and LSP's (both directions).

    An ASCII text without a lone CR (the common case) needs no work at all; a non-ASCII one reads the
    internal line for its UTF-16 columns; a lone CR maps through string offsets.
    """

    __slots__ = ("_ascii", "_has_cr", "_lsp_starts", "_row_starts", "_rows", "_same", "_text")

    def __init__(self, text: str) -> None:
        self._text = text
        self._ascii = text.isascii()
        self._same = not has_lone_cr(text)  # internal line n is LSP line n
        self._has_cr = "\r" in text
        self._rows: list[str] | None = None
        self._row_starts: list[int] | None = None
        self._lsp_starts: list[int] | None = None

    @property
    def trivial(self) -> bool:
        """Whether internal and LSP positions are the same numbers (ASCII, no lone CR)."""
        return self._ascii and self._same

    @property
    def line_count(self) -> int:
        """How many LSP lines the text has (after a final line break, an empty one)."""
        return len(self.rows()) if self._same else len(self._lsp())

    def rows(self) -> list[str]:
        """The internal lines (split on `\\n` only)."""
        if self._rows is None:
            self._rows = self._text.split("\n")
        return self._rows

    def row(self, line: int) -> str:
        """Internal line `line`, or "" outside the text."""
        rows = self.rows()
        return rows[line] if 0 <= line < len(rows) else ""

    def _offset(self, line: int, col: int) -> int:
        if self._row_starts is None:
            starts = [0]
            for r in self.rows()[:-1]:
                starts.append(starts[-1] + len(r) + 1)
            self._row_starts = starts
        rows = self.rows()
        line = min(max(line, 0), len(rows) - 1)
        return self._row_starts[line] + min(max(col, 0), len(rows[line]))

    def _lsp(self) -> list[int]:
        if self._lsp_starts is None:
            self._lsp_starts = lsp_line_starts(self._text)
        return self._lsp_starts

    def to_lsp(self, line: int, col: int) -> tuple[int, int]:
        """Internal `(line, code-point column)` → LSP `(line, UTF-16 column)`."""
        line, col = max(line, 0), max(col, 0)
        if self._same:
            if self._has_cr:
                # A CRLF line's \r is its line break, not a character: a column past the content (a
                # syntax error's node ending at the break) is the line's end.
                row = self.row(line)
                col = min(col, len(row) - 1 if row.endswith("\r") else col)
            return (line, col) if self._ascii else to_lsp(self.row(line), line, col)
        offset = self._offset(line, col)
        starts = self._lsp()
        lsp_line = bisect.bisect_right(starts, offset) - 1
        start = starts[lsp_line]
        end = starts[lsp_line + 1] if lsp_line + 1 < len(starts) else len(self._text)
        while end > start and self._text[end - 1] in "\r\n":  # the line break is not a column
            end -= 1
        return (lsp_line, utf16_length(self._text[start : min(offset, end)]))

    def from_lsp(self, line: int, utf16_col: int) -> tuple[int, int]:
        """LSP `(line, UTF-16 column)` → internal `(line, code-point column)`, clamped to the line."""
        line = max(line, 0)
        if self._same:
            text = self.row(line)
            return from_lsp(text[:-1] if text.endswith("\r") else text, line, utf16_col)
        starts = self._lsp()
        if line >= len(starts):
            return self.from_offset(len(self._text))
        end = starts[line + 1] if line + 1 < len(starts) else len(self._text)
        content = self._text[starts[line] : end].rstrip("\r\n")
        _, col = from_lsp(content, line, utf16_col)
        return self.from_offset(starts[line] + col)

    def from_offset(self, offset: int) -> tuple[int, int]:
        """A `str` offset as an internal `(line, code-point column)`."""
        row = self._text.count("\n", 0, offset)
        return (row, offset - (self._text.rfind("\n", 0, offset) + 1))
