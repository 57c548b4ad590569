"""Turn LSP content changes into text splices and the byte/point edits tree-sitter's incremental
parse needs.

Tree-sitter needs each change's position relative to the text *before* that change, in UTF-8 bytes
and (row, byte column) points; clients send LSP lines and UTF-16 columns. `LineStarts` keeps the line
index of the document current, so locating a change costs a few slices, not a pass over the text.
"""

from __future__ import annotations

import bisect
from array import array
from dataclasses import dataclass

from adopter.positions import LINE_BREAK, from_lsp, tree_sitter_point


@dataclass(frozen=True, slots=True)
class ByteEdit:
    """One edit as tree-sitter's `Tree.edit` wants it."""

    start_byte: int
    old_end_byte: int
    new_end_byte: int
    start_point: tuple[int, int]  # (row, byte column)
    old_end_point: tuple[int, int]
    new_end_point: tuple[int, int]


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
    for match in LINE_BREAK.finditer(text):
        count += 1
        if count == line:
            return match.end()
    return len(text)


def _line_end(text: str, start: int) -> int:
    match = LINE_BREAK.search(text, start)
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


def _byte_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


class LineStarts:
    """Where each LSP line starts in a text, kept up to date edit by edit.

    Locating a position by scanning for line breaks costs a pass over the text per change; this index
    costs one pass at open and, per change that adds or removes no line break, a move of the lines after
    it that is kept pending (`_moved`, `_delta`): the next change at the same place adds to it, one
    elsewhere applies it to the lines between the two places only. Moving every later line per keystroke
    cost 0.15 ms near the top of BERT.
    """

    def __init__(self, text: str) -> None:
        self._starts: list[int] | array[int] = []
        self._moved = 0  # the entries from this index on are `_delta` short of where their line starts
        self._delta = 0
        self.rows_are_lines = True
        self._index(text)

    def _index(self, text: str) -> None:
        self._starts = [0] + [m.end() for m in LINE_BREAK.finditer(text)]
        self._moved, self._delta = 0, 0
        # No `\r` in the text: its LSP lines are tree-sitter's rows (which end at `\n` only), so a row is
        # a look-up here instead of a count of the line breaks before an offset.
        self.rows_are_lines = "\r" not in text

    @property
    def starts(self) -> list[int] | array[int]:
        """Where each line starts, every pending move applied."""
        self._settle()
        return self._starts

    def __len__(self) -> int:
        return len(self._starts)

    def __getitem__(self, line: int) -> int:
        """Where line `line` (0 or more) starts."""
        return self._starts[line] + (self._delta if line >= self._moved else 0)

    def _settle(self) -> None:
        if self._delta:  # only a list has a pending move: `compact` settles first
            starts, moved = self._starts, self._moved
            assert isinstance(starts, list)
            starts[moved:] = [x + self._delta for x in starts[moved:]]
            self._moved, self._delta = 0, 0

    def _move(self, first: int, delta: int) -> None:
        """Lines `first` on move by `delta`: the pending move now starts at `first`."""
        starts, moved, pending = self._starts, self._moved, self._delta
        assert isinstance(starts, list)  # `replace` made it one
        if pending and first > moved:  # the lines between keep the pending move: apply it to them
            starts[moved:first] = [x + pending for x in starts[moved:first]]
        elif pending and first < moved:  # the lines between do not have it: take it off them
            starts[first:moved] = [x - pending for x in starts[first:moved]]
        self._moved, self._delta = first, pending + delta

    def _bisect(self, offset: int) -> int:
        """`bisect_right` of `offset` in the line starts (how many lines start at or before it)."""
        starts, moved = self._starts, self._moved
        if not self._delta:
            return bisect.bisect_right(starts, offset)
        i = bisect.bisect_right(starts, offset, 0, moved)
        return i if i < moved else bisect.bisect_right(starts, offset - self._delta, moved)

    def compact(self) -> None:
        """Hold the offsets as machine integers (8 bytes a line instead of 36) until the next change: for
        documents nobody is editing (`adopter.lsp.documents`)."""
        self._settle()
        if isinstance(self._starts, list):
            self._starts = array("q", self._starts)

    def offset(self, text: str, line: int, utf16_col: int) -> int:
        """The str offset of an LSP position, clamped to its line like clients do."""
        if line >= len(self._starts):
            return len(text)
        start = self[max(line, 0)]
        end = len(text)
        if line + 1 < len(self._starts):
            end = self[line + 1]
            end -= 2 if text[end - 2 : end] == "\r\n" else 1
        _, col = from_lsp(text[start:end], line, utf16_col)
        return min(start + col, end)

    def replace(self, old_text: str, a: int, b: int, new: str, new_text: str) -> None:
        """Update the index for `old_text[a:b]` replaced by `new` (giving `new_text`)."""
        if "\r" in new or "\r" in old_text[max(a - 1, 0) : b + 1]:
            self._index(new_text)  # CR pairs: start over
            return
        if not isinstance(self._starts, list):
            self._settle()
            self._starts = self._starts.tolist()
        first = self._bisect(a)
        last = self._bisect(b)
        delta = len(new) - (b - a)
        added = [a + i + 1 for i, ch in enumerate(new) if ch == "\n"] if "\n" in new else []
        if first == last and not added:  # no line break removed or added: the later lines move
            if delta:
                self._move(first, delta)
            return
        self._settle()
        self._starts[first:] = added + [start + delta for start in self._starts[last:]]

    def point(self, text: str, offset: int) -> tuple[int, int]:
        """`tree_sitter_point(text, offset)` for the text this index is of, when `rows_are_lines`."""
        row = self._bisect(offset) - 1
        segment = text[self[row] : offset]
        return row, (len(segment) if segment.isascii() else len(segment.encode("utf-8")))


def byte_edit(
    text: str, start: tuple[int, int], end: tuple[int, int], new_text: str, lines: LineStarts | None = None
) -> tuple[str, ByteEdit]:
    """Apply one ranged change (LSP line/UTF-16 positions) to `text`; return the new text and its edit.

    `lines`, when given, is the line index of `text`; it is updated to the new text.
    """
    if lines is not None:
        a = lines.offset(text, *start)
        b = max(a, lines.offset(text, *end))
    else:
        a = offset_of(text, *start)
        b = max(a, offset_of(text, *end))
    updated = text[:a] + new_text + text[b:]
    if lines is not None and lines.rows_are_lines:
        start_point, old_end_point = lines.point(text, a), lines.point(text, b)
    else:
        start_point, old_end_point = tree_sitter_point(text, a), tree_sitter_point(text, b)
    if lines is not None:
        lines.replace(text, a, b, new_text, updated)
    start_byte = _byte_len(text[:a])
    edit = ByteEdit(
        start_byte=start_byte,
        old_end_byte=start_byte + _byte_len(text[a:b]),
        new_end_byte=start_byte + _byte_len(new_text),
        start_point=start_point,
        old_end_point=old_end_point,
        new_end_point=(lines.point(updated, a + len(new_text)) if lines is not None and lines.rows_are_lines
                       else tree_sitter_point(updated, a + len(new_text))),
    )
    return updated, edit
