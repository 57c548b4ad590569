"""The work `check` and `fix` do for one file, wherever it runs (here, a pool worker, a Ray worker).

A task is a chunk of files, each given as its text (a worker never reads the file being checked, so a
Ray worker on another machine needs none of the driver's files). The result of a file is plain data
(strings, numbers, lists, dicts: what the driver prints and the result cache keeps), with the other
files its analysis read (`adopter.analysis.crossfile.reads`), which the cache checks before reusing it.

The rules and environment travel once per worker (`Work`); each worker keeps one `Session` per
`Work.digest`, so a file analysed twice by one worker (a fix's result) is not analysed again.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from adopter.analysis.crossfile import jedi_lookup, reads

if TYPE_CHECKING:
    from adopter.session import FileFix, RuleContext, Session

Payload = dict[str, Any]
MAX_SESSIONS = 2  # sessions kept per worker process (one per distinct `Work`)
# The analysis keeps every file it read for base classes and imported layers (symbols, `ast` trees,
# jedi's parse trees) for the process's life: right for an editor's workspace, unbounded over a tree of
# 20,000 files (one process reached 1.6 GB a third of the way through bench/scale.py's monorepo). A
# worker drops them after this many files: the whole transformers package (1,456 files) stays within
# one round per worker of a 2-job pool, and a reading of a shared file is paid again once per round.
FORGET_AFTER_FILES = 1000
_analysed = [0]  # files this process analysed since it last dropped them


@dataclass(frozen=True, slots=True)
class Work:
    """What every file of one command is checked or fixed with."""

    command: str  # "check" | "fix"
    context: RuleContext
    digest: str  # of everything besides the file that its result depends on (`settings_digest`)
    code: str  # the code fingerprint of the driver's Adopter (a worker running other code refuses)
    cwd: str  # the driver's working folder: relative paths, and the files they import, are read from it


@dataclass(frozen=True, slots=True)
class Item:
    """One file to do: its index in the command's file list, the path as given, the absolute path, its
    size and SHA-256 when the driver read it, and its text when the worker may not see the file (Ray);
    without it the worker reads the file itself, so the driver holds no text of a big tree."""

    index: int
    path: str
    abspath: str
    size: int
    sha256: str = ""  # "" when the driver did not hash it (no result cache)
    text: str | None = None


@dataclass(frozen=True, slots=True)
class Done:
    """One file's result, the other files (absolute paths) its analysis read, and whether the worker saw
    the driver's folder (a Ray worker on another machine may not: it analysed the text alone)."""

    index: int
    payload: Payload
    read: tuple[str, ...]
    saw_tree: bool = True
    changed: bool = False  # the file read here is not the one the driver hashed (edited meanwhile)


_SESSIONS: dict[str, Session] = {}


def session_of(work: Work) -> Session:
    """This process's session for `work` (made on first use)."""
    session = _SESSIONS.get(work.digest)
    if session is None:
        from adopter.session import Session

        if len(_SESSIONS) >= MAX_SESSIONS:
            _SESSIONS.clear()
        session = _SESSIONS[work.digest] = Session(work.context)
    return session


# The analysis of one file allocates hundreds of thousands of short-lived containers (tree nodes, flow
# states, matches); at CPython's default young-generation threshold (700) the cyclic collector ran ~1,000
# times over 70 modeling files, each young collection promoting survivors that the older generations then
# scan again: 20 % of `check`'s CPU. A young collection costs about its survivors, most of them the file
# being analysed: 10,000 still made 95 young collections over the 210 modeling files (0.9 s of ~19 s of CPU);
# 100,000 makes 4 (0.44 s), at the same peak memory (188 MB; a young collection still frees the cycles made
# since the last one, at most this many objects). The process keeps it (the command's process or a pool or
# Ray worker: all they do is analyse files): setting 700 back after each chunk made the next allocation
# collect, often the whole heap.
YOUNG_THRESHOLD = 100_000
# The middle generation is then collected every 5 young collections: every 500,000 net allocations, as the
# earlier 10,000 / 50 did, so the garbage that was alive when it left the young generation is freed as often
# (and the full collections follow every 10 middle ones, as before). Measured with `gc.callbacks`, issue 22.
MIDDLE_THRESHOLD = 5


# The interpreter's end collects the whole heap several times while it tears modules down: with jedi's trees
# of a run kept (9.5 million tracked objects after transformers 5.25's udop), that took 30 s of CPU after the
# output was written (issue 22). A process that analysed files freezes its heap at exit instead: the operating
# system frees it. (Pool workers end with `os._exit` and never run it.)
_exit_frozen: list[bool] = []


def fewer_collections() -> None:
    """Run the young and middle generations' collections less often in this process (it analyses files), and stop
    parso's sweep of its parse-tree cache (see `_PARSO_SWEEP`)."""
    young, _, old = gc.get_threshold()
    if young < YOUNG_THRESHOLD:  # not yet set here (a later chunk of the same process finds it set)
        gc.set_threshold(YOUNG_THRESHOLD, MIDDLE_THRESHOLD, old)
    if not _exit_frozen:
        _exit_frozen.append(True)
        atexit.register(gc.freeze)  # see `_exit_frozen`
    # Imported here, before the first file, not left to the cross-file reach's first jedi call: set only once
    # parso was loaded, the sweep ran during a process's first file and not during the others, and jedi's answer
    # for a lazily exported name (`transformers.UdopConfig`) depends on whether its trees were swept: the same
    # file gave other findings first in a process than later (`--jobs 1` and `--jobs 2` differed, issue 22).
    try:
        cache: Any = importlib.import_module("parso.cache")
    except ImportError:  # no jedi, no parso: nothing to sweep
        return
    if getattr(cache, "_CACHED_SIZE_TRIGGER", _PARSO_SWEEP) < _PARSO_SWEEP:
        setattr(cache, "_CACHED_SIZE_TRIGGER", _PARSO_SWEEP)  # noqa: B010  # a private knob of parso


# Past 600 cached trees parso rebuilds its whole cache on every insert to drop trees unused for 10
# minutes: quadratic, 3 % of `check`'s CPU over the 210 modeling files, and dropping nothing in a run
# shorter than that. A batch process drops the cache itself every `FORGET_AFTER_FILES` files.
_PARSO_SWEEP = 1 << 30


def run_chunk(work: Work, items: tuple[Item, ...]) -> list[Done]:
    """Check or fix each file of `items` (a top-level function: pools and Ray run it)."""
    from adopter.commands.fingerprint import code_fingerprint

    if code_fingerprint() != work.code:
        raise RuntimeError("this worker runs other Adopter code than the command that sent it work "
                           f"({code_fingerprint()} here, {work.code} there): install the same Adopter everywhere")
    saw_tree = True
    if os.getcwd() != work.cwd:  # a Ray worker: relative paths (and what they import) are the driver's
        try:
            os.chdir(work.cwd)
        except OSError:
            saw_tree = False
    session = session_of(work)
    fewer_collections()
    with jedi_lookup.batch():
        return _run_items(work, session, items, saw_tree)


def _run_items(work: Work, session: Session, items: tuple[Item, ...], saw_tree: bool) -> list[Done]:
    out = []
    for item in items:
        changed = False
        if item.text is None:
            from adopter.commands._common import read_input
            from adopter.commands.result_cache import content

            data, why = read_input(Path(item.path if saw_tree else item.abspath))  # named as given
            if data is None:
                out.append(Done(item.index, {"unreadable": why}, (), saw_tree, True))
                continue
            changed = bool(item.sha256) and content(data) != item.sha256
            item = replace(item, text=data.decode("utf-8"))
        try:
            with reads.recording() as read:
                payload = check_file(session, item) if work.command == "check" else fix_file(session, item)
        except Exception as exc:  # a bug must cost one file, never the run
            out.append(Done(item.index, {"crash": f"{type(exc).__name__}: {exc}"}, (), saw_tree))
            continue
        others = {os.path.abspath(p) for p in read} - {item.abspath}
        out.append(Done(item.index, payload, tuple(sorted(others)), saw_tree, changed))
        _analysed[0] += 1
        if _analysed[0] >= FORGET_AFTER_FILES:
            forget_other_files()
    return out


def forget_other_files() -> None:
    """Drop what the analysis kept of the other files it read (it reads them again when needed)."""
    from adopter.analysis.analyser import default_reach, default_resolver

    _analysed[0] = 0
    default_resolver().clear()
    reach = default_reach()
    if reach is not None:
        reach.release()


def check_file(session: Session, item: Item) -> Payload:
    """`check`'s result for one file: its problems, whether it parses, its findings as JSON records."""
    assert item.text is not None  # run_chunk read it
    analysed = session.analysed(item.text, item.path)
    findings = []
    for f in analysed.findings:
        decision = session.planned(analysed, f)
        findings.append(finding_record(f, decision.fixable, decision.reason))
    return {"parses": analysed.parses,
            "problems": [[p.severity.value == "error", p.render()] for p in analysed.problems],
            "findings": findings}


def fix_file(session: Session, item: Item) -> Payload:
    """`fix`'s result for one file: the verified new text (None when unchanged), what was applied and
    what was left, or why the file could not be fixed."""
    assert item.text is not None  # run_chunk read it
    return fix_payload(item.path, session.fix(item.text, item.path))


def fix_payload(path: str, outcome: FileFix) -> Payload:
    """`fix`'s result for one file from the session's `FileFix` (see `fix_file`)."""
    if not outcome.parses:
        first = next((p for p in outcome.problems if p.severity.value == "error" and p.span is not None), None)
        where = f":{first.span.start_line + 1}:{first.span.start_col + 1}" if first and first.span else ""
        return {"error": f"{path}{where}: the file does not parse ({first.message if first else 'syntax error'}); "
                         "fix the syntax error first, nothing was rewritten"}
    return {"new_source": outcome.new_source if outcome.changed else None, "applied": len(outcome.applied),
            "skipped": [f"{path}:{f.span.start_line + 1}:{f.span.start_col + 1}: {f.rule_id}: not fixed: {reason}"
                        for f, reason in outcome.skipped]}


def absolute(path: str) -> str:
    """The absolute, normalised form of `path` (how the analysis names the files it reads)."""
    return os.path.abspath(path)


def finding_record(f: Any, fixable: bool, reason: str | None) -> dict[str, Any]:
    """One JSON record per finding (lines and columns 1-based, columns in code points, end exclusive)."""
    return {
        "path": f.path, "rule": f.rule_id, "family": f.family, "severity": f.severity.value,
        "title": f.title, "message": f.message, "scope": f.scope_name,
        "range": {"start": {"line": f.span.start_line + 1, "column": f.span.start_col + 1},
                  "end": {"line": f.span.end_line + 1, "column": f.span.end_col + 1}},
        "statements": [[s.start_line + 1, s.end_line + 1] for s in f.stmt_spans],
        "init": [[s.start_line + 1, s.end_line + 1] for s in f.init_spans],
        "fixable": fixable, "targets": list(f.targets), "no_fix_reason": reason,
    }
