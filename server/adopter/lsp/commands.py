"""`workspace/executeCommand`: accelerator search (with progress and cancellation), architecture text,
and a debug snapshot of the server process."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import sys
import uuid
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams, JsonRpcRequestCancelled

from adopter.lsp.locate import architecture_at, enclosing
from adopter.lsp.progress import begin_progress
from adopter.lsp.server import AdopterServer

SEARCH = "adopter.searchAccelerator"
SHOW_ARCHITECTURE = "adopter.showArchitecture"
DEBUG_INFO = "adopter.debugInfo"
SEARCH_KEYS = frozenset({
    "model", "factory", "batch", "seq", "objective", "limits", "pipeline", "tensor_parallel", "strategy", "budget",
    "seed", "top_k", "microbatches", "workers",
})
CANCEL_GRACE_S = 10.0  # how long a cancelled search may take to return its partial report


def search_arguments(args: tuple[Any, ...]) -> dict[str, Any]:
    """Validate the command's arguments: one object naming a model or a factory, known keys only."""
    if len(args) != 1 or not isinstance(args[0], dict):
        raise JsonRpcInvalidParams(f"{SEARCH} takes one object argument, e.g. {{\"model\": \"bert-base\"}}")
    request = args[0]
    unknown = sorted(set(request) - SEARCH_KEYS)
    if unknown:
        raise JsonRpcInvalidParams(f"{SEARCH}: unknown keys {unknown}; allowed: {sorted(SEARCH_KEYS)}")
    if not request.get("model") and not request.get("factory"):
        raise JsonRpcInvalidParams(f"{SEARCH}: say which model to search for: \"model\" or \"factory\"")
    return request


async def search_accelerator(ls: AdopterServer, *args: Any) -> Any:
    """Run `adopter.wham.search` in a worker process with work-done progress; returns the report JSON."""
    request = search_arguments(args)
    if not ls.settings.trusted and not _zoo_only(request):  # zoo models run none of the user's code
        raise JsonRpcInvalidParams(
            "Adopter: the accelerator search runs model code and this workspace is not trusted; trust it first."
        )
    root = ls.root()
    if root is not None:  # a user's `module:factory` is imported from the workspace
        request = {**request, "workspace": str(root)}
    result, cancelled = await _search_with_progress(ls, request)
    return _report_or_error(result, cancelled)


def _zoo_only(request: dict[str, Any]) -> bool:
    from adopter.wham.models import ZOO_MODELS

    return not request.get("factory") and request.get("model") in ZOO_MODELS


async def _search_with_progress(ls: AdopterServer, request: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The worker's final message, and whether the user cancelled (progress cancel or request cancel)."""
    token = f"adopter-search-{uuid.uuid4().hex[:8]}"
    cancelled = asyncio.Event()
    await begin_progress(ls, token, f"Accelerator search: {request.get('model') or request.get('factory')}")
    progress_future = ls.work_done_progress.tokens.get(token)
    if progress_future is not None:
        progress_future.add_done_callback(lambda f: cancelled.set() if f.cancelled() else None)
    try:
        result = await _run_worker(ls, token, request, cancelled)
    finally:
        ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message="cancelled" if cancelled.is_set() else "done"))
    return result, cancelled.is_set()


def _report_or_error(result: dict[str, Any], cancelled: bool) -> dict[str, Any]:
    report = result.get("report")
    error = result.get("error") or (report or {}).get("error")
    if error and cancelled:
        raise JsonRpcRequestCancelled(f"Adopter accelerator search cancelled: {error}")
    if error or not isinstance(report, dict):
        raise JsonRpcInvalidParams(f"Adopter accelerator search failed: {error}")
    return report


async def _run_worker(ls: AdopterServer, token: str, request: dict[str, Any], cancelled: asyncio.Event) -> dict[str, Any]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "adopter.lsp.search_worker",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=64 * 1024 * 1024,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write((json.dumps(request) + "\n").encode())
    await process.stdin.drain()
    cancel_task = asyncio.ensure_future(_cancel_when(cancelled, process))
    try:
        while line := await process.stdout.readline():
            message = json.loads(line)
            if "progress" not in message:
                return dict(message)
            percentage = max(0, min(100, int(float(message["progress"]) * 100)))
            ls.work_done_progress.report(token, types.WorkDoneProgressReport(message=str(message.get("message", "")), percentage=percentage))
        return {"error": f"the search process ended without a result (exit status {await process.wait()})"}
    except asyncio.CancelledError:  # the client cancelled the request itself
        cancelled.set()
        raise JsonRpcRequestCancelled("accelerator search cancelled") from None
    finally:
        cancel_task.cancel()
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()


async def _cancel_when(cancelled: asyncio.Event, process: asyncio.subprocess.Process) -> None:
    """Ask the worker to stop; kill it if it has not returned its partial report after a grace period."""
    await cancelled.wait()
    if process.stdin is not None:
        with contextlib.suppress(ConnectionError):
            process.stdin.write(b"cancel\n")
            await process.stdin.drain()
    await asyncio.sleep(CANCEL_GRACE_S)
    with contextlib.suppress(ProcessLookupError):
        process.kill()


async def show_architecture(ls: AdopterServer, *args: Any) -> str | None:
    """DSL text of a class: arguments `{uri, class}` or `{uri, line}` (or `uri, class`)."""
    where = args[0] if len(args) == 1 and isinstance(args[0], dict) else dict(zip(("uri", "class"), args))
    uri = where.get("uri")
    if not isinstance(uri, str):
        raise JsonRpcInvalidParams(f"{SHOW_ARCHITECTURE} needs a document uri")
    snapshot = await ls.publisher.snapshot(uri)
    if snapshot is None:
        raise JsonRpcInvalidParams(f"{SHOW_ARCHITECTURE}: {uri} is not open")
    if isinstance(where.get("class"), str):
        arch = snapshot.architecture(where["class"])
    else:
        arch = enclosing(snapshot, int(where.get("line", 0))) or architecture_at(snapshot, int(where.get("line", 0)), 0)
    if arch is None:
        return None
    from adopter.dsl import format_architecture

    return format_architecture(arch)


def debug_info(ls: AdopterServer, *args: Any) -> dict[str, Any]:
    """What the server process has loaded and holds: modules, open documents, settings; with
    `{uri}`, also the version and SHA-256 of the text the server holds for that document."""
    document: dict[str, Any] | None = None
    if args and isinstance(args[0], dict) and args[0].get("uri") in ls.analyses.documents:
        doc = ls.analyses.documents[args[0]["uri"]]
        digest = hashlib.sha256(doc.text.encode("utf-8", errors="surrogatepass")).hexdigest()
        document = {"version": doc.version, "sha256": digest, "length": len(doc.text)}
    return {
        "document": document,
        "pid": __import__("os").getpid(),
        "torch_loaded": "torch" in sys.modules,
        "modules": sorted(sys.modules),
        "documents": sorted(ls.analyses.documents),
        "settings": json.loads(json.dumps(dataclasses.asdict(ls.settings))),
    }


def register(server: AdopterServer) -> None:
    server.command(SEARCH)(search_accelerator)
    server.command(SHOW_ARCHITECTURE)(show_architecture)
    server.command(DEBUG_INFO)(debug_info)
