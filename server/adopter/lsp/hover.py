"""Hover: a model class's architecture in the DSL, with the findings inside it.

Hovering the class name, any use of the name (`BertLayer(config)`), or an `__init__` line that
constructs a class of the same file shows that class. In rule files, hover shows the rule's docs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from lsprotocol import types

from adopter.dsl.types import Architecture, Ctor
from adopter.lsp.convert import lsp_markdown
from adopter.lsp.pipeline import Snapshot, failure
from adopter.positions import from_lsp

if TYPE_CHECKING:
    from adopter.lsp.server import AdopterServer

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


def architecture_markdown(snapshot: Snapshot, arch: Architecture) -> str:
    """The class's DSL in an ```adopter block, then the findings inside the class."""
    try:
        from adopter.dsl import format_architecture

        dsl = format_architecture(arch)
    except Exception as exc:  # the printer missing or failing must not break hover
        dsl = f"# architecture unavailable: {failure('printing the architecture', exc).message}"
    bases = ", ".join(arch.bases) or "nn.Module"
    parts = [f"**{arch.name}** ({bases})", f"```adopter\n{dsl.rstrip()}\n```"]
    inside = [f for f in snapshot.findings if f.scope_name == arch.name]
    if inside:
        parts.append("**Kernel opportunities**")
        parts.append(
            "\n".join(f"- `{f.rule_id}` line {f.span.start_line + 1}: {f.message}" for f in inside)
        )
    return "\n\n".join(parts)


def python_hover(snapshot: Snapshot, position: types.Position) -> types.Hover | None:
    lines = snapshot.text.split("\n")
    if not 0 <= position.line < len(lines):
        return None
    _, col = from_lsp(lines[position.line], position.line, position.character)
    arch = architecture_at(snapshot, position.line, col)
    if arch is None:
        return None
    return types.Hover(contents=lsp_markdown(architecture_markdown(snapshot, arch)))


async def hover(ls: AdopterServer, params: types.HoverParams) -> types.Hover | None:
    """Architecture hover for Python files, rule docs for rule files."""
    from adopter.lsp.rule_files import rule_hover

    uri = params.text_document.uri
    doc = ls.analyses.documents.get(uri)
    snapshot = await ls.snapshot(uri)
    if doc is None or snapshot is None:
        return None
    if doc.rule_file:
        return rule_hover(snapshot, params.position)
    return python_hover(snapshot, params.position)


def register(server: AdopterServer) -> None:
    server.feature(types.TEXT_DOCUMENT_HOVER)(hover)

