"""textDocument/codeLens: *Search accelerator* · *Show architecture* above each nn.Module class, and
*Verify and measure* above a class with a fix, only for a client that declares the extension's own commands."""

from __future__ import annotations

from pathlib import Path

from lsp_session import SNIPPET, analysed, open_doc, start
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities


def _with_client_commands() -> types.ClientCapabilities:
    capabilities = client_capabilities("visual-studio-code")
    capabilities.experimental = {"adopterClientCommands": True}
    return capabilities


async def _lenses(client: LanguageClient, uri: str) -> list[types.CodeLens]:
    params = types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    return list(await client.text_document_code_lens_async(params) or [])


async def test_lenses_per_class_run_the_client_commands(client: LanguageClient, tmp_path: Path) -> None:
    await start(client, tmp_path, capabilities=_with_client_commands())
    uri = open_doc(client, tmp_path / "model.py", SNIPPET)
    await analysed(client, uri, 1)
    lenses = await _lenses(client, uri)
    lines = SNIPPET.splitlines()
    seen = [(lines[lens.range.start.line], lens.command.title, lens.command.command, list(lens.command.arguments or []))
            for lens in lenses if lens.command]
    assert seen == [
        ("class SelfOutput(nn.Module):", "Search accelerator", "adopter.client.searchAccelerator",
         [{"uri": uri, "class": "SelfOutput", "line": 4}]),
        ("class SelfOutput(nn.Module):", "Show architecture", "adopter.client.showArchitecture",
         [{"uri": uri, "class": "SelfOutput", "line": 4}]),
        ("class SelfOutput(nn.Module):", "Verify and measure", "adopter.client.verifyFixes",
         [{"uri": uri, "class": "SelfOutput"}]),
        ("class Layer(nn.Module):", "Search accelerator", "adopter.client.searchAccelerator",
         [{"uri": uri, "class": "Layer", "line": 18}]),
        ("class Layer(nn.Module):", "Show architecture", "adopter.client.showArchitecture",
         [{"uri": uri, "class": "Layer", "line": 18}]),
    ]


async def test_no_lenses_for_a_client_without_the_commands(client: LanguageClient, tmp_path: Path) -> None:
    await start(client, tmp_path)
    uri = open_doc(client, tmp_path / "model.py", SNIPPET)
    await analysed(client, uri, 1)
    assert await _lenses(client, uri) == []


async def test_no_verify_lens_once_the_class_has_no_fix(client: LanguageClient, tmp_path: Path) -> None:
    await start(client, tmp_path, capabilities=_with_client_commands(), options={"ignore": ["f05-dropout-add-layernorm"]})
    uri = open_doc(client, tmp_path / "model.py", SNIPPET)
    await analysed(client, uri, 1)
    titles = [lens.command.title for lens in await _lenses(client, uri) if lens.command]
    assert titles == ["Search accelerator", "Show architecture"] * 2
