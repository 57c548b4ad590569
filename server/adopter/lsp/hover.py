"""Hover: a model class's architecture in short form (layers, forward's ops), with the findings inside it.

The short form has no source ranges (adopter.lsp.hover_summary); a "Show architecture" link, for clients
that run the extension's commands, opens the full DSL with its positions in a read-only editor.

Hovering the class name, any use of the name (`BertLayer(config)`), or an `__init__` line that
constructs a class of the same file shows that class. In rule files, hover shows the rule's docs.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING
from urllib.parse import quote

from lsprotocol import types

from adopter.dsl.types import Architecture
from adopter.lsp.convert import lsp_markdown
from adopter.lsp.hover_summary import forward_lines, layer_lines
from adopter.lsp.locate import architecture_at
from adopter.lsp.pipeline import Snapshot, failure
from adopter.positions import LspLines

if TYPE_CHECKING:
    from adopter.lsp.server import AdopterServer

SHOW_ARCHITECTURE = "adopter.client.showArchitecture"  # the VS Code extension's command (code_lens.py)
MESSAGE_CHARS = 90  # a finding's message is cut to its first sentence, at most this long


def _first_sentence(message: str) -> str:
    """A finding's message in one short line: its first sentence, cut at MESSAGE_CHARS."""
    head = message.split(". ", 1)[0]
    return head if len(head) <= MESSAGE_CHARS else head[: MESSAGE_CHARS - 1].rstrip() + "…"


def show_architecture_link(uri: str, arch: Architecture) -> str:
    """A command link that opens the class's full DSL (with source positions) in a read-only editor."""
    argument = {"uri": uri, "class": arch.name, "line": arch.span.start_line}
    return f"[Show architecture](command:{SHOW_ARCHITECTURE}?{quote(json.dumps([argument]))} \"Open the full DSL\")"


def architecture_markdown(snapshot: Snapshot, arch: Architecture, link_uri: str | None = None) -> str:
    """The class's layers and forward in short form (no source ranges), its findings, and a link to the DSL.

    `link_uri` is the document's uri when the client runs the extension's commands (the link needs them).
    """
    bases = ", ".join(base.replace("torch.nn.", "nn.", 1) if base.startswith("torch.nn.") else base
                      for base in arch.bases) or "nn.Module"
    parts = [f"**{arch.name}** ({bases})"]
    try:
        layers, forward = layer_lines(arch), forward_lines(arch)
    except Exception as exc:  # the summary failing must not break hover
        layers, forward = [], [f"architecture unavailable: {failure('summarising the architecture', exc).message}"]
    block = [*(["layers:", *("  " + line for line in layers)] if layers else []),
             *(["forward:", *("  " + line for line in forward)] if forward else [])]
    if block:
        parts.append("```text\n" + "\n".join(block) + "\n```")
    inside = [f for f in snapshot.findings if f.scope_name == arch.name]
    if inside:
        parts.append("**Kernel opportunities**\n" + "\n".join(
            f"- `{f.rule_id}` line {f.span.start_line + 1}: {_first_sentence(f.message)}" for f in inside))
    if link_uri is not None:
        parts.append(show_architecture_link(link_uri, arch))
    return "\n\n".join(parts)


def python_hover(snapshot: Snapshot, position: types.Position, link_uri: str | None = None) -> types.Hover | None:
    lines = LspLines(snapshot.text)
    if not 0 <= position.line < lines.line_count:
        return None
    line, col = lines.from_lsp(position.line, position.character)
    arch = architecture_at(snapshot, line, col)
    if arch is None:
        return None
    return types.Hover(contents=lsp_markdown(architecture_markdown(snapshot, arch, link_uri)))


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
    from adopter.lsp.server import has_client_commands

    return python_hover(snapshot, params.position, uri if has_client_commands(ls) else None)


def register(server: AdopterServer) -> None:
    server.feature(types.TEXT_DOCUMENT_HOVER)(hover)

