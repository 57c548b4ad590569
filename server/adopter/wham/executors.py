"""Where independent per-stage searches run: in-process, a local process pool, or a Ray cluster."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


class ExecutorError(RuntimeError):
    """The requested executor is unavailable (e.g. Ray is not installed)."""


def run_tasks(fn: Callable[[Any], T], tasks: Sequence[Any], *, executor: str = "process", workers: int = 2,
              ray_address: str | None = None, progress: Callable[[float, str], None] | None = None) -> list[T]:
    """Run `fn` over `tasks`, results in task order."""
    report = progress or (lambda f, m: None)
    if executor == "serial" or (executor == "process" and (workers <= 1 or len(tasks) <= 1)):
        out = []
        for i, t in enumerate(tasks):
            out.append(fn(t))
            report(0.05 + 0.9 * (i + 1) / len(tasks), f"stage search {i + 1}/{len(tasks)}")
        return out
    if executor == "process":
        # spawn: safe from a threaded language server, and the workers never import torch.
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=min(workers, len(tasks)), mp_context=ctx) as pool:
            futures = [pool.submit(fn, t) for t in tasks]
            results = []
            for i, fut in enumerate(futures):
                results.append(fut.result())
                report(0.05 + 0.9 * (i + 1) / len(tasks), f"stage search {i + 1}/{len(tasks)}")
            return results
    if executor == "ray":
        return _run_ray(fn, tasks, ray_address, workers, report)
    raise ExecutorError(f"--executor {executor!r}: allowed process, serial, ray")


def _run_ray(fn: Callable[[Any], T], tasks: Sequence[Any], address: str | None, workers: int,
             report: Callable[[float, str], None]) -> list[T]:
    """On the Ray instance already initialised, the cluster at `address`, or a local instance of `workers`
    CPUs that is shut down afterwards."""
    try:
        import ray
    except ImportError as exc:
        raise ExecutorError("--executor ray needs Ray: pip install 'adopter[ray]' (or pip install ray)") from exc
    started = False
    if not ray.is_initialized():
        local: dict[str, Any] = {"num_cpus": workers} if address is None else {}
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False, include_dashboard=False, **local)
        started = True
    try:
        remote = ray.remote(fn)
        refs = [remote.remote(t) for t in tasks]
        results = ray.get(refs)
        report(0.95, f"{len(tasks)} stage searches done on Ray")
        return list(results)
    finally:
        if started and address is None:
            ray.shutdown()
