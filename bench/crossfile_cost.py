"""What cross-file reach adds to one keystroke: the same edits replayed in process, with and without it.

The edits are `bench/lsp_latency.py`'s (one character typed at a random place, then deleted, seed 0).
Each file is kept twice as the language server keeps it (`DocumentAnalysis`): one with the reach
(a deferred reach, as the server keeps it: its imported names queued, resolved, and the file analysed
again, as the server has it once jedi has answered; a name typed anew is queued and resolved outside
the keystroke), one without. Each
edit goes to both, in alternating order, and the thread CPU time of bringing each up to date is
recorded, together with the time spent inside the reach's hook (`CrossFileReach.bind`). Per-edit
differences of two interleaved runs cancel most of the load of a shared machine, which wall-clock
latency runs cannot. Findings are compared too: the hook must change only what it resolves.

Run: `ADOPTER_NATIVE=0 PYTHONPATH=server .venv/bin/python bench/crossfile_cost.py FILE... [--edits 200]`
(files inside unpacked packages, e.g. `.cache/realworld/pkgs/transformers/transformers/models/t5/modeling_t5.py`).
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from lsp_latency import one_line_edits, percentile


def apply(text: str, edit: tuple[int, int, str, int]) -> str:
    line, column, inserted, deleted = edit
    lines = text.split("\n")
    lines[line] = lines[line][:column] + inserted + lines[line][column + deleted:]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--edits", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from adopter.analysis.analyser import default_resolver, deferred_reach
    from adopter.analysis.crossfile import reach as crossfile
    from adopter.analysis.incremental import DocumentAnalysis

    reach = deferred_reach()  # as the server keeps it: a name not resolved yet is queued
    if reach is None:
        print("ADOPTER_CROSSFILE=0: nothing to compare")
        return 2
    hook_ms: list[float] = []
    original = crossfile.CrossFileReach.bind

    def timed(self, *a, **k):  # type: ignore[no-untyped-def]
        t = time.thread_time()
        try:
            return original(self, *a, **k)
        finally:
            hook_ms.append((time.thread_time() - t) * 1000)

    hook_timed = True
    try:
        crossfile.CrossFileReach.bind = timed  # type: ignore[method-assign]
    except (TypeError, AttributeError):
        hook_timed = False  # a mypyc-compiled class: its methods cannot be wrapped
        print("native build: the time inside the hook is not measured (run with ADOPTER_NATIVE=0)")
    for name in args.files:
        path = str(Path(name).resolve())
        text = Path(path).read_text(encoding="utf-8")
        t = time.perf_counter()
        # As the server on opening the file: the analysis queues the imported names, jedi resolves them
        # (off the keystroke path), and the document is analysed again with them.
        DocumentAnalysis(text, path, reach=reach).result()
        reach.resolve_pending()
        on = DocumentAnalysis(text, path, reach=reach)
        first = on.result()
        resolve_s = time.perf_counter() - t
        off = DocumentAnalysis(text, path, resolver=default_resolver())  # same resolver, no reach
        off.result()
        reach.release()  # as the server does after resolving: jedi's parse trees are dropped
        gc.collect()
        queued = 0
        resolved = sum(1 for a in first.architectures for b in (a.init.bindings if a.init else ())
                       if getattr(b.value, "origin", None))
        edits = one_line_edits(text, args.edits, random.Random(args.seed))
        times: dict[str, list[float]] = {"on": [], "off": []}
        added: list[float] = []
        current = text
        for i, edit in enumerate(edits):
            current = apply(current, edit)
            order = (("on", on), ("off", off)) if i % 2 == 0 else (("off", off), ("on", on))
            spent: dict[str, float] = {}
            for label, doc in order:
                hook_ms.clear()
                t = time.thread_time()
                doc.update(current)
                doc.result()
                spent[label] = (time.thread_time() - t) * 1000
                if label == "on":
                    added.append(sum(hook_ms))
            if reach.has_pending():  # the server resolves these on its own thread, not in the keystroke
                queued += 1
                reach.resolve_pending()
            times["on"].append(spent["on"])
            times["off"].append(spent["off"])
        diff = [a - b for a, b in zip(times["on"], times["off"])]
        print(f"{Path(path).name}: {resolved} bindings resolved in other files; first analysis with jedi "
              f"{resolve_s * 1000:.0f} ms; {len(edits)} edits")
        for label in ("on", "off"):
            v = times[label]
            print(f"  analysis {label:3}  p50 {statistics.median(v):6.2f}  p95 {percentile(v, 0.95):6.2f}  "
                  f"max {max(v):6.2f} ms CPU")
        print(f"  on - off per edit  p50 {statistics.median(diff):6.2f}  p95 {percentile(diff, 0.95):6.2f} ms")
        print(f"  edits that queued a name for jedi: {queued}")
        if hook_timed:
            print(f"  inside the hook    p50 {statistics.median(added):6.3f}  p95 {percentile(added, 0.95):6.3f}  "
                  f"max {max(added):6.3f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
