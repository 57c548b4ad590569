"""Server start-up: process spawn -> first diagnostics of BERT, and the server's RSS with BERT open.

Each run is a new `python -m adopter lsp` (the rule cache warm, as on any start after the first): the
clock starts just before the process is spawned and stops when `publishDiagnostics` for
`modeling_bert.py` (opened right after `initialize`) arrives; the RSS is read from /proc once the full
server has published too (`adopter/analysisDone`) and 0.2 s more have passed.
`ruff server` gets the same runs as the reference (`--servers adopter`: Adopter alone). Prints the
median and the worst of `--runs`, and the import-time profile of `adopter lsp` up to `initialize` with
`--importtime` (`python -X importtime`).

    PYTHONPATH=server .venv/bin/python bench/lsp_startup.py [--runs 10] [--servers adopter ruff]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from adopter.corpus import modeling_file
from lsp_latency import SERVERS, Client, diagnostics_for


def cpu_ms(pid: int) -> float:
    """User + system CPU time of a process so far, in ms (from /proc; NaN where there is none)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


async def one_start(server: str, path: Path) -> tuple[float, float, float]:
    """(spawn -> first diagnostics of `path` in ms, RSS in MB then, the server's CPU ms up to them)."""
    command, options = SERVERS[server]
    client = Client(command, path.parent)
    started = time.perf_counter()
    await client.start()
    await client.initialize(path.parent, options)
    arrived = client.expect(diagnostics_for(path.as_uri()))
    # Adopter's full server announces each analysis it published (an early start publishes before it).
    settled = client.expect(lambda method, params: method == "adopter/analysisDone")
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": path.as_uri(), "languageId": "python", "version": 1, "text": path.read_text(encoding="utf-8")}})
    done = await asyncio.wait_for(arrived, 120)
    ms = (done - started) * 1000
    assert client.process is not None
    cpu = cpu_ms(client.process.pid)
    if server == "adopter":
        await asyncio.wait_for(settled, 120)
    await asyncio.sleep(0.2)  # what the server does right after publishing counts towards its RSS
    rss = client.rss_mb()
    await client.stop()
    return ms, rss, cpu


async def main_async(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="adopter-startup-") as tmp:
        path = Path(tmp) / "modeling_bert.py"
        path.write_text(modeling_file("bert").text, encoding="utf-8")
        for server in args.servers:
            await one_start(server, path)  # fills the user's rule cache, as any earlier start has
            runs = [await one_start(server, path) for _ in range(args.runs)]
            ms, rss, cpu = [r[0] for r in runs], [r[1] for r in runs], [r[2] for r in runs]
            print(json.dumps({"server": server, "runs": args.runs, "spawn_to_first_diagnostics_ms_median":
                              round(statistics.median(ms)), "worst_ms": round(max(ms)), "best_ms": round(min(ms)),
                              "server_cpu_ms_median": round(statistics.median(cpu)), "server_cpu_ms_best": round(min(cpu)),
                              "rss_mb_median": round(statistics.median(rss), 1), "load": os.getloadavg()}),
                  flush=True)


def importtime() -> None:
    """The 25 slowest imports (cumulative) of `adopter lsp` before it serves (`-X importtime`)."""
    import subprocess

    code = "import adopter.cli as c, adopter.commands.lsp as l; from adopter.lsp.app import build_server; build_server()"
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True,
                          check=True)
    rows = []
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "|" in line and "cumulative" not in line:
            _, cumulative, name = line.split("|")
            rows.append((int(cumulative.strip()), name.rstrip()))
    for us, name in sorted(rows, reverse=True)[:25]:
        print(f"{us / 1000:8.1f} ms {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--servers", nargs="+", default=["adopter", "ruff"], choices=sorted(SERVERS))
    parser.add_argument("--importtime", action="store_true", help="print the slowest imports instead")
    args = parser.parse_args()
    if args.importtime:
        importtime()
        return
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
