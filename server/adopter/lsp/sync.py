"""Turn LSP content changes into the byte/point edits tree-sitter's incremental parse needs.

pygls has already applied each change to its own copy of the document; the analysis keeps a second
copy (the text it last parsed) and replays the same changes on it, because tree-sitter needs the
positions of every change relative to the text *before* that change. The two copies are compared
afterwards; any disagreement makes the caller fall back to a full re-parse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from adopter.positions import from_lsp

_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class ByteEdit:
    """One edit as tree-sitter's `Tree.edit` wants it, plus the text after the edit."""

    start_byte: int
    old_end_byte: int
    new_end_byte: int
    start_point: tuple[int, int]  # (row, byte column)
    old_end_point: tuple[int, int]
    new_end_point: tuple[int, int]
    new_text: str


def _line_start(text: str, line: int) -> int:
    """The str offset where LSP line `line` starts (clamped to the end of the text)."""
    if line <= 0:
        return 0
    if "\r" not in text:  # the common case: only \n breaks, str.find is fast
        pos = -1
        for _ in range(line):
            pos = text.find("\n", pos + 1)
            if pos < 0:
                return len(text)
        return pos + 1
    count = 0
    for match in _BREAK.finditer(text):
        count += 1
        if count == line:
            return match.end()
    return len(text)


def _line_end(text: str, start: int) -> int:
    match = _BREAK.search(text, start)
    return match.start() if match else len(text)


def offset_of(text: str, line: int, utf16_col: int) -> int:
    """The str offset of an LSP position (UTF-16 column), clamped to its line like clients do."""
    start = _line_start(text, line)
    if start >= len(text) and line > 0 and not _ends_with_break_at(text, start):
        return len(text)
    end = _line_end(text, start)
    _, col = from_lsp(text[start:end], line, utf16_col)
    return min(start + col, end)


def _ends_with_break_at(text: str, start: int) -> bool:
    return start > 0 and text[start - 1] in "\r\n"


def _point(text: str, offset: int) -> tuple[int, int]:
    """Tree-sitter's point for a str offset: rows split on \\n only, columns in UTF-8 bytes."""
    row = text.count("\n", 0, offset)
    line_start = text.rfind("\n", 0, offset) + 1
    segment = text[line_start:offset]
    return row, (len(segment) if segment.isascii() else len(segment.encode("utf-8")))


def _byte_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def byte_edit(text: str, start: tuple[int, int], end: tuple[int, int], new_text: str) -> tuple[str, ByteEdit]:
    """Apply one ranged change (LSP line/UTF-16 positions) to `text`; return the new text and its edit."""
    a = offset_of(text, *start)
    b = max(a, offset_of(text, *end))
    updated = text[:a] + new_text + text[b:]
    start_byte = _byte_len(text[:a])
    edit = ByteEdit(
        start_byte=start_byte,
        old_end_byte=start_byte + _byte_len(text[a:b]),
        new_end_byte=start_byte + _byte_len(new_text),
        start_point=_point(text, a),
        old_end_point=_point(text, b),
        new_end_point=_point(updated, a + len(new_text)),
        new_text=updated,
    )
    return updated, edit
