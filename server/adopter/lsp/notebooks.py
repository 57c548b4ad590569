"""Jupyter notebooks (LSP notebook document sync, as ruff's server does): findings, quick fixes and hover
in Python code cells.

Each code cell is analysed as its own document whose text is the cell followed by the notebook's other
code cells (in notebook order). The cell's positions are then the document's own, so diagnostics, hover
and code actions need no mapping, and a class or an import of another cell is seen. What lies past the
cell's last line belongs to other cells: diagnostics there are dropped (each cell reports its own), and
a fix whose edit would reach there is offered disabled, with the reason.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from lsprotocol import types

from adopter.lsp.server import AdopterServer

PYTHON = "python"


@dataclasses.dataclass
class CellView:
    """What the server analyses for one cell: the combined text and how many lines are the cell's."""

    notebook: str
    lines: int
    text: str


def code_cells(ls: AdopterServer, notebook_uri: str) -> list[tuple[str, str, int | None]]:
    """(uri, text, version) of the notebook's Python code cells, in order."""
    notebook = ls.workspace.get_notebook_document(notebook_uri=notebook_uri)
    if notebook is None:
        return []
    out = []
    documents = ls.workspace.text_documents
    for cell in notebook.cells:
        if cell.kind != types.NotebookCellKind.Code:
            continue
        # pygls keys cell documents by their unquoted uri; VS Code's cell uris carry %-escapes (the fragment's
        # base64 `=`), and the notebook names its cells by the uri as sent.
        doc = documents.get(cell.document) or documents.get(unquote(cell.document))
        if doc is None or (doc.language_id or PYTHON) != PYTHON:
            continue
        out.append((cell.document, doc.source, doc.version))
    return out


def combined_texts(cells: list[tuple[str, str]]) -> dict[str, CellView]:
    """Each cell's text followed by the other cells' (the notebook's order otherwise kept)."""
    views = {}
    for uri, text in cells:
        others = [t for u, t in cells if u != uri]
        body = text if text.endswith("\n") or not text else text + "\n"
        views[uri] = CellView("", body.count("\n") if body else 0, body + "".join(
            t if t.endswith("\n") else t + "\n" for t in others if t))
    return views


class Notebooks:
    """The cells the server tracks, per notebook, and their views."""

    def __init__(self) -> None:
        self.views: dict[str, CellView] = {}

    def sync(self, ls: AdopterServer, notebook_uri: str, delay_ms: int) -> None:
        """Bring every cell document of the notebook in line with the notebook; analyse what changed."""
        cells = code_cells(ls, notebook_uri)
        views = combined_texts([(u, t) for u, t, _ in cells])
        versions = {u: v for u, _, v in cells}
        for uri in [u for u, v in self.views.items() if v.notebook == notebook_uri and u not in views]:
            self.forget(ls, uri)
        for uri, view in views.items():
            view.notebook = notebook_uri
            old = self.views.get(uri)
            self.views[uri] = view
            doc = ls.analyses.documents.get(uri)
            if doc is None:
                doc = ls.analyses.open(uri, PYTHON, view.text, versions[uri])
            elif old is not None and old.text == view.text and doc.version == versions[uri]:
                continue
            else:
                ls.analyses.change(uri, versions[uri], [types.TextDocumentContentChangeWholeDocument(text=view.text)])
                doc.snapshot = None  # the same cell version may now read other cells: not current
            ls.publisher.schedule(doc, delay_ms)

    def forget(self, ls: AdopterServer, uri: str) -> None:
        self.views.pop(uri, None)
        ls.analyses.close(uri)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    def close(self, ls: AdopterServer, notebook_uri: str) -> None:
        for uri in [u for u, v in self.views.items() if v.notebook == notebook_uri]:
            self.forget(ls, uri)


NOTEBOOKS = Notebooks()


def did_open(ls: AdopterServer, params: types.DidOpenNotebookDocumentParams) -> None:
    NOTEBOOKS.sync(ls, params.notebook_document.uri, 0)


def did_change(ls: AdopterServer, params: types.DidChangeNotebookDocumentParams) -> None:
    NOTEBOOKS.sync(ls, params.notebook_document.uri, ls.settings.debounce_ms)


def did_close(ls: AdopterServer, params: types.DidCloseNotebookDocumentParams) -> None:
    NOTEBOOKS.close(ls, params.notebook_document.uri)


def inside_cell(uri: str, rng: types.Range) -> bool:
    """Whether a range of a cell document lies within the cell (not in the other cells after it)."""
    view = NOTEBOOKS.views.get(uri)
    return view is None or rng.end.line < view.lines or (rng.end.line == view.lines and rng.end.character == 0)


def _edits_inside_cells(edit: types.WorkspaceEdit | None) -> bool:
    if edit is None:
        return True
    for change in edit.document_changes or ():
        if isinstance(change, types.TextDocumentEdit):
            if not all(inside_cell(change.text_document.uri, e.range) for e in change.edits):
                return False
    return all(inside_cell(uri, e.range) for uri, edits in (edit.changes or {}).items() for e in edits)


def _confine(action: Any) -> Any:
    """A resolved action whose edit would reach another cell is disabled instead."""
    if isinstance(action, types.CodeAction) and not _edits_inside_cells(action.edit):
        action.edit = None
        action.disabled = types.CodeActionDisabled(
            reason="Adopter: this fix also changes another cell of the notebook; apply it in a .py file")
    return action


def _wrap_publish(server: AdopterServer) -> None:
    publish: Callable[[types.PublishDiagnosticsParams], None] = server.text_document_publish_diagnostics

    def publish_in_cell(params: types.PublishDiagnosticsParams) -> None:
        if params.uri in NOTEBOOKS.views:
            params.diagnostics = [d for d in params.diagnostics if inside_cell(params.uri, d.range)]
        publish(params)

    server.text_document_publish_diagnostics = publish_in_cell  # type: ignore[method-assign]


def _wrap_resolve(server: AdopterServer) -> None:
    features = server.protocol.fm.features
    resolve = features.get(types.CODE_ACTION_RESOLVE)
    if resolve is None:
        return

    async def resolve_in_cell(action: types.CodeAction) -> Any:  # features hold handlers bound to the server
        return _confine(await resolve(action))

    features[types.CODE_ACTION_RESOLVE] = resolve_in_cell


def register(server: AdopterServer) -> None:
    """Notebook sync for Python code cells; registered after the code actions (it confines their edits)."""
    server._notebook_document_sync = types.NotebookDocumentSyncOptions(
        notebook_selector=[types.NotebookDocumentFilterWithCells(
            cells=[types.NotebookCellLanguage(language=PYTHON)], notebook="*")],
        save=False,
    )
    server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)(did_open)
    server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)(did_change)
    server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)(did_close)
    _wrap_publish(server)
    _wrap_resolve(server)
