"""The Adopter language server's state shared by the features: settings, rules, documents, publishing.

It imports no feature; `adopter.lsp.app.build_server` registers them."""

from __future__ import annotations

import asyncio
import functools
import gc
import inspect
import json
import logging
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import FeatureNotificationError, JsonRpcInternalError
from pygls.feature_manager import is_thread_function
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method

from adopter import __version__
from adopter.dsl.types import Problem
from adopter.lsp import wire
from adopter.lsp.documents import Analyses
from adopter.lsp.pipeline import Configured, load_rule_context
from adopter.lsp.publish import Publisher
from adopter.lsp.settings import Settings

log = logging.getLogger(__name__)


def freeze_long_lived() -> None:
    """Take what is alive now (modules, grammars, the loaded rules) out of the cyclic GC's scans.

    A full collection otherwise walks those ~70,000 objects: 40 ms, landing on whichever keystroke's
    analysis happens to trigger it (1.1 ms frozen). Called when rules are (re)loaded: the previous
    freeze is undone first, so rules dropped by a settings change can be collected. The first freeze
    collects nothing first: start-up leaves ~20 unreachable objects, and a full collection of everything
    loaded would cost ~40 ms before the first diagnostics.
    """
    if gc.get_freeze_count():
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
        if not self._apply_change(params):  # not a document Adopter tracks: pygls' own sync
            return (yield from super().lsp_text_document__did_change(params))
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    def _apply_change(self, params: types.DidChangeTextDocumentParams) -> bool:
        """Apply a didChange to Adopter's document and pygls' copy; False for a document Adopter does not track."""
        doc = self._server.analyses.change(
            params.text_document.uri, params.text_document.version, list(params.content_changes)
        )
        if doc is None:
            return False
        mirror = self.workspace.text_documents.get(params.text_document.uri)
        if mirror is not None:
            mirror.apply_change(types.TextDocumentContentChangeWholeDocument(text=doc.text))
            mirror.version = params.text_document.version
        return True

    def handle_message(self, message: Any) -> None:
        """pygls' dispatch, except a tracked document's didChange (every keystroke's message), handled here at
        once, as `lsp_text_document__did_change` would: pygls tests each message against runtime-checkable
        protocols, makes a uuid and a context for it and runs the handlers through a generator (0.1 ms)."""
        if type(message) is types.DidChangeTextDocumentNotification and message.jsonrpc == "2.0" and not self._shutdown:
            handler = self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)
            if handler is None or _plain(handler):
                try:
                    if self._apply_change(message.params):
                        if handler is not None:
                            handler(message.params)
                        return
                except Exception:  # reported as pygls reports a notification handler's failure
                    error = JsonRpcInternalError.of(sys.exc_info())  # type: ignore[no-untyped-call]
                    self._server._report_server_error(error, FeatureNotificationError)
                    return
        super().handle_message(message)


@functools.cache
def _plain(handler: Callable[..., Any]) -> bool:
    """Whether pygls would call `handler` directly (not a coroutine, generator or thread handler)."""
    return not (asyncio.iscoroutinefunction(handler) or inspect.isgeneratorfunction(handler)
                or is_thread_function(handler))  # type: ignore[no-untyped-call]


class AdopterServer(LanguageServer):
    """pygls server plus Adopter's state: settings, open documents, rules for the current settings."""

    def __init__(self) -> None:
        super().__init__("adopter", __version__, protocol_cls=AdopterProtocol)
        self.settings = Settings()
        self.settings_sources: dict[str, Any] = {}  # source name -> raw mapping, merged in order
        self.analyses = Analyses(self.rule_context)
        self.publisher = Publisher(self.analyses, self)  # change -> schedule -> publish
        self._rule_context: Configured | None = None
        self._rule_lock = threading.Lock()
        self.searches: dict[str, asyncio.Event] = {}  # progress token -> cancel event
        self._sends: set[asyncio.Future[Any]] = set()  # writes of `notify_json` still in flight
        self.reported_problems: set[Problem] = set()  # broken rule files already shown
        # Called with the paths of Python files that changed on disk (saved, or reported by the client).
        self.file_listeners: list[Callable[[list[str]], None]] = []

    # -- settings and rules ---------------------------------------------------------------------

    def root(self) -> Path | None:
        """The workspace root folder, when the client opened one."""
        try:
            root = self.workspace.root_path
        except RuntimeError:  # before initialize
            return None
        return Path(root) if root else None

    def rule_context(self) -> Configured:
        """Rules and environment for the current settings (loaded lazily, on the analysis thread)."""
        with self._rule_lock:
            context = self._rule_context
            if context is None or context.settings is not self.settings:
                context = load_rule_context(self.settings, self.root(), self.analyses.reach())
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
        except ImportError:
            pass

    def invalidate_rules(self) -> None:
        with self._rule_lock:
            self._rule_context = None
        self.reported_problems.clear()

    # -- documents ------------------------------------------------------------------------------

    def current_version(self, uri: str) -> tuple[bool, int | None]:
        """(open, version) of a document as the client has it now."""
        doc = self.analyses.documents.get(uri)
        return (False, None) if doc is None else (True, doc.version)

    # -- messages -------------------------------------------------------------------------------

    def notify_json(self, *notifications: tuple[str, str]) -> None:
        """Send (method, params) notifications whose params are JSON text already, in one write: pygls'
        `notify` framing and error handling, without turning lsprotocol objects into JSON
        (`adopter.lsp.publish`)."""
        writer = self.protocol.writer
        if writer is None:
            log.error("Unable to send %s, no available transport!", ", ".join(m for m, _ in notifications))
            return
        headers = getattr(self.protocol, "_include_headers", True)
        bodies = [f'{{"method": {json.dumps(method)}, "params": {params}, "jsonrpc": "2.0"}}'
                  for method, params in notifications]
        try:
            for data in [b"".join(map(wire.frame, bodies))] if headers else [b.encode() for b in bodies]:
                sent = writer.write(data)
                if inspect.isawaitable(sent):  # an asynchronous writer (pygls' websocket one)
                    task = asyncio.ensure_future(sent)
                    self._sends.add(task)
                    task.add_done_callback(self._sends.discard)
        except BrokenPipeError:
            log.exception("Error sending data. BrokenPipeError")
            raise
        except Exception as error:
            log.exception("Error sending data")
            self._report_server_error(error, JsonRpcInternalError)

    def show(self, message: str, kind: types.MessageType = types.MessageType.Warning) -> None:
        log.warning("%s", message)
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))


def has_client_commands(ls: AdopterServer) -> bool:
    """Whether the client declared the extension's commands (VS Code with the Adopter extension)."""
    experimental: Any = getattr(ls.client_capabilities, "experimental", None)
    return isinstance(experimental, dict) and experimental.get("adopterClientCommands") is True
