"""Where independent tasks run: in this process, a local process pool, or a Ray cluster.

One module for every fan-out in Adopter: `adopter check`/`fix` (files in chunks) and the accelerator
search (per-stage and per-model searches). Results come back by task index, so callers put them in task
order whatever order they finish in.

- `serial`: one after the other, here.
- `process`: a `ProcessPoolExecutor`. `start="spawn"` (the search's default: safe from a threaded
  language server, and the workers import only what the task needs) or `start="fast"`, which forks on
  Linux (also beside other threads: see `start_method`) so workers start with what this one already
  loaded (the parsed rules, the parsers), and spawns otherwise.
- `ray`: the Ray instance already initialised, the cluster at `ray_address`, or a local instance of
  `workers` CPUs started and shut down here. `working_dir` / `py_modules` ship the caller's code
  through Ray's `runtime_env`, so a module in a folder only this machine has (a user's `module:factory`)
  imports on every worker. Ray accepts a local folder only for the whole job, so they need this call to
  start the job (no Ray initialised yet); with one already initialised they must be in its runtime_env.

`shared`, when given, is passed to every call as `fn(shared, task)` and sent to each worker once
(a pool's initializer; `ray.put`), not with every task. Imports neither torch nor Ray until asked.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any, TypeVar

T = TypeVar("T")
EXECUTORS = ("process", "serial", "ray")
_NO_SHARED: Any = object()
_SHARED: list[Any] = []  # in a pool worker: the `shared` value its initializer received


class ExecutorError(RuntimeError):
    """The requested executor is unavailable (e.g. Ray is not installed) or failed to start."""


def run_tasks(fn: Callable[..., T], tasks: Sequence[Any], *, executor: str = "process", workers: int = 2,
              ray_address: str | None = None, progress: Callable[[float, str], None] | None = None,
              shared: Any = _NO_SHARED, start: str = "spawn", working_dir: str | None = None,
              py_modules: Sequence[str] = ()) -> list[T]:
    """Run `fn` over `tasks` (`fn(shared, task)` when `shared` is given); results in task order."""
    report = progress or (lambda f, m: None)
    results: list[Any] = [None] * len(tasks)
    done = 0
    for index, result in iter_tasks(fn, tasks, executor=executor, workers=workers, ray_address=ray_address,
                                    shared=shared, start=start, working_dir=working_dir, py_modules=py_modules):
        results[index] = result
        done += 1
        report(0.05 + 0.9 * done / len(tasks), f"task {done}/{len(tasks)}")
    return results


def iter_tasks(fn: Callable[..., T], tasks: Sequence[Any], *, executor: str = "process", workers: int = 2,
               ray_address: str | None = None, shared: Any = _NO_SHARED, start: str = "spawn",
               working_dir: str | None = None, py_modules: Sequence[str] = ()) -> Iterator[tuple[int, T]]:
    """(task index, result) for each task of `tasks`, as they finish. A task's exception is raised here."""
    if executor not in EXECUTORS:
        raise ExecutorError(f"--executor {executor!r}: allowed {', '.join(EXECUTORS)}")
    call: Callable[[Any], T] = fn if shared is _NO_SHARED else (lambda task: fn(shared, task))
    if executor == "serial" or (executor == "process" and (workers <= 1 or len(tasks) <= 1)):
        for i, task in enumerate(tasks):
            yield i, call(task)
    elif executor == "process":
        yield from _pool(fn, tasks, workers, shared, start)
    else:
        yield from _ray(fn, tasks, ray_address, workers, shared, working_dir, py_modules)


def start_method(start: str) -> str:
    """The multiprocessing start method for `start` ("spawn", "fork", "forkserver" or "fast")."""
    if start != "fast":
        return start
    # On Linux fork even beside other threads (a test runner's, an embedding caller's): spawning from such a
    # process hung here, blocked writing a worker's start-up data to a pipe the resource tracker held.
    # The callers of "fast" (check/fix) hold no lock in other threads while they fan out.
    safe = sys.platform.startswith("linux")
    return "fork" if safe and "fork" in multiprocessing.get_all_start_methods() else "spawn"


def _pool(fn: Callable[..., T], tasks: Sequence[Any], workers: int, shared: Any,
          start: str) -> Iterator[tuple[int, T]]:
    method = start_method(start)
    ctx = multiprocessing.get_context(method)
    if method != "fork":
        # Start multiprocessing's resource tracker here, before the pool: the pool's manager thread would
        # otherwise start it while this thread spawns a worker, and the tracker can inherit the worker's
        # start-up pipe, leaving this thread blocked writing to it (seen as a hang in a threaded caller).
        from multiprocessing import resource_tracker

        resource_tracker.ensure_running()
    with_shared = shared is not _NO_SHARED
    # With fork the workers inherit `shared` as it is; with spawn it is pickled once per worker.
    with ProcessPoolExecutor(max_workers=min(workers, len(tasks)), mp_context=ctx, initializer=_remember_shared,
                             initargs=(shared,)) as pool:
        pending: dict[Future[T], int] = {}
        try:
            for i, task in enumerate(tasks):
                future = pool.submit(_with_shared, fn, task) if with_shared else pool.submit(fn, task)
                pending[future] = i
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    yield pending.pop(future), future.result()
        finally:
            for future in pending:  # an error or an interrupted caller: drop what has not started
                future.cancel()


def _remember_shared(shared: Any) -> None:
    _SHARED[:] = [shared]


def _with_shared(fn: Callable[..., T], task: Any) -> T:
    return fn(_SHARED[0], task)


def ray_runtime_env(working_dir: str | None, py_modules: Sequence[str]) -> dict[str, Any]:
    """Ray's `runtime_env` shipping `working_dir` (its files importable on the workers, and their working
    directory) and `py_modules` (package folders or single `.py` files)."""
    env: dict[str, Any] = {}
    if working_dir:
        if not os.path.isdir(working_dir):
            raise ExecutorError(f"{working_dir}: no such folder to send to the Ray workers")
        env["working_dir"] = os.path.abspath(working_dir)
    if py_modules:
        missing = [m for m in py_modules if not os.path.exists(m)]
        if missing:
            raise ExecutorError(f"{missing[0]}: no such module to send to the Ray workers")
        env["py_modules"] = [os.path.abspath(m) for m in py_modules]
    return env


def _ray(fn: Callable[..., T], tasks: Sequence[Any], address: str | None, workers: int, shared: Any,
         working_dir: str | None, py_modules: Sequence[str]) -> Iterator[tuple[int, T]]:
    try:
        import ray
    except ImportError as exc:
        raise ExecutorError("--executor ray needs Ray: pip install 'adopter[ray]' (or pip install ray)") from exc
    env = ray_runtime_env(working_dir, py_modules)
    started = False
    if not ray.is_initialized():
        local: dict[str, Any] = {"num_cpus": workers} if address is None else {}
        try:
            ray.init(address=address, ignore_reinit_error=True, log_to_driver=False, include_dashboard=False,
                     logging_level=logging.ERROR, runtime_env=env or None, **local)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ExecutorError(f"cannot reach the Ray cluster at {address or 'a new local instance'}: {exc}") from exc
        started = True
    elif env:
        raise ExecutorError("Ray is already initialised in this process: start it with runtime_env="
                            f"{env!r} so the workers can import this code")
    try:
        with_shared = shared is not _NO_SHARED
        remote: Any = ray.remote(_with_given if with_shared else fn)
        ref = ray.put(shared) if with_shared else None
        pending = {(remote.remote(fn, ref, task) if with_shared else remote.remote(task)): i
                   for i, task in enumerate(tasks)}
        while pending:
            finished, _ = ray.wait(list(pending), num_returns=1)
            for r in finished:
                yield pending.pop(r), ray.get(r)
    finally:
        if started:  # a local instance stops; from a cluster this driver disconnects, the cluster runs on
            ray.shutdown()


def _with_given(fn: Callable[..., T], shared: Any, task: Any) -> T:
    return fn(shared, task)
