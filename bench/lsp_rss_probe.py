"""Where the language server's resident memory goes, measured in the server process itself (issue 22).

Starts the real server over stdio (`python -m adopter lsp`, through this file's `--serve`, which only adds a
`SIGUSR1` handler and, with `--trace N`, `tracemalloc` with N frames; nothing in the product's path), then:
the RSS after start, after `initialize`, and after each of the `--count` largest transformers 4.35 modeling
files is opened (`--one-by-one`: each waited for, diagnostics and `adopter/analysisDone`, before the next; by
default all sent at once as `bench/lsp_latency.py --rss-only` does), and on `SIGUSR1` the server writes a
report: its RSS, the per-document parts measured by size (texts, line indexes, UTF-8 bytes, trees held,
salvage's memo, the unit cache, the matcher's cache, the snapshot, the published diagnostics) and, when
tracing, what Python allocated grouped by file and by line (and by traceback with N > 1); with
`ADOPTER_PROBE_BYTES=1` in the environment, which objects hold bytes objects over 20 KB (whole texts).

    ADOPTER_NATIVE=0 PYTHONPATH=server .venv/bin/python bench/lsp_rss_probe.py [--count 20] [--trace 1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _rss_mb(pid: int | str = "self") -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")) / 1024


def _report(path: str) -> None:
    """In the server (on SIGUSR1): the report described above, as JSON written to `path`."""
    import gc
    import tracemalloc

    from adopter.lsp.documents import Analyses
    from lsp_memory import deep_size

    out: dict[str, Any] = {"rss_mb": round(_rss_mb(), 1)}
    gc.unfreeze()  # the server freezes what it loaded (`freeze_long_lived`): frozen objects are not listed
    analyses = [o for o in gc.get_objects() if isinstance(o, Analyses)]
    docs = [d for a in analyses for d in a.documents.values()]
    out["documents"] = len(docs)
    out["released"] = sum(1 for d in docs if d.model is not None and d.model.released)

    def analysis(d: Any) -> Any:
        return d.model._analysis if d.model is not None else None

    if tracemalloc.is_tracing():
        snap = tracemalloc.take_snapshot()
        total = sum(s.size for s in snap.statistics("filename"))
        out["traced_mb"] = round(total / 2**20, 1)
        for key, n in (("filename", 30), ("lineno", 40)):
            out[f"by_{key}_mb"] = {
                f"{s.traceback[0].filename.split('site-packages/')[-1].split('/server/')[-1]}"
                + (f":{s.traceback[0].lineno}" if key == "lineno" else ""): round(s.size / 2**20, 2)
                for s in snap.statistics(key)[:n]}
        if tracemalloc.get_traceback_limit() > 1:  # where the 15 largest allocation sites were called from
            out["by_traceback_mb"] = [
                [round(s.size / 2**20, 2), [f"{f.filename.split('/server/')[-1]}:{f.lineno}" for f in s.traceback]]
                for s in snap.statistics("traceback")[:15]]
    seen: set[int] = set()
    parts: dict[str, int] = {}
    for part, of in (
        ("texts (str)", lambda d: d.text),
        ("line index", lambda d: d.lines),
        ("utf-8 bytes", lambda d: analysis(d)._data if analysis(d) else None),
        ("salvage memo", lambda d: analysis(d)._analyser.memo if analysis(d) else None),
        ("unit cache", lambda d: analysis(d)._analyser.cache if analysis(d) else None),
        ("analyser: older", lambda d: analysis(d)._analyser.older if analysis(d) else None),
        ("analyser: flows", lambda d: analysis(d)._analyser._flows if analysis(d) else None),
        ("analyser: inits", lambda d: analysis(d)._analyser._inits if analysis(d) else None),
        ("analyser: readings", lambda d: analysis(d)._analyser._readings if analysis(d) else None),
        ("analyser: fingerprints", lambda d: analysis(d)._analyser._fingerprints if analysis(d) else None),
        ("analyser: layout", lambda d: analysis(d)._analyser._layout if analysis(d) else None),
        ("analyser: resolver (shared)", lambda d: analysis(d)._analyser.resolver if analysis(d) else None),
        ("analyser (rest)", lambda d: analysis(d)._analyser if analysis(d) else None),
        ("matcher", lambda d: d.model.matcher if d.model else None),
        ("snapshot", lambda d: d.snapshot),
        ("published", lambda d: d.published),
        ("model (rest)", lambda d: d.model),
    ):
        parts[part] = sum(deep_size(of(d), seen) for d in docs)
    out["python_parts_mb"] = {k: round(v / 2**20, 2) for k, v in parts.items()}
    if os.environ.get("ADOPTER_PROBE_BYTES"):  # who holds whole texts' bytes (slow: every object's referents)
        holders: dict[str, int] = {}
        for o in gc.get_objects():
            for r in gc.get_referents(o):
                if isinstance(r, bytes) and len(r) > 20000:
                    chain = [type(o).__name__]
                    up = o
                    for _ in range(3):
                        refs = [x for x in gc.get_referrers(up) if not isinstance(x, (list, type(sys._getframe())))
                                or (isinstance(x, list) and len(x) < 100)]
                        if not refs:
                            break
                        up = refs[0]
                        chain.append(type(up).__name__ + (f"[{sorted(up)[:3]}]" if isinstance(up, dict) else ""))
                    key = " <- ".join(chain)
                    holders[key] = holders.get(key, 0) + len(r)
        out["big_bytes_holders_kb"] = {k: v // 1024 for k, v in sorted(holders.items(), key=lambda kv: -kv[1])[:20]}

    def walks(d: Any) -> list[Any]:
        a = analysis(d)
        return [f.walk for fs in a._analyser._flows.values() for f in fs] if a is not None else []

    out["flow_walks_alone_mb"] = round(sum(deep_size(walks(d), set()) for d in docs) / 2**20, 2)
    out["flow_walks_by_doc_kb"] = {Path(d.uri).name: round(deep_size(walks(d)) / 1024) for d in docs}
    out["memo_sizes_kb"] = {Path(d.uri).name: round(deep_size(analysis(d)._analyser.memo) / 1024)
                            for d in docs if analysis(d) is not None}
    Path(path + ".part").write_text(json.dumps(out, indent=1))
    os.replace(path + ".part", path)


def serve(trace: int) -> None:
    """The server as `python -m adopter lsp`, with the report on SIGUSR1."""
    if trace:
        import tracemalloc

        tracemalloc.start(trace)
    target = os.environ["ADOPTER_PROBE_OUT"]
    signal.signal(signal.SIGUSR1, lambda *_: _report(target))
    from adopter.cli import main

    sys.exit(main(["lsp"]))


def analysis_done(uri: str) -> Any:
    """A predicate for `Client.expect`: the server's `adopter/analysisDone` for `uri`."""
    return lambda method, params: method == "adopter/analysisDone" and params.get("uri") == uri


async def probe(args: argparse.Namespace) -> dict[str, Any]:
    import lsp_latency as bench

    corpus = sorted(bench.modeling_files(), key=lambda f: len(f.text), reverse=True)
    names = args.files or [f.name for f in corpus[: args.count]]
    with tempfile.TemporaryDirectory(prefix="adopter-rss-probe-") as tmp:
        folder = Path(tmp)
        for f in corpus:
            (folder / f.name).write_text(f.text, encoding="utf-8")
        out_path = folder / "report.json"
        command = [sys.executable, str(Path(__file__).resolve()), "--serve", "--trace", str(args.trace)]
        client = bench.Client(command, folder, {**os.environ, "ADOPTER_PROBE_OUT": str(out_path)})
        await client.start()
        await asyncio.sleep(0.5)
        assert client.process is not None
        rss: dict[str, float] = {"start": round(client.rss_mb(), 1)}
        await client.initialize(folder, {"debounce_ms": 0})
        await asyncio.sleep(1.0)  # the early start (analysis imported, rules loaded) settles
        rss["initialized"] = round(client.rss_mb(), 1)
        waits = []
        for name in names:
            path = folder / name
            arrived = client.expect(bench.diagnostics_for(path.as_uri()))
            settled = client.expect(analysis_done(path.as_uri()))
            client.notify("textDocument/didOpen", {"textDocument": {
                "uri": path.as_uri(), "languageId": "python", "version": 1, "text": path.read_text(encoding="utf-8")}})
            if args.one_by_one:
                await asyncio.wait_for(asyncio.gather(arrived, settled), 600)
                await asyncio.sleep(0.3)
                rss[f"+{name}"] = round(client.rss_mb(), 1)
            else:
                waits += [arrived, settled]
        await asyncio.wait_for(asyncio.gather(*waits), 600)
        await asyncio.sleep(0.5)
        rss["all open"] = round(client.rss_mb(), 1)
        os.kill(client.process.pid, signal.SIGUSR1)
        for _ in range(6000):  # tracing many frames takes minutes on a loaded machine
            await asyncio.sleep(0.1)
            if out_path.exists():
                break
        report = json.loads(out_path.read_text())
        await client.stop()
    return {"rss_mb": rss, "server": report}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--trace", type=int, default=0, help="tracemalloc frames in the server (0: off)")
    parser.add_argument("--count", type=int, default=20, help="the N largest modeling files (default 20)")
    parser.add_argument("--files", nargs="*", help="these modeling files instead")
    parser.add_argument("--one-by-one", action="store_true", help="open each after the previous one settled")
    args = parser.parse_args()
    if args.serve:
        serve(args.trace)
        return
    print(json.dumps(asyncio.run(probe(args)), indent=1))


if __name__ == "__main__":
    main()
