"""Open, edit, close: findings and analysis problems as versioned, debounced diagnostics."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsp_session import F05, SNIPPET, analysed, change, codes, open_doc, start
from lsprotocol import types
from pytest_lsp import LanguageClient

DROPOUT_LINE = 13  # `hidden_states = self.dropout(hidden_states)` in SNIPPET (0-based)


async def test_finding_diagnostic_has_code_link_related_lines(client: LanguageClient, tmp_path: Path) -> None:
    await start(client, tmp_path)
    uri = open_doc(client, tmp_path / "model.py", SNIPPET)
    diagnostics = await analysed(client, uri, 1)
    (finding,) = [d for d in diagnostics if d.code == F05]
    assert finding.source == "adopter"
    assert finding.severity == types.DiagnosticSeverity.Warning
    assert finding.code_description is not None and f"docs/rules.md#{F05}--dropout-residual-add" in finding.code_description.href
    assert finding.range.start.line == DROPOUT_LINE and finding.range.end.line == DROPOUT_LINE + 1
    related = {r.location.range.start.line for r in finding.related_information or []}
    assert related == {8, 9}  # the LayerNorm and Dropout bindings in __init__
    assert all(r.location.uri == uri for r in finding.related_information or [])


async def test_edits_update_diagnostics_with_the_version(client: LanguageClient, tmp_path: Path) -> None:
    await start(client, tmp_path)
    uri = open_doc(client, tmp_path / "model.py", SNIPPET)
    assert F05 in codes(await analysed(client, uri, 1))
    change(client, uri, 2, [((DROPOUT_LINE, 0), (DROPOUT_LINE + 1, 0), "")])  # delete the dropout line
    assert F05 not in codes(await analysed(client, uri, 2))
    dropout = "        hidden_states = self.dropout(hidden_states)\n"
    change(client, uri, 3, [((DROPOUT_LINE, 0), (DROPOUT_LINE, 0), dropout)])  # undo
    assert F05 in codes(await analysed(client, uri, 3))


async def test_half_typed_code_keeps_other_classes_and_shows_the_error(client: LanguageClient, tmp_path: Path) -> None:
    await start(client, tmp_path)
    uri = open_doc(client, tmp_path / "model.py", SNIPPET)
    await analysed(client, uri, 1)
    end = len(SNIPPET.split("\n")) - 1
    change(client, uri, 2, [((end, 0), (end, 0), "\nclass Broken(nn.Module):\n    def forward(self, x:\n        return self.lin(")])
    diagnostics = await analysed(client, uri, 2)
    assert F05 in codes(diagnostics)
    errors = [d for d in diagnostics if d.code != F05]
    assert errors and any(d.range.start.line >= end for d in errors)


async def test_superseded_versions_are_not_published(client: LanguageClient, tmp_path: Path) -> None:
    """With a debounce, a burst of edits is analysed once, for the last version."""
    await start(client, tmp_path, {"debounce_ms": 1500})
    uri = open_doc(client, tmp_path / "model.py", SNIPPET)
    await analysed(client, uri, 1)
    seen: list[int] = []
    original = client.analysed  # type: ignore[attr-defined]

    class Recorder(dict[str, int]):
        def __setitem__(self, key: str, value: int) -> None:
            seen.append(value)
            super().__setitem__(key, value)

    client.analysed = Recorder(original)  # type: ignore[attr-defined]
    for version in range(2, 7):
        change(client, uri, version, [((0, 0), (0, 0), f"# edit {version}\n")])
    await analysed(client, uri, 6)
    assert seen == [6]


async def test_close_clears_diagnostics(client: LanguageClient, tmp_path: Path) -> None:
    await start(client, tmp_path)
    uri = open_doc(client, tmp_path / "model.py", SNIPPET)
    assert await analysed(client, uri, 1)
    client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    for _ in range(500):
        if not client.diagnostics.get(uri):
            break
        await asyncio.sleep(0.01)
    assert uri in client.diagnostics and len(client.diagnostics[uri]) == 0


async def test_binary_garbage_is_a_visible_problem_not_a_crash(client: LanguageClient, tmp_path: Path) -> None:
    await start(client, tmp_path)
    uri = open_doc(client, tmp_path / "weird.py", "\x00\x01 class (((\n" * 50)
    diagnostics = await analysed(client, uri, 1)
    assert diagnostics  # the analysis says what it could not do
    good = open_doc(client, tmp_path / "model.py", SNIPPET)
    assert F05 in codes(await analysed(client, good, 1))


async def test_positions_are_utf16_even_when_the_client_prefers_utf8(client: LanguageClient, tmp_path: Path) -> None:
    from lsp_session import client_capabilities

    capabilities = client_capabilities("visual-studio-code")
    capabilities.general = types.GeneralClientCapabilities(position_encodings=["utf-8", "utf-16", "utf-32"])
    result = await start(client, tmp_path, capabilities=capabilities)
    assert result.capabilities.position_encoding == types.PositionEncodingKind.Utf16


def test_ranges_count_utf16_units() -> None:
    from adopter.dsl.types import Span
    from adopter.lsp.convert import LspIndex, lsp_range

    index = LspIndex("x = '😀é'; y = f(x)\n")
    rng = lsp_range(index, Span(0, 11, 0, 19))  # `y = f(x)` after an astral and a BMP character
    assert (rng.start.character, rng.end.character) == (12, 20)


def test_a_lone_cr_is_a_line_break_for_the_client() -> None:
    """Internal lines are tree-sitter's (split at \\n); a client also ends a line at a lone \\r."""
    from adopter.dsl.types import Span
    from adopter.lsp.convert import LspIndex, lsp_range

    index = LspIndex("a = 1\ry = f(x)\r\nz = 2\n")
    assert not index.is_ascii  # positions depend on the text: a published diagnostic is not reused
    rng = lsp_range(index, Span(0, 6, 0, 14))  # `y = f(x)`, after the lone \r on internal line 0
    assert (rng.start.line, rng.start.character, rng.end.line, rng.end.character) == (1, 0, 1, 8)
    rng = lsp_range(index, Span(1, 0, 1, 5))  # `z = 2`
    assert (rng.start.line, rng.start.character) == (2, 0)
