"""`textDocument/codeLens`: *Search accelerator* · *Show architecture* above each `nn.Module` class, and
*Verify and measure* above each class that has a finding with a fix (it runs `adopter verify` for the class).

The lenses run the VS Code extension's own commands (`adopter.client.*`, which ask the user for the
search options and open the result panel), so they are offered only to a client that says it has them:
`capabilities.experimental.adopterClientCommands: true`. Other clients get no lenses.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from adopter.engine.types import Finding
from adopter.lsp.server import AdopterServer, has_client_commands
from adopter.positions import LspLines

CLIENT_SEARCH = "adopter.client.searchAccelerator"
CLIENT_SHOW_ARCHITECTURE = "adopter.client.showArchitecture"
CLIENT_VERIFY = "adopter.client.verifyFixes"


def lsp_code_lenses(uri: str, architectures: Any, lines: LspLines,
                    findings: tuple[Finding, ...] = ()) -> list[types.CodeLens]:
    """Two lenses at the line of each class, a third where the class has a fix to verify (the command's
    `line` stays internal: the server reads it)."""
    with_fixes = {f.scope_name for f in findings if f.fixable and f.targets}
    lenses = []
    for arch in architectures:
        at = types.Position(lines.to_lsp(arch.span.start_line, 0)[0], 0)
        where = types.Range(at, at)
        target = {"uri": uri, "class": arch.name, "line": arch.span.start_line}
        lenses += [
            types.CodeLens(where, types.Command("Search accelerator", CLIENT_SEARCH, arguments=[target])),
            types.CodeLens(where, types.Command("Show architecture", CLIENT_SHOW_ARCHITECTURE, arguments=[target])),
        ]
        if arch.name in with_fixes:
            lenses.append(types.CodeLens(where, types.Command(
                "Verify and measure", CLIENT_VERIFY, arguments=[{"uri": uri, "class": arch.name}])))
    return lenses


async def code_lens(ls: AdopterServer, params: types.CodeLensParams) -> list[types.CodeLens] | None:
    if not has_client_commands(ls):
        return None
    snapshot = await ls.publisher.snapshot(params.text_document.uri)
    if snapshot is None or snapshot.module_file is None:
        return None
    return lsp_code_lenses(params.text_document.uri, snapshot.module_file.architectures, LspLines(snapshot.text),
                           snapshot.findings)


def register(server: AdopterServer) -> None:
    server.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))(code_lens)
