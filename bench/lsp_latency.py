"""Language-server latency and memory: Adopter's server against `ruff server`, both over stdio.

Measures, per file (modeling_bert.py, modeling_t5.py and the largest 4.35.0 modeling file):
- fresh open (the cold start of issue 14): a new server process, `initialize`, then `didOpen` of the
  file as its first document -> its first `publishDiagnostics`; the median of `--fresh-runs` servers, both
  from `didOpen` and from process start, with the parsed-rule cache as any start after the first has it
  ("warm cache") and empty as on the very first start after installing ("empty cache", its own
  `ADOPTER_CACHE_DIR` per run);
- start -> first diagnostics: a fresh server, another file opened first, until its diagnostics;
- cold open: then `didOpen` of the measured file on that running server -> its diagnostics;
- one-line edits: one character typed at a random place then deleted again (so the file stays real),
  `didChange` -> `publishDiagnostics` of that version, with debounce 0; p50/p95 over N edits, and the
  server process's CPU time over the same interval (all threads, from /proc: what a loaded machine
  changes least);
and the server's RSS with the 20 largest modeling files open. `ruff server` gets the same files and
the same edits in the same run, as the reference.

    .venv/bin/python bench/lsp_latency.py [--edits 200] [--seed 0] [--fresh-runs 5] [--markdown]
    .venv/bin/python bench/lsp_latency.py --rss-only --servers adopter   # the memory figure alone

`--per-edit OUT.json` writes every edit's timings (per server and file: the edit, wall, server CPU, in-server
and analysis ms), to find which edits make the p95 (`bench/edit_profile.py` replays the same edits in-process).

`ADOPTER_NATIVE=0` in the environment measures the pure-Python build (the server inherits it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from adopter.corpus import modeling_files


def server_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a server process started in another folder (`env`, else this process's), with
    `PYTHONPATH` made absolute: a relative `PYTHONPATH=server` would not resolve from the server's working
    folder, so a checkout's server would silently run whatever `adopter` the venv has installed (the main
    checkout's, for an editable install) instead of the code measured."""
    env = dict(os.environ if env is None else env)
    if env.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in env["PYTHONPATH"].split(os.pathsep) if p)
    return env


class Client:
    """A minimal JSON-RPC/LSP client over a subprocess's stdio (no framework overhead in the timings)."""

    def __init__(self, command: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
        self.command, self.cwd, self.env = command, cwd, env
        self.process: asyncio.subprocess.Process | None = None
        self._ids = 0
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._waiters: list[tuple[Callable[[str, Any], bool], asyncio.Future[float]]] = []
        self.analysis_ms: dict[tuple[str, int], float] = {}  # adopter/analysisDone: analysis thread time
        self.server_ms: dict[tuple[str, int], float] = {}  # adopter/analysisDone: change in -> diagnostics out
        self._reader: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.process = await asyncio.create_subprocess_exec(
            *self.command, cwd=self.cwd, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, env=server_env(self.env),
        )
        self._reader = asyncio.ensure_future(self._read())

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process is not None and self.process.stdin is not None
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

    async def request(self, method: str, params: Any) -> Any:
        self._ids += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[self._ids] = future
        self._send({"id": self._ids, "method": method, "params": params})
        return await asyncio.wait_for(future, 300)

    def notify(self, method: str, params: Any) -> None:
        self._send({"method": method, "params": params})

    def expect(self, predicate: Callable[[str, Any], bool]) -> asyncio.Future[float]:
        """A future resolving to the arrival time of the first notification matching `predicate`."""
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self._waiters.append((predicate, future))
        return future

    async def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        stdout = self.process.stdout
        while True:
            length = 0
            while (line := await stdout.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if not line:
                return
            message = json.loads(await stdout.readexactly(length))
            arrived = time.perf_counter()
            if "id" in message and "method" not in message:
                future = self._pending.pop(message["id"], None)
                if future is not None and not future.done():
                    future.set_result(message.get("result"))
            elif "id" in message:  # a server->client request: accept it (configuration, progress, ...)
                result: Any = [None] * len(message["params"].get("items", [])) if message["method"] == "workspace/configuration" else None
                self._send({"id": message["id"], "result": result})
            else:
                if message["method"] == "adopter/analysisDone":
                    params = message["params"]
                    self.analysis_ms[(params["uri"], params["version"])] = params["elapsedMs"]
                    if params.get("sinceChangeMs") is not None:
                        self.server_ms[(params["uri"], params["version"])] = params["sinceChangeMs"]
                for waiter in list(self._waiters):
                    predicate, future = waiter
                    if not future.done() and predicate(message["method"], message.get("params")):
                        future.set_result(arrived)
                        self._waiters.remove(waiter)

    async def initialize(self, root: Path, options: dict[str, Any] | None) -> None:
        capabilities = {
            "textDocument": {"publishDiagnostics": {"versionSupport": True}, "synchronization": {"didSave": True}},
            "workspace": {"configuration": False},
            "general": {"positionEncodings": ["utf-16"]},
        }
        await self.request("initialize", {
            "processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": capabilities,
            "initializationOptions": options or {},
            "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
        })
        self.notify("initialized", {})

    def cpu_ns(self) -> int:
        """CPU time the server process has used so far, all its threads, in ns (`/proc/<pid>/task/*/
        schedstat`: exact, unlike the 10 ms ticks of `/proc/<pid>/stat`); 0 where there is no /proc."""
        assert self.process is not None
        total = 0
        try:
            tasks = os.listdir(f"/proc/{self.process.pid}/task")
        except OSError:
            return 0
        for task in tasks:
            try:
                with open(f"/proc/{self.process.pid}/task/{task}/schedstat") as f:
                    total += int(f.read().split()[0])
            except (OSError, ValueError, IndexError):
                continue  # a thread that ended meanwhile
        return total

    def rss_mb(self) -> float:
        assert self.process is not None
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        kb = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
        return kb / 1024

    async def stop(self) -> None:
        try:
            await asyncio.wait_for(self.request("shutdown", None), 30)
            self.notify("exit", None)
            assert self.process is not None
            await asyncio.wait_for(self.process.wait(), 30)
        except (TimeoutError, asyncio.TimeoutError, ConnectionError):
            if self.process is not None and self.process.returncode is None:
                self.process.kill()
        if self._reader is not None:
            self._reader.cancel()


def diagnostics_for(uri: str, version: int | None = None) -> Callable[[str, Any], bool]:
    def predicate(method: str, params: Any) -> bool:
        if method != "textDocument/publishDiagnostics" or params.get("uri") != uri:
            return False
        return version is None or params.get("version") in (None, version)

    return predicate


SERVERS: dict[str, tuple[list[str], dict[str, Any]]] = {
    "adopter": ([sys.executable, "-m", "adopter", "lsp"], {"debounce_ms": 0}),
    "ruff": ([shutil.which("ruff") or str(Path(sys.executable).parent / "ruff"), "server"], {}),
}


def one_line_edits(text: str, count: int, rng: random.Random) -> list[tuple[int, int, str, int]]:
    """(line, column, inserted text, chars deleted): type one character at a random place, then delete it."""
    lines = text.split("\n")
    edits: list[tuple[int, int, str, int]] = []
    while len(edits) < count:
        line = rng.randrange(len(lines))
        column = rng.randint(0, len(lines[line]))
        char = rng.choice("abcxyz_(0 .")
        edits.append((line, column, char, 0))
        edits.append((line, column, "", 1))
    return edits[:count]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def open_and_wait(client: Client, path: Path) -> float:
    """didOpen -> first diagnostics for `path`, in ms."""
    uri = path.as_uri()
    arrived = client.expect(diagnostics_for(uri))
    sent = time.perf_counter()
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "python", "version": 1, "text": path.read_text(encoding="utf-8")}})
    return (await asyncio.wait_for(arrived, 300) - sent) * 1000


async def measure_file(server: str, path: Path, edits: list[tuple[int, int, str, int]], warm_up: Path) -> dict[str, Any]:
    command, options = SERVERS[server]
    client = Client(command, path.parent)
    started = time.perf_counter()
    await client.start()
    await client.initialize(path.parent, options)
    first_ms = await open_and_wait(client, warm_up)  # a fresh server: includes loading rules and grammars
    first_ms += (time.perf_counter() - started) * 1000 - first_ms  # count from process start
    cold_ms = await open_and_wait(client, path)  # a file the running server has not seen
    uri = path.as_uri()
    latencies: list[float] = []
    cpu: list[float] = []  # the server's CPU time from the change sent to its diagnostics received, ms
    for version, (line, column, inserted, deleted) in enumerate(edits, start=2):
        change = {"range": {"start": {"line": line, "character": column},
                            "end": {"line": line, "character": column + deleted}}, "text": inserted}
        arrived = client.expect(diagnostics_for(uri, version))
        cpu_before = client.cpu_ns()
        sent = time.perf_counter()
        client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]})
        latencies.append((await asyncio.wait_for(arrived, 300) - sent) * 1000)
        cpu.append((client.cpu_ns() - cpu_before) / 1e6)
    analysis = [client.analysis_ms[(uri, v)] for v in range(2, len(edits) + 2) if (uri, v) in client.analysis_ms]
    in_server = [client.server_ms[(uri, v)] for v in range(2, len(edits) + 2) if (uri, v) in client.server_ms]
    rss = client.rss_mb()
    await client.stop()
    per_edit = [{"version": v, "edit": list(e), "ms": wall, "cpu_ms": c, "server_ms": client.server_ms.get((uri, v)),
                 "analysis_ms": client.analysis_ms.get((uri, v))}
                for v, e, wall, c in zip(range(2, len(edits) + 2), edits, latencies, cpu, strict=True)]
    return {
        "server": server, "file": path.name, "kb": round(len(path.read_bytes()) / 1024), "per_edit": per_edit,
        "start_to_first_ms": first_ms, "cold_ms": cold_ms,
        "p50_ms": statistics.median(latencies), "p95_ms": percentile(latencies, 0.95),
        "max_ms": max(latencies), "edits": len(latencies), "rss_mb": rss,
        "analysis_p50_ms": statistics.median(analysis) if analysis else None,
        "analysis_p95_ms": percentile(analysis, 0.95) if analysis else None,
        "server_p50_ms": statistics.median(in_server) if in_server else None,
        "server_p95_ms": percentile(in_server, 0.95) if in_server else None,
        "cpu_p50_ms": statistics.median(cpu), "cpu_p95_ms": percentile(cpu, 0.95),
        # The edits that type a character (the other half delete it again, often back to a cached state).
        "insert_p95_ms": percentile([x for x, e in zip(latencies, edits, strict=False) if not e[3]], 0.95),
        "insert_cpu_p95_ms": percentile([x for x, e in zip(cpu, edits, strict=False) if not e[3]], 0.95),
    }


async def fresh_open(server: str, path: Path, cache_dir: Path | None) -> tuple[float, float]:
    """A new server, `initialize`, then `path` as its first document: (didOpen -> diagnostics, process
    start -> diagnostics) in ms. `cache_dir`: an empty `ADOPTER_CACHE_DIR` (no parsed rules yet)."""
    command, options = SERVERS[server]
    env = None if cache_dir is None else {**os.environ, "ADOPTER_CACHE_DIR": str(cache_dir)}
    client = Client(command, path.parent, env)
    started = time.perf_counter()
    await client.start()
    await client.initialize(path.parent, options)
    open_ms = await open_and_wait(client, path)
    total_ms = (time.perf_counter() - started) * 1000
    await client.stop()
    return open_ms, total_ms


async def measure_fresh(server: str, path: Path, runs: int) -> dict[str, Any]:
    """Median (and worst) of `runs` fresh opens, with the rule cache warm and, for Adopter, empty."""
    await fresh_open(server, path, None)  # fills the user's rule cache, as any earlier start has
    warm = [await fresh_open(server, path, None) for _ in range(runs)]
    out: dict[str, Any] = {
        "fresh_open_ms": statistics.median(w[0] for w in warm), "fresh_open_max_ms": max(w[0] for w in warm),
        "fresh_start_ms": statistics.median(w[1] for w in warm),
    }
    if server == "adopter":
        empty = []
        for _ in range(runs):
            with tempfile.TemporaryDirectory(prefix="adopter-cache-") as cache:
                empty.append(await fresh_open(server, path, Path(cache)))
        out |= {"fresh_open_empty_ms": statistics.median(e[0] for e in empty),
                "fresh_start_empty_ms": statistics.median(e[1] for e in empty)}
    return out


async def measure_rss(server: str, paths: list[Path]) -> float:
    """RSS of one server with all `paths` open and analysed."""
    command, options = SERVERS[server]
    client = Client(command, paths[0].parent)
    await client.start()
    await client.initialize(paths[0].parent, options)
    waits = []
    for path in paths:
        waits.append(client.expect(diagnostics_for(path.as_uri())))
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": path.as_uri(), "languageId": "python", "version": 1, "text": path.read_text(encoding="utf-8")}})
    await asyncio.wait_for(asyncio.gather(*waits), 600)
    await asyncio.sleep(0.5)
    rss = client.rss_mb()
    await client.stop()
    return rss


async def in_place(args: argparse.Namespace) -> None:
    """`--paths`: each file measured where it is (its folder the workspace), so imports between the
    files of its package resolve (cross-file reach); the warm-up file is the next one given."""
    paths = [Path(p).resolve() for p in args.paths]
    rows = []
    per_edit: dict[str, list[dict[str, Any]]] = {}
    for i, path in enumerate(paths):
        edits = one_line_edits(path.read_text(encoding="utf-8"), args.edits, random.Random(args.seed))
        for server in args.servers:
            row = await measure_file(server, path, edits, paths[(i + 1) % len(paths)])
            per_edit[f"{server} {path.name}"] = row.pop("per_edit")
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.per_edit:
        args.per_edit.write_text(json.dumps(per_edit))
    if args.markdown:
        print(markdown(rows, {}, args))


async def main_async(args: argparse.Namespace) -> None:
    if args.paths:
        await in_place(args)
        return
    corpus = modeling_files()
    if args.rss_only:
        with tempfile.TemporaryDirectory(prefix="adopter-lsp-bench-") as tmp:
            folder = Path(tmp)
            for f in corpus:
                (folder / f.name).write_text(f.text, encoding="utf-8")
            big = [folder / f.name for f in sorted(corpus, key=lambda f: len(f.text), reverse=True)[:20]]
            rss = {server: await measure_rss(server, big) for server in args.servers}
            print(json.dumps({"rss_20_largest_mb": rss}), flush=True)
        return
    by_name = {f.name: f for f in corpus}
    largest = max(corpus, key=lambda f: len(f.text))
    names = args.files or ["modeling_bert.py", "modeling_t5.py", largest.name]
    with tempfile.TemporaryDirectory(prefix="adopter-lsp-bench-") as tmp:
        folder = Path(tmp)
        for f in corpus:
            (folder / f.name).write_text(f.text, encoding="utf-8")
        rows = []
        per_edit: dict[str, list[dict[str, Any]]] = {}
        for name in names:
            edits = one_line_edits(by_name[name].text, args.edits, random.Random(args.seed))
            for server in args.servers:
                row = await measure_file(server, folder / name, edits, folder / "modeling_gpt2.py")
                if args.fresh_runs:
                    row |= await measure_fresh(server, folder / name, args.fresh_runs)
                per_edit[f"{server} {name}"] = row.pop("per_edit")
                rows.append(row)
                print(json.dumps(row), flush=True)
        rss: dict[str, float] = {}
        if not args.no_rss:
            big = [folder / f.name for f in sorted(corpus, key=lambda f: len(f.text), reverse=True)[:20]]
            rss = {server: await measure_rss(server, big) for server in args.servers}
            print(json.dumps({"rss_20_largest_mb": rss}), flush=True)
    if args.per_edit:
        args.per_edit.write_text(json.dumps(per_edit))
    if args.markdown:
        print(markdown(rows, rss, args))


def _native_status() -> str:
    """Whether the server (same checkout, same environment) runs the native analysis build."""
    from adopter import _native  # importing adopter installs the native build when it is current

    return "native (mypyc)" if _native.state["active"] else f"pure Python ({_native.state['reason']})"


def markdown(rows: list[dict[str, Any]], rss: dict[str, float], args: argparse.Namespace) -> str:
    def ms(value: float | None) -> str:
        return "–" if value is None else f"{value:.1f}"

    lines = [
        f"Machine: {platform.node()} ({os.cpu_count()} cores, {platform.machine()}), Python "
        f"{platform.python_version()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        f"Command: `.venv/bin/python bench/lsp_latency.py --edits {args.edits} --seed {args.seed} "
        f"--fresh-runs {args.fresh_runs} --markdown`",
        f"Adopter's analysis and matching: {_native_status()}.",
        "",
        "| server | file | KB | start → first diagnostics (ms) | cold open (ms) | edit p50 | edit p95 | edit max "
        "| in server p50 / p95 | analysis p50 / p95 | server CPU per edit p50 / p95 | edits |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['server']} | {r['file']} | {r['kb']} | {r['start_to_first_ms']:.0f} | {r['cold_ms']:.0f} | "
            f"{ms(r['p50_ms'])} | {ms(r['p95_ms'])} | {r['max_ms']:.0f} | "
            f"{ms(r['server_p50_ms'])} / {ms(r['server_p95_ms'])} | "
            f"{ms(r['analysis_p50_ms'])} / {ms(r['analysis_p95_ms'])} | "
            f"{ms(r.get('cpu_p50_ms'))} / {ms(r.get('cpu_p95_ms'))} | {r['edits']} |"
        )
    if args.fresh_runs:
        lines += [
            "",
            f"Fresh open: a new server, `initialize`, the file as its first document; median of {args.fresh_runs} "
            "servers (worst in brackets); rule cache warm (any start after the first) and empty (the first "
            "start after installing).",
            "",
            "| server | file | didOpen → diagnostics (ms) | process start → diagnostics (ms) "
            "| empty cache: didOpen → diagnostics | empty cache: process start → diagnostics |",
            "|---|---|---:|---:|---:|---:|",
        ]
        for r in rows:
            if "fresh_open_ms" in r:
                lines.append(
                    f"| {r['server']} | {r['file']} | {r['fresh_open_ms']:.0f} ({r['fresh_open_max_ms']:.0f}) | "
                    f"{r['fresh_start_ms']:.0f} | {ms(r.get('fresh_open_empty_ms'))} | "
                    f"{ms(r.get('fresh_start_empty_ms'))} |"
                )
    lines.append("")
    if rss:
        lines.append("RSS with the 20 largest modeling files open: " + ", ".join(f"{s} {v:.0f} MB" for s, v in rss.items()))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=200, help="one-line edits per file (default 200)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--servers", nargs="+", default=["adopter", "ruff"], choices=sorted(SERVERS))
    parser.add_argument("--fresh-runs", type=int, default=5,
                        help="fresh servers per file for the fresh-open figures (0: skip them)")
    parser.add_argument("--files", nargs="+", help="modeling file names (default: BERT, T5 and the largest)")
    parser.add_argument("--markdown", action="store_true", help="also print a table for docs/benchmarks.md")
    parser.add_argument("--per-edit", type=Path, metavar="OUT", help="write every edit's timings here (JSON)")
    parser.add_argument("--no-rss", action="store_true", help="skip the RSS figure with the 20 largest files open")
    parser.add_argument("--paths", nargs="+", metavar="PATH",
                        help="measure these files in place instead of copies of the corpus (no RSS figure)")
    parser.add_argument("--rss-only", action="store_true",
                        help="only the RSS with the 20 largest modeling files open (no latency figures)")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
