"""Hover: a model class's architecture in the DSL, with the findings inside it.

Hovering the class name, any use of the name (`BertLayer(config)`), or an `__init__` line that
constructs a class of the same file shows that class. In rule files, hover shows the rule's docs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from adopter.dsl.types import Architecture
from adopter.lsp.convert import lsp_markdown
from adopter.lsp.locate import architecture_at
from adopter.lsp.pipeline import Snapshot, failure
from adopter.positions import LspLines

if TYPE_CHECKING:
    from adopter.lsp.server import AdopterServer

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
    lines = LspLines(snapshot.text)
    if not 0 <= position.line < lines.line_count:
        return None
    line, col = lines.from_lsp(position.line, position.character)
    arch = architecture_at(snapshot, line, col)
    if arch is None:
        return None
    return types.Hover(contents=lsp_markdown(architecture_markdown(snapshot, arch)))


async def hover(ls: AdopterServer, params: types.HoverParams) -> types.Hover | None:
    """Architecture hover for Python files, rule docs for rule files."""
    from adopter.lsp.rule_files import rule_hover

    uri = params.text_document.uri
    doc = ls.analyses.documents.get(uri)
    snapshot = await ls.publisher.snapshot(uri)
    if doc is None or snapshot is None:
        return None
    if doc.rule_file:
        return rule_hover(snapshot, params.position)
    return python_hover(snapshot, params.position)


def register(server: AdopterServer) -> None:
    server.feature(types.TEXT_DOCUMENT_HOVER)(hover)

