"""Where the language server's memory goes with the 20 largest modeling files open (issue 22).

In one process, the server's own document code (`adopter.lsp.documents.Analyses` with the server's rule
context, the same calls as `didOpen` → analysis) opens the 20 largest transformers 4.35 modeling files
and reports:
- RSS (from /proc/self/status) after the imports, after the rules, and after the 20 analyses;
- what the 20 analyses hold that Python allocated (tracemalloc, grouped by the module that allocated
  it), and the per-document parts measured by size: text, UTF-8 bytes, line index, unit cache;
- the bytes in Python's allocator (pymalloc blocks: tree-sitter's trees are allocated there too, the
  binding gives tree-sitter Python's allocator) after the 20 analyses, and again after dropping, in turn,
  the snapshots and the session's cache, the documents' analysis state (trees, unit caches), and their
  texts and line indexes; the cost of the full re-parse a document without trees pays on its next edit
  (largest file, median of 5, CPU).

    PYTHONPATH=server .venv/bin/python bench/lsp_memory.py [--no-tracemalloc]

It measures the library code, not a server over stdio: `bench/lsp_latency.py --rss-only` gives the
server's own RSS figure.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

from adopter.corpus import modeling_files


def rss_mb() -> float:
    status = Path("/proc/self/status").read_text()
    return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")) / 1024


def pymalloc_mb() -> float | None:
    """MB in Python's small-object allocator's blocks (`sys._debugmallocstats`; None under tracemalloc)."""
    import os
    import re
    import tempfile

    if tracemalloc.is_tracing():
        return None
    with tempfile.TemporaryFile() as out:
        saved = os.dup(2)
        os.dup2(out.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        found = re.search(rb"# bytes in allocated blocks\s*=\s*([\d,]+)", out.read())
    return int(found.group(1).replace(b",", b"")) / 2**20 if found else None


def deep_size(obj: object, seen: set[int] | None = None) -> int:
    """Bytes of the Python objects reachable from `obj` (not through modules, types or functions)."""
    seen = set() if seen is None else seen
    stack, total = [obj], 0
    while stack:
        o = stack.pop()
        if id(o) in seen or isinstance(o, (type, type(sys), type(deep_size))):
            continue
        seen.add(id(o))
        total += sys.getsizeof(o)
        if isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, (list, tuple, set, frozenset)):
            stack.extend(o)
        elif hasattr(o, "__dict__"):
            stack.append(vars(o))
        if hasattr(type(o), "__slots__"):
            for klass in type(o).__mro__:
                for slot in getattr(klass, "__slots__", ()):
                    if hasattr(o, slot):
                        stack.append(getattr(o, slot))
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-tracemalloc", action="store_true", help="RSS only (tracemalloc slows and grows it)")
    parser.add_argument("--count", type=int, default=20, help="how many of the largest files (default 20)")
    args = parser.parse_args()
    report: dict[str, Any] = {"rss_start_mb": rss_mb()}

    from adopter.lsp.documents import Analyses
    from adopter.lsp.pipeline import load_rule_context
    from adopter.lsp.server import freeze_long_lived
    from adopter.lsp.settings import Settings
    from adopter.lsp.sync import LineStarts

    report["rss_imports_mb"] = rss_mb()
    analyses = Analyses(lambda: context)
    context = load_rule_context(Settings(), None, analyses.reach())
    import adopter.analysis.incremental  # noqa: F401  (the server's warm-up)

    freeze_long_lived()
    report["rss_rules_mb"] = rss_mb()
    corpus = sorted(modeling_files(), key=lambda f: len(f.text), reverse=True)[: args.count]
    folder = Path("/nonexistent-adopter-bench")  # paths only name the documents; nothing is read from disk
    if not args.no_tracemalloc:
        tracemalloc.start(8)
        before = tracemalloc.take_snapshot()
    report["pymalloc_before_mb"] = pymalloc_mb()
    docs = []
    for f in corpus:
        doc = analyses.open((folder / f.name).as_uri(), "python", f.text, 1)
        doc.snapshot = analyses.executor.submit(analyses.compute, doc).result()  # on the analysis thread
        docs.append(doc)
    gc.collect()
    report["rss_20_open_mb"] = rss_mb()
    report["pymalloc_20_open_mb"] = pymalloc_mb()
    report["bytes_of_text_mb"] = sum(len(d.text) for d in docs) / 2**20
    if not args.no_tracemalloc:
        after = tracemalloc.take_snapshot()
        stats = after.compare_to(before, "filename")
        report["python_allocated_mb"] = sum(s.size_diff for s in stats) / 2**20
        groups: dict[str, float] = {}
        for s in stats:
            name = s.traceback[0].filename
            key = name.split("site-packages/")[-1].split("/adopter/")[-1]
            groups[key] = groups.get(key, 0) + s.size_diff / 2**20
        report["python_by_file_mb"] = {k: round(v, 2) for k, v in
                                       sorted(groups.items(), key=lambda kv: -kv[1])[:25]}
        tracemalloc.stop()
    # Per-part sizes of the Python objects (shared objects are counted once, in the first part named).
    seen: set[int] = set()
    parts: dict[str, int] = {}
    for part, of in (
        ("texts (str)", lambda d: d.text),
        ("line index", lambda d: d.lines),
        ("utf-8 bytes", lambda d: d.model._analysis._data if d.model and d.model._analysis else None),
        ("unit cache (per-class results)", lambda d: d.model._analysis._analyser.cache if d.model and d.model._analysis else None),
        ("module file + findings", lambda d: d.snapshot.analysed if d.snapshot else None),
        ("matcher cache", lambda d: d.model.matcher._cache if d.model else None),
    ):
        parts[part] = sum(deep_size(of(d), seen) for d in docs)
    report["python_parts_mb"] = {k: round(v / 2**20, 2) for k, v in parts.items()}
    del seen
    report["session_cache_entries"] = len(context.session._cache)
    report["jedi_loaded"] = "jedi" in sys.modules
    # What each part holds: drop them in turn and measure the allocator's blocks.
    for d in docs:
        d.snapshot = None
    context.session.forget()
    gc.collect()
    report["pymalloc_without_snapshots_mb"] = pymalloc_mb()
    report["trees_held"] = sum(1 for d in docs if d.model is not None and not getattr(d.model, "released", False))
    for d in docs:
        d.model = None
    gc.collect()
    report["pymalloc_without_analysis_state_mb"] = pymalloc_mb()
    for d in docs:
        d.text, d.lines = "", LineStarts("")
    gc.collect()
    report["pymalloc_without_texts_mb"] = pymalloc_mb()
    # The re-parse a dropped document pays: a full parse of the largest file.
    from adopter.analysis.parse.source import new_parser

    data = corpus[0].text.encode()
    parser_ = new_parser()
    times = []
    for _ in range(5):
        started = time.process_time()
        parser_.parse(data)
        times.append((time.process_time() - started) * 1000)
    report["full_parse_largest_ms_cpu"] = round(statistics.median(times), 1)
    # An edit's re-parse and re-analysis, with the trees kept and after a release (median of 9 edits: a
    # character typed at the end of a line in the middle of the file, then deleted).
    from adopter.analysis.incremental import DocumentAnalysis

    text = corpus[0].text
    line = text.count("\n", 0, len(text) // 2)
    col = len(text.split("\n")[line])
    for mode in ("kept", "released"):
        doc = DocumentAnalysis(text, None)
        doc.result()
        costs = []
        for i in range(18):
            if mode == "released" and hasattr(doc, "release"):
                doc.release()
            started = time.process_time()
            doc.edit((line, col), (line, col), "x") if i % 2 == 0 else doc.edit((line, col), (line, col + 1), "")
            doc.result()
            costs.append((time.process_time() - started) * 1000)
        report[f"edit_largest_{mode}_ms_cpu"] = round(statistics.median(costs), 1)
    report["largest"] = f"{corpus[0].name} ({len(data) // 1024} KB)"
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
