"""Where words occur in a document's text, carried from its previous text edit by edit.

The analysis asks of the whole text whether it holds a few words (`import *`, `optim`, `Sequential`,
the names of its functions...) at every keystroke. A substring search of a 200 KB text costs 0.1-0.3
ms in CPython, whatever the word: a dozen of them were ~2 ms of every edit of seamless_m4t. An edit
changes one place, so the occurrences outside it are known from the text before it: those wholly in the
common prefix stay where they were, those wholly in the common suffix move by the change in length, and
only the changed region (widened by the word's length less one on each side) is searched again.

`WordIndex.moved(data)` gives the index of the next text; it answers exactly what a search of that text
would (`tests/analysis/test_word_index.py` checks it against `bytes.find` over random edits).
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterator

from adopter.analysis.parse.reparse import common_prefix, common_suffix


def _find_all(data: bytes, word: bytes, start: int = 0, end: int | None = None) -> list[int]:
    """Every offset where `word` occurs wholly inside `data[start:end]` (overlapping ones included)."""
    stop = len(data) if end is None else end
    found: list[int] = []
    find = data.find
    at = find(word, start, stop)
    while at >= 0:
        found.append(at)
        at = find(word, at + 1, stop)
    return found


def whole_word_at(data: bytes | bytearray, at: int, end: int, stop: int | None = None) -> bool:
    """Whether `data[at:end]` stands as a whole word: no identifier byte (ASCII letter, digit, `_`) touches it
    on either side, `data[:stop]` being the text (a buffer may hold more)."""
    limit = len(data) if stop is None else stop
    before = data[at - 1 : at] if at else b" "
    after = data[end : end + 1] if end < limit else b" "
    return not (before.isalnum() or before == b"_") and not (after.isalnum() or after == b"_")


def whole_words(data: bytes | bytearray, word: bytes, stop: int | None = None) -> Iterator[int]:
    """The offsets where `word` occurs in `data[:stop]` as a whole word (`whole_word_at`), ascending."""
    limit = len(data) if stop is None else stop
    at = data.find(word, 0, limit)
    while at >= 0:
        end = at + len(word)
        if whole_word_at(data, at, end, limit):
            yield at
        at = data.find(word, end, limit)


_WORD_CHAR = re.compile(r"\w")


def groups_at_word_starts(pattern: re.Pattern[str], text: str) -> list[str]:
    r"""What `re.compile(r"\b" + pattern.pattern).findall(text)` gives, in order, for a `pattern` with one group
    that starts with a literal word character (`self\.(\w+)\(`). A leading `\b` keeps the regex engine from
    jumping to the pattern's literal start: it tries every offset, ten times slower over a forward's text
    (issue 22). Here the pattern is searched as written and a match where a word character (`\w`, as `\b` reads
    it) comes before is dropped, the search going on from the next offset, as `\b`'s did."""
    found: list[str] = []
    search = pattern.search
    at = 0
    while (m := search(text, at)) is not None:
        start = m.start()
        if start and _WORD_CHAR.match(text, start - 1):
            at = start + 1
            continue
        found.append(m.group(1))
        at = m.end()
    return found


def matches_at_word_starts(pattern: re.Pattern[bytes], data: bytes) -> Iterator[re.Match[bytes]]:
    r"""What `re.compile(rb"\b" + pattern.pattern).finditer(data)` gives, in order, for a bytes `pattern` that starts
    with a literal word character (`self\.(\w+)\s*\(`): the pattern searched as written (its literal start lets the
    engine jump), a match with a word character (ASCII `\w`, as a bytes `\b` reads it) before it dropped and the
    search going on from the next offset (`groups_at_word_starts`, for bytes)."""
    search = pattern.search
    at = 0
    while (m := search(data, at)) is not None:
        start = m.start()
        if start and (data[start - 1] in _WORD_BYTES):
            at = start + 1
            continue
        yield m
        at = m.end()


_WORD_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


class WordIndex:
    """The offsets of the words asked about in one text; immutable once handed out (`moved` builds the
    next text's index, so a `SourceText` of an older text keeps answering for that text)."""

    __slots__ = ("_at", "_carry", "data")

    def __init__(self, data: bytes, *, carry: bool = True) -> None:
        self.data = data
        self._at: dict[bytes, list[int]] = {}
        # Whether answers are kept for the next text (a document being edited). Without it `occurs` is a
        # plain `in`, which may stop at the first occurrence (a one-off analysis: nothing to carry).
        self._carry = carry

    @property
    def carries(self) -> bool:
        """Whether this index is a document's, kept for its next text."""
        return self._carry

    def positions(self, word: bytes) -> list[int]:
        """Every offset of `word` in the text, ascending (overlapping occurrences included)."""
        if not word:
            raise ValueError("empty word")
        found = self._at.get(word)
        if found is None:
            found = self._at[word] = _find_all(self.data, word)
        return found

    def occurs(self, word: bytes) -> bool:
        """`word in data`."""
        found = self._at.get(word)
        if found is not None:
            return bool(found)
        if not self._carry:
            return word in self.data
        return bool(self.positions(word))

    def moved(self, data: bytes) -> WordIndex:
        """The index of `data`, the document's next text: the words asked about here, carried."""
        nxt = WordIndex(data, carry=True)
        old = self.data
        if data is old or data == old:
            nxt._at = dict(self._at)  # the lists are never mutated: shared
            return nxt
        if not self._at:
            return nxt
        p = common_prefix(old, data)
        s = common_suffix(old, data, min(len(old), len(data)) - p)  # p + s <= both lengths
        delta = len(data) - len(old)
        old_tail = len(old) - s  # old offsets from here on lie in the common suffix (when the word fits)
        new_tail = len(data) - s
        for word, found in self._at.items():
            size = len(word)
            head = found[: bisect_right(found, p - size)]  # x + size <= p: wholly in the common prefix
            tail = found[bisect_left(found, old_tail):]  # x >= len(old) - s: wholly in the common suffix
            # Occurrences touching the changed region: x > p - size and x < len(new) - s.
            middle = _find_all(data, word, max(0, p - size + 1), min(len(data), new_tail + size - 1))
            if delta:
                tail = list(map(delta.__add__, tail))
            nxt._at[word] = head + middle + tail
        return nxt
