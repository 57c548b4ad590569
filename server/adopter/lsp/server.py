"""The Adopter language server: state shared by the features, and their registration."""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method

from adopter import __version__
from adopter.dsl.types import Problem
from adopter.lsp.documents import Analyses, Document
from adopter.lsp.pipeline import RuleContext, Snapshot, load_rule_context
from adopter.lsp.settings import Settings

log = logging.getLogger(__name__)

ANALYSIS_DONE = "adopter/analysisDone"  # custom notification: uri, version, elapsed_ms (for benchmarks)


def freeze_long_lived() -> None:
    """Take what is alive now (modules, grammars, the loaded rules) out of the cyclic GC's scans.

    A full collection otherwise walks those ~70,000 objects: 40 ms, landing on whichever keystroke's
    analysis happens to trigger it (1.1 ms frozen). Called when rules are (re)loaded: the previous
    freeze is undone first, so rules dropped by a settings change can be collected.
    """
    gc.unfreeze()
    gc.collect()
    gc.freeze()


class AdopterProtocol(LanguageServerProtocol):
    """pygls' protocol, always negotiating UTF-16 positions, with a faster document sync.

    pygls re-splits the whole document into lines for every change; Adopter's line index applies a
    change with a few slices and also yields the tree-sitter edit. pygls' copy is then set to the
    same text, so every other part of pygls sees the document as usual.
    """

    _server: AdopterServer

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Any:
        # Adopter converts positions as UTF-16, the encoding every client must support; pygls would
        # otherwise pick the client's first preference (Neovim prefers UTF-8).
        general = params.capabilities.general
        if general is not None and general.position_encodings:
            general.position_encodings = [types.PositionEncodingKind.Utf16]
        return (yield from super().lsp_initialize(params))

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams) -> Any:
        doc = self._server.analyses.change(
            params.text_document.uri, params.text_document.version, list(params.content_changes)
        )
        if doc is None:  # not a document Adopter tracks: pygls' own sync
            return (yield from super().lsp_text_document__did_change(params))
        mirror = self.workspace.text_documents.get(params.text_document.uri)
        if mirror is not None:
            mirror.apply_change(types.TextDocumentContentChangeWholeDocument(text=doc.text))
            mirror.version = params.text_document.version
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None


class AdopterServer(LanguageServer):
    """pygls server plus Adopter's state: settings, open documents, rules for the current settings."""

    def __init__(self) -> None:
        super().__init__("adopter", __version__, protocol_cls=AdopterProtocol)
        self.settings = Settings()
        self.settings_sources: dict[str, Any] = {}  # source name -> raw mapping, merged in order
        self.analyses = Analyses(self.rule_context)
        self._rule_context: RuleContext | None = None
        self._rule_lock = threading.Lock()
        self.searches: dict[str, asyncio.Event] = {}  # progress token -> cancel event
        self.reported_problems: set[Problem] = set()  # broken rule files already shown

    # -- settings and rules ---------------------------------------------------------------------

    def root(self) -> Path | None:
        """The workspace root folder, when the client opened one."""
        try:
            root = self.workspace.root_path
        except RuntimeError:  # before initialize
            return None
        return Path(root) if root else None

    def rule_context(self) -> RuleContext:
        """Rules and environment for the current settings (loaded lazily, on the analysis thread)."""
        with self._rule_lock:
            context = self._rule_context
            if context is None or context.settings is not self.settings:
                context = load_rule_context(self.settings, self.root())
                self._rule_context = context
                freeze_long_lived()
            return context

    def warm_up(self) -> None:
        """Load rules on the analysis thread now, so the first opened file does not wait for them."""
        asyncio.get_running_loop().run_in_executor(self.analyses.executor, self._warm)

    def _warm(self) -> None:
        self.rule_context()
        try:  # importing the analysis loads the tree-sitter grammar: do it before the first keystroke
            import adopter.analysis.incremental  # noqa: F401
            from adopter.lsp.reach import server_reach

            server_reach()  # deferred: an analysis never waits for jedi
        except ImportError:
            pass

    def invalidate_rules(self) -> None:
        with self._rule_lock:
            self._rule_context = None
        self.reported_problems.clear()

    # -- analysis scheduling ---------------------------------------------------------------------

    def current_version(self, uri: str) -> tuple[bool, int | None]:
        """(open, version) of a document as the client has it now."""
        doc = self.analyses.documents.get(uri)
        return (False, None) if doc is None else (True, doc.version)

    def schedule(self, doc: Document, delay_ms: int) -> None:
        """(Re)start the document's debounced analysis; a superseded run is cancelled."""
        if doc.task is not None and not doc.task.done():
            doc.task.cancel()
        doc.task = asyncio.ensure_future(self._analyse_and_publish(doc, delay_ms))

    async def _analyse_and_publish(self, doc: Document, delay_ms: int) -> Snapshot | None:
        if delay_ms > 0:
            await asyncio.sleep(delay_ms / 1000)
        snapshot = await self.analyses.run(doc)
        if snapshot is None or doc.closed or doc.version != snapshot.version:
            return None  # the document moved on or closed: a newer run publishes
        from adopter.lsp.diagnostics import publish

        doc.snapshot = snapshot
        publish(self, doc, snapshot)
        from adopter.lsp.reach import after_publish

        after_publish(self)  # names the analysis queued for jedi are resolved off this path
        return snapshot

    async def snapshot(self, uri: str) -> Snapshot | None:
        """The analysis of the document's current version, running it now if needed (no debounce)."""
        doc = self.analyses.documents.get(uri)
        if doc is None:
            return None
        if doc.snapshot is not None and doc.snapshot.version == doc.version:
            return doc.snapshot
        if doc.task is not None and not doc.task.done():
            doc.task.cancel()
        doc.task = asyncio.ensure_future(self._analyse_and_publish(doc, 0))
        try:
            return await asyncio.shield(doc.task)
        except asyncio.CancelledError:
            # A newer edit superseded the run we waited for; answer from the latest state, if current.
            latest = doc.snapshot
            return latest if latest is not None and latest.version == doc.version else None

    def reanalyse_all(self) -> None:
        for doc in list(self.analyses.documents.values()):
            self.schedule(doc, 0)

    # -- messages -------------------------------------------------------------------------------

    def show(self, message: str, kind: types.MessageType = types.MessageType.Warning) -> None:
        log.warning("%s", message)
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))


def build_server() -> AdopterServer:
    """A server with every feature registered."""
    from adopter.lsp import (
        code_actions,
        code_lens,
        commands,
        diagnostics,
        hover,
        notebooks,  # last: it confines the code actions' edits to a notebook's cell
        reach,
        rule_files,
        settings,
    )

    server = AdopterServer()
    for feature in (settings, diagnostics, code_actions, hover, rule_files, reach, commands, code_lens, notebooks):
        feature.register(server)
    return server
