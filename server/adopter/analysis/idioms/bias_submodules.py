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

# `x = self.attr(x, ...)`, searched from its `=` (a literal start the regex engine jumps to; a leading `\b` before
# the target's name made it try every offset of the forward's text): the name before is read by `_target_before`.
_UPDATE = re.compile(rb"=\s*self\.([A-Za-z_]\w*)\(\s*([A-Za-z_]\w*)\s*[,)]")
_SPACE = frozenset(b" \t\n\r\x0b\x0c")  # what `\s` matches in a bytes pattern
_LEAD = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")  # `[A-Za-z_]`
_WORD = _LEAD | frozenset(b"0123456789")  # `\w` in a bytes pattern
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


def updated_attributes(forward: bytes) -> set[str]:
    r"""The attributes `forward` calls as `x = self.attr(x, ...)`: the decoded `m.group(2)` of each match `m` of
    `rb"\b([A-Za-z_]\w*)\s*=\s*self\.([A-Za-z_]\w*)\(\s*([A-Za-z_]\w*)\s*[,)]"` in `forward` whose groups 1 and 3
    are equal, found without trying the pattern at every offset (issue 22)."""
    return {m.group(1).decode() for m in _UPDATE.finditer(forward) if _target_before(forward, m.start()) == m.group(2)}


def _target_before(data: bytes, at: int) -> bytes | None:
    r"""The name `\b([A-Za-z_]\w*)\s*` matches ending at `data[at]` (an `=`), else None. Such a match never overlaps
    the one before it (a match holds one `=`, its own), so reading each match back from its `=` finds them all."""
    end = at
    while end and data[end - 1] in _SPACE:
        end -= 1
    start = end
    while start and data[start - 1] in _WORD:
        start -= 1
    if start == end or data[start] not in _LEAD:
        return None
    return data[start:end]


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
