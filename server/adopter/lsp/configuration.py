"""Configuration: settings from initializationOptions, `workspace/configuration` and
`workspace/didChangeConfiguration` (merged over `[tool.adopter]`, see `adopter.lsp.settings`), and rule
files: saving one the server loads reloads the rules. Either change re-analyses the open documents."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.uris import to_fs_path

from adopter.lsp.settings import pyproject_settings, resolve_settings

if TYPE_CHECKING:
    from adopter.lsp.server import AdopterServer


def apply_sources(ls: AdopterServer) -> None:
    """Recompute the settings from all sources; report bad keys; re-analyse when they changed."""
    root = ls.root()
    pyproject, problems = pyproject_settings(root)
    sources = {"pyproject.toml [tool.adopter]": pyproject, **ls.settings_sources}
    settings, found = resolve_settings(sources)
    for message in problems + found:
        ls.show(message)
    if settings != ls.settings:
        ls.settings = settings
        ls.invalidate_rules()
        ls.publisher.reanalyse_all()


def initialize(ls: AdopterServer, params: types.InitializeParams) -> None:
    """Read initializationOptions (the settings the client had at start-up)."""
    ls.settings_sources["initializationOptions"] = params.initialization_options
    apply_sources(ls)


async def initialized(ls: AdopterServer, params: types.InitializedParams) -> None:
    """Pull the "adopter" configuration section when supported, then load the rules ahead of the first open."""
    await pull_configuration(ls)
    ls.warm_up()


async def did_change_configuration(ls: AdopterServer, params: types.DidChangeConfigurationParams) -> None:
    """Settings changed: pull them if the client can answer, else take the pushed object."""
    if not await pull_configuration(ls):
        ls.settings_sources["workspace/didChangeConfiguration"] = params.settings
        apply_sources(ls)


async def pull_configuration(ls: AdopterServer) -> bool:
    """`workspace/configuration` for section "adopter"; False when the client does not support it."""
    workspace = ls.client_capabilities.workspace
    if workspace is None or not workspace.configuration:
        return False
    try:
        items = [types.ConfigurationItem(section="adopter")]
        result = await ls.workspace_configuration_async(types.ConfigurationParams(items=items))
    except Exception as exc:  # a client that fails the request keeps the settings we have
        ls.show(f"Adopter: could not read the client's settings: {exc}")
        return False
    ls.settings_sources["workspace/configuration"] = result[0] if result else None
    apply_sources(ls)
    return True


def did_save(ls: AdopterServer, params: types.DidSaveTextDocumentParams) -> None:
    """A saved rule file may be one the server loads: reload the rules and re-analyse open documents.
    A saved Python file goes to the server's file listeners (other files may import it)."""
    doc = ls.analyses.documents.get(params.text_document.uri)
    if doc is not None and doc.rule_file:
        ls.invalidate_rules()
        ls.publisher.reanalyse_all()
    elif params.text_document.uri.startswith("file:") and params.text_document.uri.endswith(".py"):
        path = to_fs_path(params.text_document.uri)
        if path:
            for listener in ls.file_listeners:
                listener([path])


def register(server: AdopterServer) -> None:
    server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))(did_save)
    server.feature(types.INITIALIZE)(initialize)
    server.feature(types.INITIALIZED)(initialized)
    server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)(did_change_configuration)
