"""Hover: a model class's architecture in the DSL, with the findings inside it."""

from __future__ import annotations

from pathlib import Path

from lsp_session import F05, SNIPPET, analysed, open_doc, start
from lsprotocol import types
from pytest_lsp import LanguageClient


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
    assert "```adopter" in text and "SelfOutput" in text
    assert "LayerNorm" in text and "dropout" in text  # the bindings and ops are in the DSL
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
