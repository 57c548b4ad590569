"""`adopter.verifyFixes`: run each fix of a class against the original, in a subprocess, with progress.

Arguments: one object `{uri, class?, rule?, line?, python?, factory?, inputs?, dtype?, device?, repeats?,
timeout?}` (`rule` and `line`, 1-based: only that finding's fix, as the *Verify and measure* code action asks). `python`
is the interpreter that runs the model (the project's own, which has torch; the server's Python need
not). The fixes are those the quick fixes would write, on the text the editor holds (the worker runs
that text, not the file on disk). Returns the rows of `adopter verify --format json`. The user's code
runs, so the workspace must be trusted; cancelling the progress or the request kills the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import tempfile
import uuid
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams, JsonRpcRequestCancelled
from pygls.uris import to_fs_path

from adopter.lsp.progress import begin_progress
from adopter.lsp.server import AdopterServer

VERIFY = "adopter.verifyFixes"
KEYS = frozenset({"uri", "class", "rule", "line", "python", "factory", "inputs", "dtype", "device", "repeats", "timeout"})


def verify_arguments(args: tuple[Any, ...]) -> dict[str, Any]:
    """One object with a document `uri`, known keys only."""
    if len(args) != 1 or not isinstance(args[0], dict) or not isinstance(args[0].get("uri"), str):
        raise JsonRpcInvalidParams(f"{VERIFY} takes one object with a document uri, e.g. {{\"uri\": ..., \"class\": \"Block\"}}")
    unknown = sorted(set(args[0]) - KEYS)
    if unknown:
        raise JsonRpcInvalidParams(f"{VERIFY}: unknown keys {unknown}; allowed: {sorted(KEYS)}")
    return dict(args[0])


def only_finding(items: tuple[Any, ...], rule: Any, line: Any) -> tuple[Any, ...]:
    """The cases (or unfixed findings) of `rule` at `line` (each when None): those the request names."""
    return tuple(c for c in items if (rule is None or c.rule_id == rule) and (line is None or c.line == line))


async def verify_fixes(ls: AdopterServer, *args: Any) -> dict[str, Any]:
    """The verify rows for the class (every class when none), with work-done progress and cancel."""
    from adopter.verify.cases import fix_cases
    from adopter.verify.report import as_json
    from adopter.verify.runner import Options

    request = verify_arguments(args)
    if not ls.settings.trusted:
        raise JsonRpcInvalidParams("Adopter: verifying a fix runs your model code and this workspace is not "
                                   "trusted; trust it first.")
    snapshot = await ls.publisher.snapshot(request["uri"])
    path = to_fs_path(request["uri"])
    if snapshot is None or snapshot.session is None or path is None:
        raise JsonRpcInvalidParams(f"{VERIFY}: {request['uri']} is not an open Python file")
    session, text = snapshot.session, snapshot.text
    cases, unfixed = await asyncio.get_running_loop().run_in_executor(  # the session's own thread
        ls.analyses.executor, lambda: fix_cases(session, text, path, class_name=request.get("class")))
    cases, unfixed = only_finding(cases, request.get("rule"), request.get("line")), only_finding(
        unfixed, request.get("rule"), request.get("line"))
    options = Options(device=str(request.get("device", "cpu")), dtype=str(request.get("dtype", "fp32")),
                      factory=request.get("factory"), inputs=request.get("inputs"),
                      timeout=float(request.get("timeout", 300)), repeats=int(request.get("repeats", 10)),
                      python=request.get("python"))
    result: dict[str, Any] = {"rows": []}
    if cases:
        title = f"Verifying {len(cases)} fix{'es' if len(cases) != 1 else ''}" + (
            f" in {request['class']}" if request.get("class") else "")
        result = await _run_with_progress(ls, Path(path), snapshot.text, cases, options, title)
    return as_json(path, result, unfixed)


async def _run_with_progress(ls: AdopterServer, path: Path, source: str, cases: Any, options: Any,
                             title: str) -> dict[str, Any]:
    token = f"adopter-verify-{uuid.uuid4().hex[:8]}"
    cancelled = asyncio.Event()
    await begin_progress(ls, token, title)
    progress = ls.work_done_progress.tokens.get(token)
    if progress is not None:
        progress.add_done_callback(lambda f: cancelled.set() if f.cancelled() else None)
    try:
        return await _run(path, source, cases, options, cancelled)
    finally:
        ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message="cancelled" if cancelled.is_set() else "done"))


async def _run(path: Path, source: str, cases: Any, options: Any, cancelled: asyncio.Event) -> dict[str, Any]:
    """The worker in a subprocess; killed at the timeout or when `cancelled` is set."""
    from adopter.verify.runner import RunFailed, job_for, read_result, worker_command

    with tempfile.TemporaryDirectory(prefix="adopter-verify-") as tmp:
        out = Path(tmp) / "result.json"
        job = await asyncio.to_thread(job_for, path, source, cases, options, out)
        command, env = worker_command(options)
        try:
            process = await asyncio.create_subprocess_exec(
                *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE, env=env)
        except OSError as exc:
            raise JsonRpcInvalidParams(f"Adopter: cannot start {command[0]}: {exc}") from exc
        communicate = asyncio.ensure_future(process.communicate(json.dumps(job).encode()))
        stop = asyncio.ensure_future(cancelled.wait())
        try:
            done, _ = await asyncio.wait({communicate, stop}, timeout=options.timeout,
                                         return_when=asyncio.FIRST_COMPLETED)
            if communicate not in done:
                raise (JsonRpcRequestCancelled("Adopter: verification cancelled") if stop in done else
                       JsonRpcInvalidParams(f"Adopter: the run took longer than {options.timeout:g} s and was stopped"))
            _, stderr = communicate.result()
            try:
                return read_result(path, out, process.returncode, stderr.decode(errors="replace"), command[0])
            except RunFailed as exc:
                raise JsonRpcInvalidParams(f"Adopter: {exc}") from exc
        except asyncio.CancelledError:  # the client cancelled the request itself
            raise JsonRpcRequestCancelled("Adopter: verification cancelled") from None
        finally:
            stop.cancel()
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
            communicate.cancel()


def register(server: AdopterServer) -> None:
    server.command(VERIFY)(verify_fixes)
