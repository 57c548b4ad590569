"""Cross-file reach in the language server: jedi off the keystroke path, and refresh on saved imports.

The analysis thread never waits for jedi: the server's own `CrossFileReach` (`Analyses.reach`, made
deferred, handed to every analysis the server runs) queues the imported names it has not resolved yet. After a publish, the queue is resolved on this module's
own thread and the open documents are analysed again when something was found. Saving a Python file
(or the client reporting it changed on disk) drops what was read from it; the open documents that
used it are analysed again, so their findings follow the imported code. Summaries are read from disk
only, so the server and a fresh `adopter check` see the same ones.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.uris import to_fs_path

if TYPE_CHECKING:
    from adopter.analysis.crossfile.reach import CrossFileReach
    from adopter.lsp.server import AdopterServer

log = logging.getLogger(__name__)
_EXECUTOR = ThreadPoolExecutor(max_workers=1, thread_name_prefix="adopter-reach")
_RUNNING: set[int] = set()  # servers with a resolution in flight (one at a time)


def server_reach(ls: AdopterServer) -> CrossFileReach | None:
    """The server's deferred reach (None when `ADOPTER_CROSSFILE=0`)."""
    return ls.analyses.reach()


def after_publish(ls: AdopterServer) -> None:
    """Resolve queued names on the reach thread; re-analyse the open documents if any was found."""
    reach = server_reach(ls)
    if reach is None or not reach.has_pending() or id(ls) in _RUNNING:
        return
    _RUNNING.add(id(ls))
    future = asyncio.get_running_loop().run_in_executor(_EXECUTOR, reach.resolve_pending)

    def done(f: asyncio.Future[int]) -> None:
        _RUNNING.discard(id(ls))
        try:
            found = f.result()
        except Exception:  # resolution is best effort: the findings stay as they were
            log.exception("cross-file resolution failed")
            return
        if found:
            reanalyse(ls, None)

    future.add_done_callback(done)


def reanalyse(ls: AdopterServer, except_path: str | None) -> None:
    """Analyse every open Python document again from scratch (its cached classes used old summaries)."""
    documents = list(ls.analyses.documents.values())
    # Remembered analyses of unchanged texts are stale too: forget them in every session that analysed an
    # open document (asking the server for its session could load rules, and this runs on the event loop).
    sessions = {id(s): s for doc in documents if doc.snapshot is not None and (s := doc.snapshot.session)}
    for session in sessions.values():
        session.forget()
    for doc in documents:
        if doc.rule_file or doc.closed or (except_path is not None and doc.path == except_path):
            continue
        with doc.lock:
            doc.reset = True
        ls.publisher.schedule(doc, 0)


def files_changed(ls: AdopterServer, paths: list[str]) -> None:
    """Python files changed on disk: forget what was read from them and refresh their importers."""
    reach = server_reach(ls)
    paths = [p for p in paths if p.endswith(".py")]
    if reach is not None and paths and reach.changed(paths):
        reanalyse(ls, paths[0] if len(paths) == 1 else None)


def did_change_watched_files(ls: AdopterServer, params: types.DidChangeWatchedFilesParams) -> None:
    """The client saw files change on disk (another editor, git): same as a save."""
    files_changed(ls, [to_fs_path(c.uri) or "" for c in params.changes if c.uri.startswith("file:")])


def register(server: AdopterServer) -> None:
    """After each publication, resolve what was queued; saved or changed files refresh their importers."""
    server.publisher.after_publish.append(lambda: after_publish(server))
    server.file_listeners.append(lambda paths: files_changed(server, paths))
    server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)(did_change_watched_files)
