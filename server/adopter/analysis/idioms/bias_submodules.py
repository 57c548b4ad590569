"""The submodules whose call adds a term to its input (`names.bias_forward`): same-file classes and imported ones.

`self.cpb = ContinuousPositionBias(...)` (dalle2-pytorch, nuwa-pytorch: a class of the same file) or
`self.rel_pos = RelPosBias(...)` (timm's gcvit: imported by name from `timm.layers`, defined in
`timm/layers/pos_embed_rel.py`), bound once in `__init__`: when the class's forward returns its input plus a
term not computed from it, the flow reads `s = self.cpb(s)` as `s + term`. A class of another file is read
through cross-file reach (its definition found as the name's import resolves, re-exports followed), which
makes that file a dependency of the analysis (`reads`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import Any

from adopter.analysis.names.bias_forward import forward_adds_term, forward_text_adds_term
from adopter.analysis.parse.source import SourceText
from adopter.analysis.scope.classes import ClassTable
from adopter.dsl.types import Ctor, Init

# `x = self.attr(x, ...)` from its `=` on: the name before it is read backwards (`updated_attributes`). Searched
# from each identifier instead (`\b(\w+)\s*=...`), the pattern is tried at every word of the forward: 8.8 ms over
# T5's 106 KB, against 1.4 ms from the `=`s.
_UPDATE = re.compile(rb"=\s*self\.([A-Za-z_]\w*)\(\s*([A-Za-z_]\w*)\s*[,)]")
_SPACE = frozenset(b" \t\n\r\f\v")  # what `\s` matches in a bytes pattern
_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")  # `\w`, bytes pattern
_DIGITS = frozenset(b"0123456789")
# a qualified class name -> its definition (and its file's functions: `idioms.random_layers.reading_of`), or None
ImportedClass = Callable[[str], tuple[ast.ClassDef, Any] | None]


def bias_submodules(init: Init | None, table: ClassTable, src: SourceText,
                    imported: ImportedClass | None = None, forward: bytes = b"") -> frozenset[str]:
    """The attributes `__init__` binds once, unconditionally, to a module whose forward returns its input plus
    a term not computed from it (`imported`: the definition of a class of another file, when reachable), among
    those the text `forward` calls as `x = self.attr(x, ...)` (only such a call is read; the others' classes
    are never looked up, nor their files read)."""
    if init is None or b"self." not in forward:
        return frozenset()
    updated = updated_attributes(forward)
    if not updated:
        return frozenset()
    counts: dict[str, int] = {}
    for b in init.bindings:
        counts[b.attr] = counts.get(b.attr, 0) + 1
    found: set[str] = set()
    for b in init.bindings:
        ctor = b.value
        if not isinstance(ctor, Ctor) or ctor.items or ctor.repeat is not None or b.condition is not None:
            continue
        if counts[b.attr] != 1 or b.attr not in updated:
            continue
        if _adds_term(ctor.callee, table, src, imported):
            found.add(b.attr)
    return frozenset(found)


def updated_attributes(text: bytes) -> set[str]:
    """The attributes `text` calls as `x = self.attr(x, ...)`, the assigned name being the first argument: the
    matches of `\\b([A-Za-z_]\\w*)\\s*=\\s*self\\.([A-Za-z_]\\w*)\\(\\s*([A-Za-z_]\\w*)\\s*[,)]` whose first and
    third groups are equal. In each such match only blanks lie between the name and the `=`, and no `=` lies
    after it, so the matches from each `=` on, with the name read backwards from it (the whole run of word
    bytes before the blanks, not starting with a digit), are the same matches."""
    found: set[str] = set()
    for m in _UPDATE.finditer(text):
        end = m.start()
        while end > 0 and text[end - 1] in _SPACE:
            end -= 1
        start = end
        while start > 0 and text[start - 1] in _WORD:
            start -= 1
        if start < end and text[start] not in _DIGITS and text[start:end] == m.group(2):
            found.add(m.group(1).decode())
    return found


def _adds_term(callee: str, table: ClassTable, src: SourceText, imported: ImportedClass | None) -> bool:
    if callee in table.infos:
        if not table.is_module(callee) or table.find_method(callee, "__call__") is not None:
            return False
        found = table.find_method(callee, "forward")
        if found is None:
            return False
        node = found[1]
        if node.parent is not None and node.parent.type == "decorated_definition":
            return False
        raw = src.raw(node)
        if b"+" not in raw and b"add(" not in raw:
            return False  # no sum to read (most submodules): no parse
        indent = b" " * node.start_point[1]  # the method's text as written, for `ast` (its lines keep their indent)
        return forward_text_adds_term((indent + raw).decode("utf-8", errors="replace"))
    if imported is None or "." not in callee or callee.split(".")[0] in ("torch", "torchvision"):
        return False
    definition = imported(callee)
    return definition is not None and forward_adds_term(definition[0])
