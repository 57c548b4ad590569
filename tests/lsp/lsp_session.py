"""Helpers for driving the server from tests: initialize, open, change, wait for analysed versions."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
TIMEOUT_S = 60.0  # generous: the machine is shared; tests check behaviour, never speed


async def start(
    client: LanguageClient,
    root: Path | None = None,
    options: dict[str, Any] | None = None,
    spec: str = "visual-studio-code",
    capabilities: types.ClientCapabilities | None = None,
) -> types.InitializeResult:
    """Initialize with a real client's capabilities and debounce 0 (unless `options` says otherwise)."""
    params = types.InitializeParams(
        capabilities=capabilities or client_capabilities(spec),
        initialization_options={"debounce_ms": 0, **(options or {})},
        root_uri=root.as_uri() if root else None,
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)] if root else None,
    )
    return await client.initialize_session(params)


def open_doc(client: LanguageClient, path: Path, text: str | None = None, language: str = "python", version: int = 1) -> str:
    """didOpen a file (its disk text unless `text` is given); returns its uri."""
    uri = path.as_uri()
    text = path.read_text(encoding="utf-8") if text is None else text
    item = types.TextDocumentItem(uri=uri, language_id=language, version=version, text=text)
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=item))
    return uri


def change(client: LanguageClient, uri: str, version: int, edits: list[tuple[tuple[int, int], tuple[int, int], str]]) -> None:
    """didChange with ranged edits ((line, char), (line, char), new text), applied in order."""
    changes = [
        types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(*a), end=types.Position(*b)), text=text
        )
        for a, b, text in edits
    ]
    params = types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version), content_changes=changes
    )
    client.text_document_did_change(params)


async def analysed(client: LanguageClient, uri: str, version: int) -> list[types.Diagnostic]:
    """Wait until the server has published diagnostics for `version` of `uri`; return them.

    Tests that expect a re-publication of the same version (a settings change) first `forget(uri)`.
    """

    async def reached() -> None:
        while client.analysed.get(uri) != version:  # type: ignore[attr-defined]
            await asyncio.sleep(0.01)

    await asyncio.wait_for(reached(), TIMEOUT_S)
    return list(client.diagnostics.get(uri, []))


def apply_edit(text: str, edits: list[types.TextEdit]) -> str:
    """Apply LSP text edits (UTF-16 positions, non-overlapping) to `text`, like an editor does."""
    lines = text.split("\n")

    def offset(pos: types.Position) -> int:
        start = sum(len(line) + 1 for line in lines[: pos.line])
        line = lines[pos.line] if pos.line < len(lines) else ""
        units = 0
        for i, ch in enumerate(line):
            if units >= pos.character:
                return start + i
            units += 2 if ord(ch) > 0xFFFF else 1
        return start + len(line)

    spans = sorted(((offset(e.range.start), offset(e.range.end), e.new_text) for e in edits), reverse=True)
    for a, b, new in spans:
        text = text[:a] + new + text[b:]
    return text


def forget(client: LanguageClient, uri: str) -> None:
    """Forget which version of `uri` was analysed, to wait for the next publication."""
    client.analysed.pop(uri, None)  # type: ignore[attr-defined]


SNIPPET = '''import torch
from torch import nn


class SelfOutput(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dense(hidden_states)
        hidden_states = self.dropout(hidden_states)
        hidden_states = self.LayerNorm(hidden_states + input_tensor)
        return hidden_states


class Layer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.output = SelfOutput(config)

    def forward(self, x, residual):
        return self.output(x, residual)
'''
F05 = "f05-dropout-add-layernorm"


def codes(diagnostics: list[types.Diagnostic]) -> list[str]:
    return [str(d.code) for d in diagnostics if d.code is not None]
