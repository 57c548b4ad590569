"""adopter.searchAccelerator end to end: a worker process runs the search with progress; the
server process stays free of torch; cancelling the progress stops the search early."""

from __future__ import annotations

import asyncio

import pytest
from lsp_session import start
from lsprotocol import types
from pytest_lsp import LanguageClient

pytestmark = [pytest.mark.torch, pytest.mark.slow]


def search_params(**request: object) -> types.ExecuteCommandParams:
    return types.ExecuteCommandParams(command="adopter.searchAccelerator", arguments=[request])


async def test_search_reports_progress_and_returns_the_report(client: LanguageClient) -> None:
    await start(client)
    report = await client.workspace_execute_command_async(search_params(model="bert-base", budget=20, seed=0))
    assert isinstance(report, dict) and not report.get("error"), report
    (token,) = list(client.progress_reports)
    kinds = [type(p).__name__ for p in client.progress_reports[token]]
    assert kinds[0] == "WorkDoneProgressBegin" and kinds[-1] == "WorkDoneProgressEnd"
    assert "WorkDoneProgressReport" in kinds
    info = await client.workspace_execute_command_async(types.ExecuteCommandParams(command="adopter.debugInfo"))
    assert info["torch_loaded"] is False


async def test_cancelling_the_progress_stops_the_search(client: LanguageClient) -> None:
    await start(client)
    request = asyncio.ensure_future(
        client.workspace_execute_command_async(search_params(model="bert-base", budget=100000, seed=0))
    )
    for _ in range(6000):  # wait for the first progress report
        reports = [r for rs in client.progress_reports.values() for r in rs if isinstance(r, types.WorkDoneProgressReport)]
        if reports:
            break
        await asyncio.sleep(0.05)
    (token,) = list(client.progress_reports)
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    await asyncio.wait_for(request, 120)
    end = client.progress_reports[token][-1]
    assert isinstance(end, types.WorkDoneProgressEnd) and end.message == "cancelled"
