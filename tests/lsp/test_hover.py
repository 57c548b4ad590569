"""Hover: a model class's architecture in short form (no source ranges), its findings, a link to the DSL."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import unquote

import pytest
from lsp_session import F05, SNIPPET, analysed, open_doc, start
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities


async def hover(client: LanguageClient, uri: str, line: int, character: int) -> types.Hover | None:
    params = types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line, character))
    return await client.text_document_hover_async(params)


def markdown(result: types.Hover | None) -> str:
    assert result is not None and isinstance(result.contents, types.MarkupContent)
    assert result.contents.kind == types.MarkupKind.Markdown
    return result.contents.value


async def test_hover_on_class_name_shows_dsl_and_findings(client: LanguageClient, tmp_path: Path) -> None:
    await start(client, tmp_path)
    uri = open_doc(client, tmp_path / "model.py", SNIPPET)
    await analysed(client, uri, 1)
    text = markdown(await hover(client, uri, 4, 8))  # `class SelfOutput(...)`
    assert "**SelfOutput**" in text
    assert "LayerNorm" in text and "dropout" in text  # the layers and the forward's ops
    assert F05 in text


async def test_hover_on_a_constructing_line_shows_the_constructed_class(client: LanguageClient, tmp_path: Path) -> None:
    await start(client, tmp_path)
    uri = open_doc(client, tmp_path / "model.py", SNIPPET)
    await analysed(client, uri, 1)
    line = SNIPPET.split("\n").index("        self.output = SelfOutput(config)")
    text = markdown(await hover(client, uri, line, 10))  # on `self.output`, not on the class name
    assert "**SelfOutput**" in text and F05 in text


async def test_no_hover_outside_models(client: LanguageClient, tmp_path: Path) -> None:
    await start(client, tmp_path)
    uri = open_doc(client, tmp_path / "model.py", SNIPPET)
    await analysed(client, uri, 1)
    assert await hover(client, uri, 0, 3) is None  # `import torch`


def vscode_capabilities() -> types.ClientCapabilities:
    """VS Code's capabilities plus the extension's: the hover then links to the full architecture."""
    capabilities = client_capabilities("visual-studio-code")
    capabilities.experimental = {"adopterClientCommands": True}
    return capabilities


RANGE = re.compile(r"@\d+:\d+-\d+:\d+")


@pytest.mark.corpus
async def test_bert_self_attention_hover_is_short_has_no_ranges_and_links_the_dsl(
        client: LanguageClient, tmp_path: Path) -> None:
    """Issue 24's must-hold: BERT's BertSelfAttention hover fits in 25 lines and shows no source range."""
    from adopter.corpus import modeling_file

    text = modeling_file("bert").text
    await start(client, tmp_path, capabilities=vscode_capabilities())
    uri = open_doc(client, tmp_path / "modeling_bert.py", text)
    await analysed(client, uri, 1)
    line = text.split("\n").index("class BertSelfAttention(nn.Module):")
    value = markdown(await hover(client, uri, line, 8))
    lines = value.split("\n")
    assert len(lines) <= 25, value
    assert not RANGE.search(value), value
    assert "**BertSelfAttention**" in value
    assert "query, key, value: Linear" in value  # the layers, grouped by constructor
    assert "softmax → dropout" in value  # the forward's operator sequence
    for rule in ("f09-fused-qkv", "f10-manual-attention-sdpa", "f04-softmax"):  # the class's findings
        assert f"`{rule}`" in value
    assert "f05-dropout-add-layernorm" not in value  # BertSelfOutput's, not this class's
    link = re.search(r"\[Show architecture\]\(command:adopter\.client\.showArchitecture\?([^ )]+)", value)
    assert link is not None, value
    argument = json.loads(unquote(link.group(1)))
    assert argument == [{"uri": uri, "class": "BertSelfAttention", "line": line}]
    # The link's target, the full DSL, keeps the positions.
    full = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="adopter.showArchitecture", arguments=[{"uri": uri, "class": "BertSelfAttention"}]))
    assert isinstance(full, str) and RANGE.search(full)


async def test_no_link_for_clients_without_the_extensions_commands(client: LanguageClient, tmp_path: Path) -> None:
    await start(client, tmp_path)
    uri = open_doc(client, tmp_path / "model.py", SNIPPET)
    await analysed(client, uri, 1)
    text = markdown(await hover(client, uri, 4, 8))
    assert "command:" not in text and not RANGE.search(text)
