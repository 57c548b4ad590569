"""How an edit is handed to tree-sitter, so that its incremental re-parse reuses what it can.

tree-sitter-python re-parses everything after some edits even though they change little: a character
typed on a blank line between two classes, or a space added to a blank line, cost a whole-file parse
(5-10 ms on a 100 KB file) because the parser never finds a reusable subtree again after the edit.
Two measures, both keeping the tree exactly what a fresh parse gives (tests compare them node by
node on real files):

- A change of spaces and tabs inside a line that is blank before and after it changes no token, so
  `Tree.edit` alone (which moves the positions of every later node) is the new tree; no parse at all.
- An edit on a blank line is described to tree-sitter as starting at the line break before the
  last non-blank line above it. The parser then re-lexes that line too, which puts it back in the state
  the following statements were parsed in, and it reuses them (a whole-file parse becomes ~0.3 ms).
  Describing a larger range than the one that changed is always correct, only less reuse in theory.
"""

from __future__ import annotations

_BLANK = b" \t"


def _line_bounds(data: bytes, offset: int) -> tuple[int, int]:
    """Start and end of the line holding `offset`, a `\\r` ending it excluded."""
    start = data.rfind(b"\n", 0, offset) + 1
    end = data.find(b"\n", offset)
    end = len(data) if end < 0 else end
    if end > start and data[end - 1 : end] == b"\r":
        end -= 1
    return start, end


def _blank(data: bytes, start: int, end: int) -> bool:
    return not data[start:end].strip(_BLANK)  # a stray `\r` is not stripped: not blank


def whitespace_only(old: bytes, new: bytes, start: int, old_end: int, new_end: int) -> bool:
    """Whether `old[start:old_end]` -> `new[start:new_end]` only changes spaces and tabs of a line
    that is blank before and after the change (nothing a tokenizer sees)."""
    if b"\n" in old[start:old_end] or b"\n" in new[start:new_end]:
        return False
    a, b = _line_bounds(old, start)
    if not (a <= start and old_end <= b and _blank(old, a, b)):
        return False
    a, b = _line_bounds(new, start)
    return a <= start and new_end <= b and _blank(new, a, b)


def reparse_start(old: bytes, start: int) -> int:
    """Where to say an edit at byte `start` of `old` begins: the line break before the last
    non-blank line before it when the edited line is blank, else `start` itself."""
    a, b = _line_bounds(old, start)
    if not _blank(old, a, b):
        return start
    before = old[:a].rstrip(b" \t\r\n")
    if not before:
        return start
    return max(old.rfind(b"\n", 0, len(before)), 0)


# `common_prefix`/`common_suffix` compare this many bytes at a time, then narrow down to the byte inside the block
# that differs: the bytes before a difference are compared once (a binary search over the whole length compared
# them ~17 times: 46 -> 22 us for a keystroke's two texts of a 100 KB file, pure Python; each edit asks several).
_BLOCK = 8192


def common_prefix(a: bytes, b: bytes) -> int:
    """The length of the longest common prefix of `a` and `b`."""
    view = memoryview(a)
    n = min(len(a), len(b))
    lo = 0
    while lo < n and b.startswith(view[lo : min(n, lo + _BLOCK)], lo):  # block by block, each one C-level compare
        lo += _BLOCK
    if lo >= n:
        return n
    hi = min(n, lo + _BLOCK) - 1  # the difference lies in this block: b[lo:hi + 1] differs from a's
    while lo < hi:  # binary search, each comparison one C-level `startswith` (no copy)
        mid = (lo + hi + 1) // 2
        if b.startswith(view[lo:mid], lo):
            lo = mid
        else:
            hi = mid - 1
    return lo


def common_suffix(a: bytes, b: bytes, limit: int) -> int:
    """The length of the longest common suffix of `a` and `b`, at most `limit`."""
    view = memoryview(a)
    la, lb = len(a), len(b)
    lo = 0
    while lo < limit and b.endswith(view[la - min(limit, lo + _BLOCK) : la - lo], 0, lb - lo):
        lo += _BLOCK
    if lo >= limit:
        return limit
    hi = min(limit, lo + _BLOCK) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if b.endswith(view[la - mid : la - lo], 0, lb - lo):
            lo = mid
        else:
            hi = mid - 1
    return lo
