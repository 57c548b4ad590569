"""Jupyter notebooks (LSP notebook document sync, as ruff's server does): findings, quick fixes and hover
in Python code cells.

Each code cell is analysed as its own document whose text is the cell followed by the notebook's other
code cells (in notebook order). The cell's positions are then the document's own, so diagnostics, hover
and code actions need no mapping, and a class or an import of another cell is seen. What lies past the
cell's last line belongs to other cells: the cell's document says how many lines are its own
(`OpenDocument.own_lines`), so diagnostics there are not published (each cell reports its own) and a fix
whose edit would reach there is offered disabled, with the reason.
"""

from __future__ import annotations

import dataclasses
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
            doc.own_lines = view.lines  # diagnostics and fixes stay inside the cell (see `OpenDocument.owns`)
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

