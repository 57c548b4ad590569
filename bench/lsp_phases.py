"""Where a keystroke's time goes inside the language server, phase by phase (issues 21, 22).

Runs `bench/lsp_latency.py`'s edit loop (same files, same edits, same client) against a server started
through this file, which wraps the server's own functions with timers before serving (nothing in the
server changes; the wrappers cost ~1 µs each). Per didChange version it records, wall (perf_counter) and
thread CPU (thread_time) where the phase runs on one thread:

- `parse`: the body's `json.loads` into lsprotocol objects (pygls' `structure_message` hook);
- `apply`: `Analyses.change` (the line index, the splice, the queued tree-sitter edit) and pygls' mirror;
- `handler`: the didChange handler (`Publisher.schedule`: cancel, a new task);
- `to_task`: the handler's end -> the task's first step on the event loop;
- `to_thread`: the task's start -> `Analyses.compute` starting on the analysis thread;
- `edit`: `OpenText.apply` (tree-sitter's incremental re-parse, the analysis's edit bookkeeping);
- `analysis`: `OpenText.module_file` (`DocumentAnalysis.result`);
- `match`: `UnitMatcher.match`; `copies`: `_without_copies`; `session_rest`: the rest of `Session.update`
  (`Analysed`, `_remember`); `compute_rest`: the rest of `Analyses.compute` (`release_trees`, `Snapshot`);
- `to_loop`: `compute`'s end -> the task resuming on the event loop;
- `diagnostics`: `build_diagnostics` (findings -> diagnostic JSON text, cached per finding);
- `publish_rest`: the rest of `Publisher.publish` (rule problems, heads); `send`: `notify_json` (framing, write);
- `after`: the after-publish hooks and `Analyses.prepare`;
- `gc`: collections that ran between the change's arrival and the publication (gc.callbacks).

    PYTHONPATH=$PWD/server .venv/bin/python bench/lsp_phases.py --file modeling_t5.py --edits 200 --seed 1 \
        --out /tmp/phases.json

prints a table of p50 / p95 µs per phase (over the edits) and writes every edit's record to `--out`.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

PHASES = ("parse", "apply", "handler", "to_task", "to_thread", "edit", "analysis", "match", "copies", "session_rest",
          "compute_rest", "to_loop", "diagnostics", "publish_rest", "send", "after", "gc")


def install(out: Path) -> None:
    """Wrap the server's functions with timers; write the records to `out` at exit."""
    import atexit
    import threading

    import pygls.io_ as io_
    from lsprotocol import types

    from adopter import session as session_mod
    from adopter.lsp import documents, publish, server

    records: dict[int, dict[str, Any]] = {}
    state: dict[str, Any] = {"version": None}
    clock, cpu = time.perf_counter, time.thread_time

    def rec(version: int | None) -> dict[str, Any]:
        return records.setdefault(-1 if version is None else version, {"gc": 0.0})

    def add(r: dict[str, Any], name: str, wall: float, used: float | None = None) -> None:
        r[name] = r.get(name, 0.0) + wall * 1e6
        if used is not None:
            r[name + "_cpu"] = r.get(name + "_cpu", 0.0) + used * 1e6

    gc_started: list[float] = []
    running: dict[int, list[str]] = {}  # per thread, the wrapped phases it is inside (innermost last)

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            gc_started.append(clock())
        elif gc_started and state["version"] is not None:
            r, took = rec(state["version"]), clock() - gc_started.pop()
            add(r, "gc", took)
            inside = running.get(threading.get_ident())
            add(r, "gc_in_" + (inside[-1] if inside else "other"), took)
        elif gc_started:
            gc_started.pop()

    gc.callbacks.append(on_gc)

    real_json = io_.json

    class TimedJson:
        def __getattr__(self, name: str) -> Any:
            return getattr(real_json, name)

        @staticmethod
        def loads(body: Any, **kw: Any) -> Any:
            t0, c0 = clock(), cpu()
            message = real_json.loads(body, **kw)
            if type(message) is types.DidChangeTextDocumentNotification:
                version = message.params.text_document.version
                state["version"] = version
                add(rec(version), "parse", clock() - t0, cpu() - c0)
            return message

    io_.json = TimedJson()  # type: ignore[assignment]

    def timed(owner: Any, name: str, phase: str, version_of: Any) -> None:
        original = getattr(owner, name)

        def wrapper(*args: Any, **kw: Any) -> Any:
            t0, c0 = clock(), cpu()
            inside = running.setdefault(threading.get_ident(), [])
            inside.append(phase)
            try:
                return original(*args, **kw)
            finally:
                inside.pop()
                version = version_of(*args)
                if version is not None:
                    r = rec(version)
                    add(r, phase, clock() - t0, cpu() - c0)
                    r[phase + "_end"] = clock()

        setattr(owner, name, wrapper)

    def change_version(self: Any, uri: str, version: int | None, changes: Any) -> int | None:
        return version

    timed(documents.Analyses, "change", "apply", change_version)
    timed(server.AdopterProtocol, "_apply_change", "apply_all", lambda self, params: params.text_document.version)
    timed(publish.Publisher, "schedule", "handler", lambda self, doc, delay: doc.version)

    current: dict[str, Any] = {}  # the version the analysis thread is on

    compute = documents.Analyses.compute

    def timed_compute(self: Any, doc: Any) -> Any:
        version = doc.version
        current["version"] = version
        r = rec(version)
        t0, c0 = clock(), cpu()
        r["compute_start"] = t0
        snapshot = compute(self, doc)
        add(r, "compute", clock() - t0, cpu() - c0)
        r["compute_end"] = clock()
        return snapshot

    documents.Analyses.compute = timed_compute  # type: ignore[method-assign]
    def on_thread(*args: Any) -> int | None:
        return current.get("version")

    timed(session_mod.OpenText, "apply", "edit", on_thread)
    timed(session_mod.OpenText, "module_file", "analysis", on_thread)
    timed(session_mod.UnitMatcher, "match", "match", on_thread)
    timed(session_mod, "_without_copies", "copies", on_thread)
    timed(session_mod.Session, "update", "session", on_thread)

    analyse_and_publish = publish.Publisher._analyse_and_publish

    async def timed_analyse_and_publish(self: Any, doc: Any, delay_ms: int) -> Any:
        version = doc.version
        r = rec(version)
        r["task_start"] = clock()
        run = self.analyses.run

        async def timed_run(d: Any) -> Any:
            snapshot = await run(d)
            r["resumed"] = clock()
            return snapshot

        self.analyses.run = timed_run
        try:
            return await analyse_and_publish(self, doc, delay_ms)
        finally:
            del self.analyses.run
            r["done"] = clock()

    publish.Publisher._analyse_and_publish = timed_analyse_and_publish  # type: ignore[method-assign]
    timed(publish.Publisher, "publish", "publish", lambda self, doc, snapshot: snapshot.version)
    timed(publish, "build_diagnostics", "diagnostics", lambda settings, doc, snapshot: snapshot.version)
    timed(server.AdopterServer, "notify_json", "send", lambda self, *n: state["version"])
    notify_json = server.AdopterServer.notify_json

    def sized(self: Any, *notifications: tuple[str, str]) -> None:
        if state["version"] is not None:
            rec(state["version"])["bytes"] = sum(len(p) for _, p in notifications)
        notify_json(self, *notifications)

    server.AdopterServer.notify_json = sized  # type: ignore[method-assign]

    def dump() -> None:
        out.write_text(json.dumps({str(k): v for k, v in records.items()}))

    atexit.register(dump)


def phases(r: dict[str, Any]) -> dict[str, float] | None:
    """One edit's record as per-phase µs (None when the edit did not publish: superseded)."""
    needed = ("apply_all", "handler_end", "task_start", "compute_start", "compute_end", "resumed", "publish_end", "done")
    if any(k not in r for k in needed):
        return None
    session = r.get("session", 0.0)
    inner = sum(r.get(k, 0.0) for k in ("analysis", "match", "copies"))
    return {
        "parse": r.get("parse", 0.0),
        "apply": r["apply_all"],
        "handler": r.get("handler", 0.0),
        "to_task": (r["task_start"] - r["handler_end"]) * 1e6,
        "to_thread": (r["compute_start"] - r["task_start"]) * 1e6,
        "edit": r.get("edit", 0.0),
        "analysis": r.get("analysis", 0.0),
        "match": r.get("match", 0.0),
        "copies": r.get("copies", 0.0),
        "session_rest": session - inner,
        "compute_rest": r["compute"] - session - r.get("edit", 0.0),
        "to_loop": (r["resumed"] - r["compute_end"]) * 1e6,
        "diagnostics": r.get("diagnostics", 0.0),
        "publish_rest": r["publish"] - r.get("diagnostics", 0.0) - r.get("send", 0.0),
        "send": r.get("send", 0.0),
        "after": (r["done"] - r["publish_end"]) * 1e6,
        "gc": r.get("gc", 0.0),
    }


CPU_OF = {"parse": "parse_cpu", "apply": "apply_all_cpu", "handler": "handler_cpu", "edit": "edit_cpu",
          "analysis": "analysis_cpu", "match": "match_cpu", "copies": "copies_cpu", "diagnostics": "diagnostics_cpu",
          "send": "send_cpu"}
INNER = ("edit", "analysis", "match", "copies")  # the analysis proper: re-parse, analysis, rule matching


def _q(values: list[float], f: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(f * (len(ordered) - 1)))]


def table(records: dict[str, dict[str, Any]], skip_first: bool = True) -> str:
    """p50 / p95 / mean µs per phase (wall; thread CPU where one thread runs the phase), and the phases' mean over
    the slowest tenth of the edits. `skip_first`: leave out the first edit (it waits for the open's `prepare`)."""
    keyed = [(int(k), r) for k, r in records.items() if int(k) >= (3 if skip_first else 2)]
    rows = [(p, r) for _, r in sorted(keyed, key=lambda kr: kr[0]) if (p := phases(r)) is not None]
    totals = [sum(p.values()) - p["gc"] for p, _ in rows]
    outside = [t - sum(p[k] for k in INNER) for t, (p, _) in zip(totals, rows, strict=True)]
    cut = _q(totals, 0.9)
    slow = [p for t, (p, _) in zip(totals, rows, strict=True) if t >= cut]
    lines = [f"{len(rows)} edits published; slowest tenth: {len(slow)} edits, sum >= {cut:.0f} µs", "",
             "| phase | wall p50 | wall p95 | wall mean | CPU p50 | CPU p95 | share of sum | mean, slowest tenth |",
             "|---|---|---|---|---|---|---|---|"]
    grand = sum(totals)
    for name in PHASES:
        values = [p[name] for p, _ in rows]
        share = "" if name == "gc" else f"{100 * sum(values) / grand:.1f} %"
        cpu_key = CPU_OF.get(name)
        cpu = [r.get(cpu_key, 0.0) for _, r in rows] if cpu_key else []
        cpu_text = f"{statistics.median(cpu):.0f} | {_q(cpu, 0.95):.0f}" if cpu else "– | –"
        lines.append(f"| {name} | {statistics.median(values):.0f} | {_q(values, 0.95):.0f} | {statistics.fmean(values):.0f} | "
                     f"{cpu_text} | {share} | {statistics.fmean(p[name] for p in slow):.0f} |")
    slow_totals = [sum(p.values()) - p["gc"] for p in slow]
    slow_outside = [t - sum(p[k] for k in INNER) for t, p in zip(slow_totals, slow, strict=True)]
    lines.append(f"| **sum (no gc)** | {statistics.median(totals):.0f} | {_q(totals, 0.95):.0f} | "
                 f"{statistics.fmean(totals):.0f} | | | 100 % | {statistics.fmean(slow_totals):.0f} |")
    lines.append(f"| **outside {' + '.join(INNER)}** | {statistics.median(outside):.0f} | {_q(outside, 0.95):.0f} | "
                 f"{statistics.fmean(outside):.0f} | | | {100 * sum(outside) / grand:.1f} % | "
                 f"{statistics.fmean(slow_outside):.0f} |")
    gc_in: dict[str, float] = {}
    for _, r in rows:
        for key, value in r.items():
            if key.startswith("gc_in_"):
                gc_in[key[6:]] = gc_in.get(key[6:], 0.0) + value
    if gc_in:
        lines += ["", "GC time by the (innermost) wrapped function it ran in, summed over the edits: " + ", ".join(
            f"{name} {value / 1000:.1f} ms" for name, value in sorted(gc_in.items(), key=lambda kv: -kv[1]))]
    return "\n".join(lines)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--serve":
        install(Path(sys.argv[2]))
        from adopter.cli import main as cli

        sys.argv = [sys.argv[0], "lsp"]
        sys.exit(cli())
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--file", default="modeling_t5.py", help="one transformers 4.35 modeling file")
    parser.add_argument("--edits", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, required=True, help="every edit's record (JSON)")
    parser.add_argument("--report", type=Path, help="only print the table of an earlier --out")
    args = parser.parse_args()
    if args.report:
        print(table(json.loads(args.report.read_text())))
        return
    sys.path.insert(0, str(Path(__file__).parent))
    import lsp_latency

    raw = args.out.with_suffix(".server.json")
    lsp_latency.SERVERS["adopter"] = ([sys.executable, os.path.abspath(__file__), "--serve", str(raw.resolve())],
                                      {"debounce_ms": 0})
    sys.argv = [sys.argv[0], "--servers", "adopter", "--files", args.file, "--edits", str(args.edits), "--seed",
                str(args.seed), "--fresh-runs", "0", "--no-rss"]
    lsp_latency.main()
    records = json.loads(raw.read_text())
    args.out.write_text(json.dumps(records))
    print(table(records))


if __name__ == "__main__":
    main()
