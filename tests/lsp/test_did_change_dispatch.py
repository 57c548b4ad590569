"""A tracked document's didChange (every keystroke) is handled by `AdopterProtocol.handle_message` at once,
without pygls' dispatch; what it does is what pygls' path does (`lsp_text_document__did_change`)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pygls.exceptions import FeatureNotificationError, JsonRpcInternalError
from pygls.workspace import Workspace

from adopter.lsp.app import build_server
from adopter.lsp.server import AdopterServer

URI = "file:///w/model.py"
TEXT = "import torch.nn as nn\n\n\nclass M(nn.Module):\n    def forward(self, x):\n        return x\n"


class Null:
    def write(self, data: bytes) -> None:
        pass

    def close(self) -> None:
        pass


def did_change(server: AdopterServer, uri: str, version: int, line: int, character: int, text: str) -> Any:
    change = {"range": {"start": {"line": line, "character": character}, "end": {"line": line, "character": character}},
              "text": text}
    body = json.dumps({"jsonrpc": "2.0", "method": "textDocument/didChange",
                       "params": {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]}})
    return json.loads(body, object_hook=server.protocol.structure_message)


def served() -> AdopterServer:
    server = build_server()
    server.protocol.set_writer(Null())
    server.protocol._workspace = Workspace(None)  # as `initialize` leaves it
    server.analyses.compute = lambda doc: None  # type: ignore[method-assign]  # the event loop's part only
    return server


def test_did_change_is_applied_without_pygls_dispatch_for_tracked_documents(monkeypatch: pytest.MonkeyPatch) -> None:
    """Adopter's document and pygls' copy get the change and the analysis is scheduled, without pygls'
    dispatch; an untracked document goes through pygls' own sync; a failure is reported as pygls does."""
    server = served()
    dispatched: list[str] = []
    original = server.protocol._handle_notification
    monkeypatch.setattr(server.protocol, "_handle_notification",
                        lambda method, params: dispatched.append(method) or original(method, params))
    scheduled: list[int | None] = []
    monkeypatch.setattr(server.publisher, "schedule", lambda doc, delay: scheduled.append(doc.version))
    reported: list[tuple[type, type]] = []
    monkeypatch.setattr(server, "_report_server_error", lambda error, source: reported.append((type(error), source)))
    expected = "# top\n" + TEXT.replace("forward(self, x)", "forward(self, x, y)")

    async def run() -> None:
        server.analyses.open(URI, "python", TEXT, 1)
        for uri in (URI, "file:///w/notes.txt"):
            server.protocol.workspace.put_text_document(_item(uri))
            server.protocol.handle_message(did_change(server, uri, 2, 4, 23, ", y"))
            server.protocol.handle_message(did_change(server, uri, 3, 0, 0, "# top\n"))
            await asyncio.sleep(0)
            assert server.protocol.workspace.get_text_document(uri).source == expected
            assert server.protocol.workspace.get_text_document(uri).version == 3
        doc = server.analyses.documents[URI]
        assert (doc.text, doc.version) == (expected, 3)
        assert dispatched == ["textDocument/didChange"] * 2  # the untracked document's, through pygls
        assert scheduled == [2, 3]

    asyncio.run(run())

    def fail(*args: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(server.analyses, "change", fail)
    server.protocol.handle_message(did_change(server, URI, 4, 0, 0, "x"))
    assert reported == [(JsonRpcInternalError, FeatureNotificationError)]


def _item(uri: str) -> Any:
    from lsprotocol import types

    return types.TextDocumentItem(uri=uri, language_id="python", version=1, text=TEXT)
