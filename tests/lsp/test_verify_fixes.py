"""`adopter.verifyFixes` over LSP: refused where the workspace is untrusted, the buffer's text is run, one
finding's fix when the request names it, a cancel kills the run; the *Verify and measure* code action."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Union

import pytest
from lsp_session import analysed, open_doc, start
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

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


TWO_FIXES = '''import math
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim: int = 16):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.proj(x)
        h = 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0))))
        g = self.out(h)
        return 0.5 * g * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (g + 0.044715 * torch.pow(g, 3.0))))
'''


def _with_client_commands() -> types.ClientCapabilities:
    capabilities = client_capabilities("visual-studio-code")
    capabilities.experimental = {"adopterClientCommands": True}
    return capabilities


async def _actions(client: LanguageClient, uri: str, diagnostic: types.Diagnostic) -> list[types.CodeAction]:
    params = types.CodeActionParams(text_document=types.TextDocumentIdentifier(uri=uri), range=diagnostic.range,
                                    context=types.CodeActionContext(diagnostics=[diagnostic]))
    # lsprotocol reads any object with a `command` key as a Command, so a CodeAction that carries a command
    # would come back as one: read them as VS Code does (a Command's `command` is a string).
    converter = client.protocol._converter  # type: ignore[attr-defined]
    converter.register_structure_hook(Union[types.Command, types.CodeAction], lambda o, _: converter.structure(  # noqa: UP007 (the key lsprotocol registered)
        o, types.Command if isinstance(o.get("command"), str) else types.CodeAction))
    return [a for a in await client.text_document_code_action_async(params) or [] if isinstance(a, types.CodeAction)]


async def test_a_verify_action_beside_the_quick_fix_runs_that_fix(client: LanguageClient, tmp_path: Path) -> None:
    await start(client, tmp_path, capabilities=_with_client_commands())
    uri = open_doc(client, tmp_path / "model.py", MODEL)
    (diagnostic,) = [d for d in await analysed(client, uri, 1) if str(d.code).startswith("f13")]
    actions = await _actions(client, uri, diagnostic)
    fixes = [a for a in actions if a.command is None]
    (verify,) = [a for a in actions if a.command is not None]
    assert fixes and verify.title.startswith("Adopter: Verify and measure")
    assert verify.kind == "quickfix" and list(verify.diagnostics or []) == [diagnostic] and verify.edit is None
    assert verify.command is not None and verify.command.command == "adopter.client.verifyFixes"
    (target,) = verify.command.arguments or []
    # VS Code resolves the chosen action, a command action too: it comes back as it was, and no message
    assert await client.code_action_resolve_async(verify) == verify
    assert target == {"uri": uri, "class": "Block", "rule": diagnostic.code, "line": 13}
    # the target, as the client passes it on to the server's command, runs that one fix
    result = await execute(client, {**target, "repeats": 2})
    assert isinstance(result, dict)
    assert [(r["rule"], r["line"], r["class"], r["equivalent"]) for r in result["rows"]] == [(diagnostic.code, 13, "Block", True)]
    assert client.messages == []


async def test_no_verify_action_for_a_client_without_the_command(client: LanguageClient, tmp_path: Path) -> None:
    await start(client, tmp_path)
    uri = open_doc(client, tmp_path / "model.py", MODEL)
    (diagnostic,) = [d for d in await analysed(client, uri, 1) if str(d.code).startswith("f13")]
    actions = await _actions(client, uri, diagnostic)
    assert actions and all(a.command is None for a in actions)


async def test_rule_and_line_select_one_fix_of_the_class(client: LanguageClient, tmp_path: Path) -> None:
    await start(client, tmp_path)
    uri = open_doc(client, tmp_path / "model.py", TWO_FIXES)
    lines = sorted(d.range.start.line + 1 for d in await analysed(client, uri, 1) if str(d.code).startswith("f13"))
    assert lines == [14, 16]
    result = await execute(client, {"uri": uri, "class": "Block", "line": 16, "repeats": 2})
    assert isinstance(result, dict) and [r["line"] for r in result["rows"]] == [16]


def _workers_of(server_pid: int) -> list[int]:
    """The verify worker processes the server started (its children running `adopter.verify.worker`)."""
    out = []
    for entry in Path("/proc").iterdir():
        try:
            if not entry.name.isdigit() or b"adopter.verify.worker" not in (entry / "cmdline").read_bytes():
                continue
            ppid = next(line for line in (entry / "status").read_text().splitlines() if line.startswith("PPid:"))
        except (OSError, StopIteration):
            continue
        if int(ppid.split()[1]) == server_pid:
            out.append(int(entry.name))
    return out


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the process table from /proc")
async def test_cancelling_the_progress_kills_the_run(client: LanguageClient, tmp_path: Path) -> None:
    await start(client, tmp_path)
    uri = open_doc(client, tmp_path / "model.py", MODEL)
    await analysed(client, uri, 1)
    running = asyncio.ensure_future(execute(client, {"uri": uri, "class": "Block", "repeats": 1_000_000}))
    server_pid = client._server.pid  # type: ignore[union-attr]
    for _ in range(600):  # the worker is up and the progress begun (at most 60 s: the machine may be busy)
        tokens = [t for t, reports in client.progress_reports.items()
                  if any(isinstance(r, types.WorkDoneProgressBegin) and r.cancellable for r in reports)]
        if tokens and _workers_of(server_pid):
            break
        await asyncio.sleep(0.1)
    (token,) = tokens
    assert _workers_of(server_pid)
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    with pytest.raises(Exception, match="cancelled"):
        await asyncio.wait_for(running, 60)
    assert _workers_of(server_pid) == []
    ends = [r for r in client.progress_reports[token] if isinstance(r, types.WorkDoneProgressEnd)]
    assert [e.message for e in ends] == ["cancelled"]
