"""Jupyter notebooks through LSP notebook document sync: findings, hover and quick fixes in code cells,
with imports and classes of other cells seen."""

from __future__ import annotations

from pathlib import Path

from lsp_session import F05, SNIPPET, analysed, apply_edit, codes, start
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

IMPORTS, CLASSES = SNIPPET.split("\n\n\n", 1)
SELF_OUTPUT, LAYER = CLASSES.split("\n\n\nclass ", 1)
LAYER = "class " + LAYER
CELLS = [IMPORTS + "\n", "# a markdown cell's neighbour\n" + SELF_OUTPUT + "\n", LAYER]


def _notebook_client() -> types.ClientCapabilities:
    """VS Code's capabilities, with notebook sync (as VS Code 1.139 sends them)."""
    capabilities = client_capabilities("visual-studio-code")
    capabilities.notebook_document = types.NotebookDocumentClientCapabilities(
        synchronization=types.NotebookDocumentSyncClientCapabilities())
    return capabilities


def _cell_uri(notebook: Path, i: int) -> str:
    return f"vscode-notebook-cell:{notebook}#cell{i}"


def _remote_cell_uri(notebook: Path, i: int) -> str:
    """As VS Code in a browser (code-server) names cells: an authority and a %-escaped base64 fragment."""
    return f"vscode-notebook-cell://127.0.0.1:8080{notebook}#W{i}sdnNjb2RlLXJlbW90ZQ%3D%3D"


def _open(client: LanguageClient, notebook: Path, cells: list[str], cell_uri=_cell_uri) -> list[str]:
    uris = [cell_uri(notebook, i) for i in range(len(cells))]
    kinds = [types.NotebookCell(kind=types.NotebookCellKind.Code, document=u) for u in uris]
    markdown = types.NotebookCell(kind=types.NotebookCellKind.Markup, document=f"{cell_uri(notebook, 99)}")
    client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
        notebook_document=types.NotebookDocument(uri=notebook.as_uri(), notebook_type="jupyter-notebook", version=1,
                                                 cells=[kinds[0], markdown, *kinds[1:]]),
        cell_text_documents=[types.TextDocumentItem(uri=u, language_id="python", version=1, text=t) for u, t in zip(uris, cells)]
        + [types.TextDocumentItem(uri=markdown.document, language_id="markdown", version=1, text="# Title")],
    ))
    return uris


async def test_notebook_sync_is_advertised(client: LanguageClient) -> None:
    result = await start(client, capabilities=_notebook_client())
    sync = result.capabilities.notebook_document_sync
    assert sync is not None
    assert [c.language for f in sync.notebook_selector for c in f.cells or []] == ["python"]


async def test_finding_in_a_cell_whose_imports_are_in_another(client: LanguageClient, tmp_path: Path) -> None:
    await start(client, tmp_path, capabilities=_notebook_client())
    uris = _open(client, tmp_path / "model.ipynb", CELLS)
    in_imports, in_class, in_layer = [await analysed(client, u, 1) for u in uris]
    assert codes(in_class) == [F05]
    finding = in_class[0]
    # In the cell's own lines: the dropout -> add -> LayerNorm chain of SelfOutput's forward.
    covered = CELLS[1].splitlines()[finding.range.start.line:finding.range.end.line + 1]
    assert "self.dropout(hidden_states)" in covered[0] and "self.LayerNorm(hidden_states + input_tensor)" in covered[-1]
    assert F05 not in codes(in_imports) and F05 not in codes(in_layer)  # each cell reports only its own


async def test_cells_named_with_escapes_as_code_server_names_them(client: LanguageClient, tmp_path: Path) -> None:
    await start(client, tmp_path, capabilities=_notebook_client())
    uris = _open(client, tmp_path / "model.ipynb", CELLS, _remote_cell_uri)
    in_class = await analysed(client, uris[1], 1)
    assert codes(in_class) == [F05]
    assert uris[1] in client.diagnostics  # published under the uri VS Code sent, escapes kept


async def test_hover_on_a_class_defined_in_another_cell(client: LanguageClient, tmp_path: Path) -> None:
    await start(client, tmp_path, capabilities=_notebook_client())
    uris = _open(client, tmp_path / "model.ipynb", CELLS)
    await analysed(client, uris[2], 1)
    line = next(i for i, t in enumerate(LAYER.splitlines()) if "SelfOutput(config)" in t)
    col = LAYER.splitlines()[line].index("SelfOutput") + 2
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uris[2]), position=types.Position(line, col)))
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    assert "SelfOutput" in hover.contents.value and "LayerNorm" in hover.contents.value


async def test_quick_fix_in_a_cell_edits_that_cell_only(client: LanguageClient, tmp_path: Path) -> None:
    await start(client, tmp_path, capabilities=_notebook_client())
    uris = _open(client, tmp_path / "model.ipynb", CELLS)
    finding = next(d for d in await analysed(client, uris[1], 1) if d.code == F05)
    params = types.CodeActionParams(text_document=types.TextDocumentIdentifier(uri=uris[1]), range=finding.range,
                                    context=types.CodeActionContext(diagnostics=[finding]))
    actions = [a for a in await client.text_document_code_action_async(params) or []
               if isinstance(a, types.CodeAction) and a.kind == "quickfix"]
    assert actions
    resolved = await client.code_action_resolve_async(actions[0])
    assert resolved.disabled is None and resolved.edit is not None and resolved.edit.document_changes
    (document_change,) = resolved.edit.document_changes
    assert isinstance(document_change, types.TextDocumentEdit) and document_change.text_document.uri == uris[1]
    new_cell = apply_edit(CELLS[1], [e for e in document_change.edits if isinstance(e, types.TextEdit)])
    assert "self.LayerNorm(hidden_states + input_tensor)" not in new_cell
    assert new_cell.startswith("# a markdown cell's neighbour\n")
    client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
        notebook_document=types.VersionedNotebookDocumentIdentifier(uri=(tmp_path / "model.ipynb").as_uri(), version=2),
        change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(text_content=[
            types.NotebookDocumentCellContentChanges(
                document=types.VersionedTextDocumentIdentifier(uri=uris[1], version=2),
                changes=[types.TextDocumentContentChangeWholeDocument(text=new_cell)])]))))
    assert F05 not in codes(await analysed(client, uris[1], 2))


async def test_closing_the_notebook_clears_its_cells(client: LanguageClient, tmp_path: Path) -> None:
    await start(client, tmp_path, capabilities=_notebook_client())
    notebook = tmp_path / "model.ipynb"
    uris = _open(client, notebook, CELLS)
    await analysed(client, uris[1], 1)
    client.notebook_document_did_close(types.DidCloseNotebookDocumentParams(
        notebook_document=types.NotebookDocumentIdentifier(uri=notebook.as_uri()),
        cell_text_documents=[types.TextDocumentIdentifier(uri=u) for u in uris]))
    await client.wait_for_notification("textDocument/publishDiagnostics")
    for _ in range(100):
        if all(not client.diagnostics.get(u) for u in uris):
            break
        await client.wait_for_notification("textDocument/publishDiagnostics")
    assert all(not client.diagnostics.get(u) for u in uris)


def test_a_fix_reaching_past_its_cell_is_disabled() -> None:
    from adopter.lsp import notebooks
    from adopter.lsp.documents import OpenDocument
    from adopter.lsp.sync import LineStarts

    views = notebooks.combined_texts([("cell:a", "import torch\n"), ("cell:b", "x = 1")])
    assert (views["cell:a"].lines, views["cell:a"].text) == (1, "import torch\nx = 1\n")
    assert (views["cell:b"].lines, views["cell:b"].text) == (1, "x = 1\nimport torch\n")
    text = views["cell:a"].text
    cell = OpenDocument("cell:a", False, None, text, 1, LineStarts(text), own_lines=views["cell:a"].lines)
    file = OpenDocument("file:///a.py", False, "/a.py", text, 1, LineStarts(text))

    def at(line: int) -> types.Range:
        return types.Range(types.Position(line, 0), types.Position(line, 0))

    assert cell.owns(at(0)) and cell.owns(at(1))  # the end of the cell: still its own
    assert not cell.owns(at(2)) and not cell.owns(types.Range(types.Position(0, 0), types.Position(1, 3)))
    assert file.owns(at(2))
