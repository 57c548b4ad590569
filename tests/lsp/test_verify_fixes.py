"""`adopter.verifyFixes` over LSP: refused where the workspace is untrusted, the buffer's text is run."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_session import analysed, open_doc, start
from lsprotocol import types
from pytest_lsp import LanguageClient

pytest.importorskip("torch")

MODEL = '''import math
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim: int = 16):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.proj(x)
        return 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0))))
'''


async def execute(client: LanguageClient, *arguments: object) -> object:
    params = types.ExecuteCommandParams(command="adopter.verifyFixes", arguments=list(arguments))
    return await client.workspace_execute_command_async(params)


async def test_refused_in_an_untrusted_workspace(client: LanguageClient, tmp_path: Path) -> None:
    await start(client, tmp_path, options={"trusted": False})
    path = tmp_path / "model.py"
    path.write_text(MODEL, encoding="utf-8")
    uri = open_doc(client, path)
    await analysed(client, uri, 1)
    with pytest.raises(Exception, match="not trusted"):
        await execute(client, {"uri": uri, "class": "Block"})


@pytest.mark.parametrize(("arguments", "message"), [
    ((), "one object with a document uri"),
    (({"uri": "file:///x.py", "colour": 1},), "unknown keys"),
    (({"uri": "file:///not/open.py"},), "not an open Python file"),
])
async def test_bad_arguments(client: LanguageClient, arguments: tuple[object, ...], message: str) -> None:
    await start(client)
    with pytest.raises(Exception, match=message):
        await execute(client, *arguments)


async def test_the_editors_text_is_verified_not_the_file_on_disk(client: LanguageClient, tmp_path: Path) -> None:
    await start(client, tmp_path)
    path = tmp_path / "model.py"
    path.write_text("this file on disk does not even parse (\n", encoding="utf-8")
    uri = open_doc(client, path, text=MODEL)  # unsaved buffer
    await analysed(client, uri, 1)
    result = await execute(client, {"uri": uri, "class": "Block", "repeats": 2})
    assert isinstance(result, dict)
    (row,) = result["rows"]
    assert row["rule"].startswith("f13") and row["line"] == 13 and row["class"] == "Block"
    assert row["equivalent"] is True and row["checkpoint_loads"] is True and row["pairs"] == 2
    assert path.read_text(encoding="utf-8").startswith("this file on disk")  # nothing written
