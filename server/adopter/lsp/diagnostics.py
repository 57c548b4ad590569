"""Document sync: open, change and close schedule the analysis whose diagnostics `adopter.lsp.publish`
publishes per version (the protocol has already applied a change's text; see `AdopterProtocol`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from adopter.lsp.server import AdopterServer


def did_open(ls: AdopterServer, params: types.DidOpenTextDocumentParams) -> None:
    """Analyse a newly opened document at once (no debounce: nothing is being typed yet)."""
    item = params.text_document
    doc = ls.analyses.open(item.uri, item.language_id, item.text, item.version)
    ls.publisher.schedule(doc, 0)


def did_change(ls: AdopterServer, params: types.DidChangeTextDocumentParams) -> None:
    """(Re)start the document's debounced analysis (the protocol has already applied the changes)."""
    doc = ls.analyses.documents.get(params.text_document.uri)
    if doc is not None:
        ls.publisher.schedule(doc, ls.settings.debounce_ms)


def did_close(ls: AdopterServer, params: types.DidCloseTextDocumentParams) -> None:
    """Forget the document and clear its diagnostics."""
    ls.analyses.close(params.text_document.uri)
    clear = types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[])
    ls.text_document_publish_diagnostics(clear)


def register(server: AdopterServer) -> None:
    server.feature(types.TEXT_DOCUMENT_DID_OPEN)(did_open)
    server.feature(types.TEXT_DOCUMENT_DID_CHANGE)(did_change)
    server.feature(types.TEXT_DOCUMENT_DID_CLOSE)(did_close)
