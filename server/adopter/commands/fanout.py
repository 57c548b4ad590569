"""`check` and `fix` over many files: read and hash here, reuse cached results, spread the rest.

The command's process (the driver) finds the files, reads each one once (its input errors are reported
here), hashes it and takes what the result cache has (`result_cache`). The other files go, as text, in
chunks, to the executor (`adopter.executors`): this process (`--jobs 1`, or too few files to be worth
starting workers), a local process pool (`--jobs N`, default one worker per CPU), or a Ray cluster
(`--ray-address`). Results come back as plain data and are returned in the order the files were found,
so the output is the same whichever ran them.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from adopter.commands import result_cache
from adopter.commands._common import python_files, read_input
from adopter.commands.filework import Done, Item, Payload, Work, run_chunk
from adopter.commands.progress import Progress

if TYPE_CHECKING:
    from adopter.session import RuleContext

# A pool pays for starting its workers (forked: a few ms each; spawned: importing Adopter and
# unpickling the rules, about half a second each, measured in docs/notes/scale.md) and for sending
# texts and results; below this many files to analyse per worker the command runs in its own process.
MIN_FILES_PER_WORKER = 4
CHUNKS_PER_WORKER = 8  # chunks per worker: enough that one slow chunk does not leave the others idle
MAX_CHUNK = 32  # files per chunk at most (a progress step, and what one task holds in memory)


@dataclass(frozen=True, slots=True)
class FileOutcome:
    """One file of the command, in the order found: why it could not be read, or its result."""

    path: Path
    error: str | None = None
    payload: Payload | None = None


def run_files(args: argparse.Namespace, command: str, context: RuleContext) -> list[FileOutcome]:
    """`command`'s result for every file under `args.paths`, in order (see the module docstring).
    Raises `adopter.executors.ExecutorError` when the pool or cluster fails."""
    from adopter.commands.fingerprint import code_fingerprint, settings_digest

    digest = settings_digest(command, context)
    cache = result_cache.ResultCache(digest) if not getattr(args, "no_cache", False) else None
    outcomes: list[FileOutcome] = []
    keys: dict[int, str] = {}
    todo: list[Item] = []
    remote = getattr(args, "ray_address", None) is not None  # Ray workers get the texts; local ones read
    for index, (path, missing) in enumerate(python_files(args.paths)):
        data, why = (None, missing) if missing else read_input(path)
        if data is None:
            outcomes.append(FileOutcome(path, error=why))
            continue
        outcomes.append(FileOutcome(path))
        shown, abspath, sha = str(path), os.path.abspath(path), ""
        if cache is not None:
            sha = result_cache.content(data)
            cache.known(abspath, sha)
            keys[index] = result_cache.key(sha, shown, abspath)
            payload = cache.get(keys[index])
            if payload is not None:
                outcomes[index] = FileOutcome(path, payload=payload)
                continue
        todo.append(Item(index, shown, abspath, len(data), sha, data.decode("utf-8") if remote else None))
    work = Work(command, context, digest, code_fingerprint(), os.getcwd())
    progress = Progress(len(todo), enabled=Progress.wanted(getattr(args, "quiet", False)))
    blind = False
    try:
        for done in _spread_or_fail(work, todo, args):
            path = outcomes[done.index].path
            unreadable = done.payload.get("unreadable")
            outcomes[done.index] = (FileOutcome(path, error=unreadable) if unreadable
                                    else FileOutcome(path, payload=done.payload))
            blind = blind or not done.saw_tree
            if cache is not None and done.saw_tree and not done.changed and "crash" not in done.payload:
                cache.put(keys[done.index], done.payload, done.read)
            progress.advance()
    finally:
        progress.close()
    if blind:
        print(f"warning: some Ray workers cannot see {work.cwd}: their files were analysed without reading the "
              "files they import (base classes, layers); give the cluster the same folder to compare",
              file=sys.stderr)
    if cache is not None:
        cache.prune()
    return outcomes


def _spread_or_fail(work: Work, todo: Sequence[Item], args: argparse.Namespace) -> Iterator[Done]:
    """`_spread`, with any failure of the workers (a worker killed, a cluster gone, a worker running other
    code) an `ExecutorError` the command reports in one line."""
    from adopter.executors import ExecutorError

    try:
        yield from _spread(work, todo, args)
    except ExecutorError:
        raise
    except Exception as exc:
        last = (str(exc).strip().splitlines() or [""])[-1]
        raise ExecutorError(f"the workers failed ({type(exc).__name__}: {last})") from exc


def _spread(work: Work, todo: Sequence[Item], args: argparse.Namespace) -> Iterator[Done]:
    """Each file's `Done`, from wherever `args` says the work runs, as they finish."""
    address = getattr(args, "ray_address", None)
    jobs = args.jobs if args.jobs is not None else (os.cpu_count() or 1)
    if address is None and (jobs <= 1 or len(todo) < 2 * MIN_FILES_PER_WORKER):
        for item in todo:
            yield from run_chunk(work, (item,))
        return
    from adopter.executors import iter_tasks

    # A cluster's size is its own: chunks fine enough for a few workers per CPU of this machine.
    workers = max(1, min(jobs, len(todo) // MIN_FILES_PER_WORKER)) if address is None else max(jobs, 4)
    for _, dones in iter_tasks(run_chunk, chunks(todo, workers), executor="ray" if address else "process",
                               workers=workers, ray_address=address, shared=work, start="fast"):
        yield from dones


def chunks(todo: Sequence[Item], workers: int) -> list[tuple[Item, ...]]:
    """`todo` in chunks, the largest files first (so the last chunks to finish are short ones)."""
    ordered = sorted(todo, key=lambda item: item.size, reverse=True)
    size = max(1, min(MAX_CHUNK, math.ceil(len(ordered) / (workers * CHUNKS_PER_WORKER))))
    return [tuple(ordered[i:i + size]) for i in range(0, len(ordered), size)]
