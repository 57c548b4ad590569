"""The language server's resident memory as edits accumulate (issue 22's "RSS with BERT open").

A fresh server (`bench/lsp_latency.py`'s client and edits: one character typed at a random place, then
deleted), `modeling_gpt2.py` opened first as in the latency bench, then BERT, then N one-line edits; prints
the RSS after `initialize`, after each open and every 25 edits, as one JSON line. A server that keeps
something per keystroke shows a line that keeps rising.

    PYTHONPATH=server .venv/bin/python bench/lsp_rss_growth.py [--edits 400] [--seed 1] [--file modeling_bert.py]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import lsp_latency as bench


async def run(name: str, count: int, seed: int) -> dict[str, float]:
    corpus = bench.modeling_files()
    with tempfile.TemporaryDirectory(prefix="adopter-rss-") as tmp:
        folder = Path(tmp)
        for f in corpus:
            (folder / f.name).write_text(f.text, encoding="utf-8")
        path = folder / name
        command, options = bench.SERVERS["adopter"]
        client = bench.Client(command, folder)
        await client.start()
        await client.initialize(folder, options)
        rss = {"initialized": client.rss_mb()}
        await bench.open_and_wait(client, folder / "modeling_gpt2.py")
        rss["gpt2 open"] = client.rss_mb()
        await bench.open_and_wait(client, path)
        rss[f"{name} open"] = client.rss_mb()
        uri = path.as_uri()
        edits = bench.one_line_edits(path.read_text(encoding="utf-8"), count, random.Random(seed))
        for version, (line, column, inserted, deleted) in enumerate(edits, start=2):
            change = {"range": {"start": {"line": line, "character": column},
                                "end": {"line": line, "character": column + deleted}}, "text": inserted}
            arrived = client.expect(bench.diagnostics_for(uri, version))
            client.notify("textDocument/didChange",
                          {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]})
            await asyncio.wait_for(arrived, 300)
            if (version - 1) % 25 == 0:
                rss[f"after {version - 1} edits"] = round(client.rss_mb(), 1)
        await client.stop()
    return rss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--edits", type=int, default=400)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--file", default="modeling_bert.py")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args.file, args.edits, args.seed))))


if __name__ == "__main__":
    main()
