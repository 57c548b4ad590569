"""executeCommand surface: debug info (no torch in the server), search refusal and validation."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_session import EXAMPLES, analysed, open_doc, start
from lsprotocol import types
from pytest_lsp import LanguageClient


async def execute(client: LanguageClient, command: str, *arguments: object) -> object:
    params = types.ExecuteCommandParams(command=command, arguments=list(arguments))
    return await client.workspace_execute_command_async(params)


async def test_commands_are_advertised(client: LanguageClient) -> None:
    result = await start(client)
    provider = result.capabilities.execute_command_provider
    assert provider is not None
    assert {"adopter.searchAccelerator", "adopter.showArchitecture", "adopter.debugInfo"} <= set(provider.commands)


async def test_server_never_imports_torch(client: LanguageClient) -> None:
    await start(client, EXAMPLES)
    uri = open_doc(client, EXAMPLES / "bert_encoder.py")
    await analysed(client, uri, 1)
    info = await execute(client, "adopter.debugInfo")
    assert info["torch_loaded"] is False
    assert "adopter.lsp.server" in info["modules"]
    assert not any(m == "torch" or m.startswith("torch.") for m in info["modules"])
    assert uri in info["documents"]


@pytest.mark.parametrize("model", ["pkg.models:make_model", "/w/modeling_bert.py:BertModel"])
async def test_search_for_user_code_refused_in_untrusted_workspace(client: LanguageClient, model: str) -> None:
    """The user's factory or class runs the user's code; the zoo models (no user code) are allowed."""
    await start(client, options={"trusted": False})
    with pytest.raises(Exception, match="not trusted"):
        await execute(client, "adopter.searchAccelerator", {"model": model})


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ((), "one object argument"),
        (({"budget": 3},), "which model"),
        (({"model": "bert-base", "colour": "red"},), "unknown keys"),
    ],
)
async def test_search_rejects_bad_arguments(client: LanguageClient, arguments: tuple[object, ...], message: str) -> None:
    await start(client)
    with pytest.raises(Exception, match=message):
        await execute(client, "adopter.searchAccelerator", *arguments)


async def test_trust_cannot_be_granted_by_a_later_settings_change(client: LanguageClient) -> None:
    await start(client, options={"trusted": False})
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"adopter": {"trusted": True}})
    )
    info = await execute(client, "adopter.debugInfo")
    assert info["settings"]["trusted"] is False


async def test_show_architecture_by_line_and_by_class(client: LanguageClient, tmp_path: Path) -> None:
    from lsp_session import SNIPPET

    await start(client, tmp_path)
    uri = open_doc(client, tmp_path / "model.py", SNIPPET)
    await analysed(client, uri, 1)
    by_line = await execute(client, "adopter.showArchitecture", {"uri": uri, "line": 13})
    assert isinstance(by_line, str) and "SelfOutput" in by_line and "dropout" in by_line
    by_class = await execute(client, "adopter.showArchitecture", {"uri": uri, "class": "Layer"})
    assert isinstance(by_class, str) and "Layer" in by_class and "SelfOutput" in by_class
    assert await execute(client, "adopter.showArchitecture", {"uri": uri, "line": 0}) is None
