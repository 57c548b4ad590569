"""Work-done progress that the user can cancel, for the commands that run for a while."""

from __future__ import annotations

import contextlib

from lsprotocol import types

from adopter.lsp.server import AdopterServer


async def begin_progress(ls: AdopterServer, token: str, title: str) -> None:
    """Create a cancellable work-done progress `token` (when the client supports it) and begin it."""
    window = ls.client_capabilities.window
    if window is not None and window.work_done_progress:
        with contextlib.suppress(Exception):  # a client refusing the token still gets the result
            await ls.work_done_progress.create_async(token)
    begin = types.WorkDoneProgressBegin(title=title, cancellable=True, percentage=0)
    ls.work_done_progress.begin(token, begin)
