"""`textDocument/codeLens`: *Search accelerator* · *Show architecture* above each `nn.Module` class.

The lenses run the VS Code extension's own commands (`adopter.client.*`, which ask the user for the
search options and open the result panel), so they are offered only to a client that says it has them:
`capabilities.experimental.adopterClientCommands: true`. Other clients get no lenses.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from adopter.lsp.server import AdopterServer, has_client_commands
from adopter.positions import LspLines

CLIENT_SEARCH = "adopter.client.searchAccelerator"
CLIENT_SHOW_ARCHITECTURE = "adopter.client.showArchitecture"


def lsp_code_lenses(uri: str, architectures: Any, lines: LspLines) -> list[types.CodeLens]:
    """Two lenses at the line of each class (the command's `line` stays internal: the server reads it)."""
    lenses = []
    for arch in architectures:
        at = types.Position(lines.to_lsp(arch.span.start_line, 0)[0], 0)
        where = types.Range(at, at)
        target = {"uri": uri, "class": arch.name, "line": arch.span.start_line}
        lenses += [
            types.CodeLens(where, types.Command("Search accelerator", CLIENT_SEARCH, arguments=[target])),
            types.CodeLens(where, types.Command("Show architecture", CLIENT_SHOW_ARCHITECTURE, arguments=[target])),
        ]
    return lenses


async def code_lens(ls: AdopterServer, params: types.CodeLensParams) -> list[types.CodeLens] | None:
    if not has_client_commands(ls):
        return None
    snapshot = await ls.publisher.snapshot(params.text_document.uri)
    if snapshot is None or snapshot.module_file is None:
        return None
    return lsp_code_lenses(params.text_document.uri, snapshot.module_file.architectures, LspLines(snapshot.text))


def register(server: AdopterServer) -> None:
    server.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))(code_lens)
