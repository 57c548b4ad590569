"""Smallest text edits turning one text into another, in Adopter's internal positions.

A rewrite returns the whole new file; sending it back as one whole-file edit would move the user's
cursor, folds and breakpoints and clash with concurrent typing. We diff line by line, then trim each
changed block to the characters that really differ.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from adopter.dsl.types import Span
from adopter.positions import split_lines

__all__ = ["TextChange", "minimal_changes", "split_lines"]


@dataclass(frozen=True, slots=True)
class TextChange:
    """Replace the text at `span` (internal positions of the old text) with `new_text`."""

    span: Span
    new_text: str


def _offset_to_pos(line_starts: list[int], offset: int, ends_open: bool) -> tuple[int, int]:
    """Offset -> (line, col). `line_starts` ends with len(text); `ends_open`: no final newline."""
    last = len(line_starts) - 1  # the line after the final line ending
    if ends_open and last > 0 and offset >= line_starts[last - 1]:
        return last - 1, offset - line_starts[last - 1]
    lo, hi = 0, last
    while lo < hi:  # the last line start <= offset
        mid = (lo + hi + 1) // 2
        if line_starts[mid] <= offset:
            lo = mid
        else:
            hi = mid - 1
    return lo, offset - line_starts[lo]


def _line_starts(lines: list[str]) -> list[int]:
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    return starts


def minimal_changes(old: str, new: str) -> list[TextChange]:
    """The non-overlapping changes, in document order, that turn `old` into `new`."""
    if old == new:
        return []
    old_lines = split_lines(old)
    new_lines = split_lines(new)
    old_starts = _line_starts(old_lines)
    new_starts = _line_starts(new_lines)
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    changes: list[TextChange] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        a_start, a_end = old_starts[i1], old_starts[i2]
        b_start, b_end = new_starts[j1], new_starts[j2]
        # Trim the characters both sides share, so a one-word change is a one-word edit.
        a_block, b_block = old[a_start:a_end], new[b_start:b_end]
        prefix = 0
        limit = min(len(a_block), len(b_block))
        while prefix < limit and a_block[prefix] == b_block[prefix]:
            prefix += 1
        suffix = 0
        while suffix < limit - prefix and a_block[-1 - suffix] == b_block[-1 - suffix]:
            suffix += 1
        start = a_start + prefix
        end = a_end - suffix
        open_end = bool(old) and old[-1] not in "\r\n"
        start_line, start_col = _offset_to_pos(old_starts, start, open_end)
        end_line, end_col = _offset_to_pos(old_starts, end, open_end)
        changes.append(
            TextChange(
                Span(start_line, start_col, end_line, end_col),
                new[b_start + prefix : b_end - suffix],
            )
        )
    return changes


def apply_changes(text: str, changes: list[TextChange]) -> str:
    """Apply non-overlapping changes given in old-text positions (the inverse of `minimal_changes`)."""
    lines = split_lines(text)
    starts = _line_starts(lines)

    def offset(line: int, col: int) -> int:
        return starts[min(line, len(lines))] + col

    out: list[str] = []
    cursor = 0
    for change in sorted(changes, key=lambda c: (c.span.start_line, c.span.start_col)):
        a = offset(change.span.start_line, change.span.start_col)
        b = offset(change.span.end_line, change.span.end_col)
        out.append(text[cursor:a])
        out.append(change.new_text)
        cursor = b
    out.append(text[cursor:])
    return "".join(out)
