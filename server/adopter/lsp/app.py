"""The language server with every feature registered (the features import the server, never each other)."""

from __future__ import annotations

from adopter.lsp import (
    code_actions,
    code_lens,
    commands,
    configuration,
    diagnostics,
    hover,
    notebooks,
    reach,
    verify_fixes,
)
from adopter.lsp.server import AdopterServer

# Registration order: notebooks last, since it confines the code actions' edits to a notebook's cell.
FEATURES = (configuration, diagnostics, code_actions, hover, commands, verify_fixes, code_lens, reach, notebooks)


def build_server() -> AdopterServer:
    """A server with every feature registered."""
    server = AdopterServer()
    for feature in FEATURES:
        feature.register(server)
    return server
