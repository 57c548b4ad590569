"""pytest-lsp fixture: the real server over stdio, recording `adopter/analysisDone` per document."""

from __future__ import annotations

import sys
from typing import Any

import pytest_lsp
from pytest_lsp import ClientServerConfig, LanguageClient


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "adopter", "lsp"]))
async def client(lsp_client: LanguageClient):
    """A client connected to a fresh server; tests call `start(...)` to initialize it."""
    lsp_client.analysed = {}  # type: ignore[attr-defined]
    lsp_client.reparsed = {}  # type: ignore[attr-defined]  # uri -> how the last analysis parsed ("full", "incremental")
    lsp_client.applied_edits = []  # type: ignore[attr-defined]

    @lsp_client.feature("adopter/analysisDone")
    def analysis_done(params: Any) -> None:
        lsp_client.reparsed[params.uri] = getattr(params, "reparse", None)  # type: ignore[attr-defined]
        lsp_client.analysed[params.uri] = params.version  # type: ignore[attr-defined]

    yield lsp_client
    await lsp_client.shutdown_session()
