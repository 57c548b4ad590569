"""Where the user points: the model class at a position of an analysed document (hover, commands)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from adopter.dsl.types import Architecture, Ctor
from adopter.lsp.pipeline import Snapshot

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def word_at(line_text: str, col: int) -> tuple[str, int, int] | None:
    """The identifier covering column `col` (or ending right before it), with its columns."""
    for match in _WORD.finditer(line_text):
        if match.start() <= col <= match.end():
            return match.group(), match.start(), match.end()
    return None


def _callees(ctor: Ctor) -> Iterator[str]:
    yield ctor.callee
    for item in ctor.items:
        yield from _callees(item)


def architecture_at(snapshot: Snapshot, line: int, col: int) -> Architecture | None:
    """The model class hovered at an internal position: by name, class header, or constructing line."""
    module_file = snapshot.module_file
    if module_file is None:
        return None
    lines = snapshot.text.split("\n")
    word = word_at(lines[line], col) if 0 <= line < len(lines) else None
    by_name = {a.name: a for a in module_file.architectures}
    if word is not None and word[0] in by_name:
        return by_name[word[0]]
    for arch in module_file.architectures:
        if arch.span.start_line == line:
            return arch
        for binding in arch.init.bindings if arch.init else ():
            if binding.span.start_line <= line <= binding.span.end_line and isinstance(binding.value, Ctor):
                for callee in _callees(binding.value):
                    if callee.rsplit(".", 1)[-1] in by_name:
                        return by_name[callee.rsplit(".", 1)[-1]]
    return None


def enclosing(snapshot: Snapshot, line: int) -> Architecture | None:
    """The innermost model class whose lines hold `line`."""
    module_file = snapshot.module_file
    inside = [a for a in module_file.architectures if a.span.start_line <= line <= a.span.end_line] if module_file else []
    return min(inside, key=lambda a: a.span.end_line - a.span.start_line) if inside else None
