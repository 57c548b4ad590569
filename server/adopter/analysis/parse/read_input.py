"""A read callback for tree-sitter's `Parser.parse` that leaves nothing behind.

`Parser.parse(callable)` (the only form that honours `progress_callback`, which `verdict.parse_within`
needs) keeps one reference to every object the callable returns, for ever: py-tree-sitter 0.26.1's
`parser_read_wrapper` takes the buffer of the call's result (`PyObject_GetBuffer`, released later) but never
drops the call's own reference (`tree_sitter/binding/parser.c`, still so at the binding's main branch in
December 2026). Every chunk returned is a slice of the edited text, so each keystroke's re-parse kept that
version's whole text alive: the server grew by about the file's size per keystroke (BERT: 67 MB after 200
edits, 75 MB after 400, from 53 MB when opened).

`Reader` remembers what it returned and `release` drops the reference the binding keeps, but only when
`leaks()` has seen the binding keep one (a probe parse of a few bytes, once per process), so a binding that
is fixed gets nothing dropped twice.
"""

from __future__ import annotations

import ctypes
import sys

from adopter.analysis.parse.source import new_parser

_leaks: bool | None = None


def leaks() -> bool:
    """Whether `Parser.parse(callable)` keeps one reference to each object the callable returns (probed once,
    on a parser of its own: a parse of a tiny text, comparing a returned chunk's reference count with one
    never handed over)."""
    global _leaks
    if _leaks is None:
        text = memoryview(b"x = 1\n")
        kept: list[memoryview] = []

        def read(offset: int, _point: tuple[int, int]) -> memoryview:
            chunk = text[offset:]
            kept.append(chunk)
            return chunk

        new_parser().parse(read)
        # Counted the same way as a chunk never handed over (held by one list, read in one loop): what
        # differs is what the binding kept.
        held = [*kept, text[0:]]
        kept.clear()
        *counts, base = [sys.getrefcount(chunk) for chunk in held]
        extra = {count - base for count in counts}
        _leaks = extra == {1}  # exactly one each: anything else is not the known leak, so touch nothing
    return _leaks


class Reader:
    """`data` served to `Parser.parse` from any offset; `release()` after each parse that used it."""

    __slots__ = ("_given", "_view")

    def __init__(self, data: bytes) -> None:
        self._view = memoryview(data)
        self._given: list[memoryview] = []

    def __call__(self, offset: int, _point: tuple[int, int]) -> memoryview:
        chunk = self._view[offset:]
        self._given.append(chunk)
        return chunk

    def release(self) -> None:
        """Drop the binding's reference to each chunk handed over (when it keeps one), then ours. Only after
        `parse` has returned (or raised): the binding holds the last chunk's buffer until then."""
        if self._given and leaks():
            for chunk in self._given:
                ctypes.pythonapi.Py_DecRef(ctypes.py_object(chunk))
        self._given.clear()
