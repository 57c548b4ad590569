"""Rule files (.adl): parse errors as diagnostics, hover shows a rule's docs."""

from __future__ import annotations

from pathlib import Path

from lsp_session import REPO, analysed, change, open_doc, start
from lsprotocol import types
from pytest_lsp import LanguageClient

RULE = REPO / "rules" / "f05-dropout-add-layernorm.adl"


async def test_valid_rule_file_has_no_diagnostics_and_hover_shows_docs(client: LanguageClient, tmp_path: Path) -> None:
    await start(client, tmp_path)
    text = RULE.read_text(encoding="utf-8")
    uri = open_doc(client, tmp_path / "mine.adl", text, language="adopter")
    assert await analysed(client, uri, 1) == []
    line = next(i for i, text_line in enumerate(text.split("\n")) if text_line.strip().startswith("title"))
    params = types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line, 4))
    result = await client.text_document_hover_async(params)
    assert result is not None and isinstance(result.contents, types.MarkupContent)
    assert "f05-dropout-add-layernorm" in result.contents.value and "family 5" in result.contents.value


async def test_syntax_error_is_a_positioned_diagnostic_and_goes_away_when_fixed(client: LanguageClient, tmp_path: Path) -> None:
    await start(client, tmp_path)
    text = RULE.read_text(encoding="utf-8")
    lines = text.split("\n")
    line = next(i for i, text_line in enumerate(lines) if text_line.strip().startswith("severity"))
    broken = "\n".join([*lines[:line], "  severity ???", *lines[line + 1 :]])
    uri = open_doc(client, tmp_path / "mine.adl", broken, language="adopter")
    (error,) = await analysed(client, uri, 1)
    assert error.severity == types.DiagnosticSeverity.Error and error.source == "adopter"
    assert error.range.start.line == line
    change(client, uri, 2, [((line, 0), (line + 1, 0), lines[line] + "\n")])
    assert await analysed(client, uri, 2) == []


async def test_semantic_error_undefined_variable(client: LanguageClient, tmp_path: Path) -> None:
    await start(client, tmp_path)
    text = RULE.read_text(encoding="utf-8").replace("single_use($h)", "single_use($nowhere)")
    uri = open_doc(client, tmp_path / "mine.adl", text, language="adopter")
    (error,) = await analysed(client, uri, 1)
    assert "nowhere" in error.message


async def test_saving_a_workspace_rule_reloads_the_rules(client: LanguageClient, tmp_path: Path) -> None:
    from lsp_session import SNIPPET, codes, forget

    rules = tmp_path / ".adopter" / "rules"
    rules.mkdir(parents=True)
    await start(client, tmp_path)
    model = open_doc(client, tmp_path / "model.py", SNIPPET)
    assert "my-dropout-add-norm" not in codes(await analysed(client, model, 1))
    mine = rules / "mine.adl"
    # A family of its own: two rules of one family on the same code are one site, reported once (engine.sites).
    mine.write_text(RULE.read_text(encoding="utf-8").replace("f05-dropout-add-layernorm", "my-dropout-add-norm")
                    .replace("family 5", "family 30"), encoding="utf-8")
    rule_uri = open_doc(client, mine, language="adopter")
    forget(client, model)
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=rule_uri)))
    assert "my-dropout-add-norm" in codes(await analysed(client, model, 1))
