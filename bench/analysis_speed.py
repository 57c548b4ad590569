"""Benchmark of the static analysis over the 202 `modeling_<m>.py` files of transformers 4.35.0.

Per file: parse + analyse (`adopter.analysis.analyse`, the whole pipeline), on one core. Reports the
median, p95 and max per file and the total, as wall time and as CPU time of this process (the CPU
figure is the one to trust on a shared machine), the split between tree-sitter parsing and the
analysis proper, the slowest files, and the incremental case the language server sees: one edit
inside one class, then `DocumentAnalysis.result()`.

Usage: .venv/bin/python bench/analysis_speed.py [--repeat N] [--files N] [--core K] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path


def _stats(xs: list[float]) -> dict[str, float]:
    ordered = sorted(xs)
    return {
        "median_ms": statistics.median(ordered) * 1e3,
        "p95_ms": ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))] * 1e3,
        "max_ms": ordered[-1] * 1e3,
        "total_s": sum(ordered),
    }


def _best(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Best-of-`repeat` (wall, cpu) seconds of `fn()`: the least disturbed run on a busy machine."""
    wall, cpu = float("inf"), float("inf")
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall = min(wall, time.perf_counter() - w0)
        cpu = min(cpu, time.process_time() - c0)
    return wall, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="runs per file, best kept (default 3)")
    parser.add_argument("--files", type=int, default=0, help="analyse only the first N files (0: all)")
    parser.add_argument("--core", type=int, default=0, help="CPU core to pin to (default 0)")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON")
    args = parser.parse_args()

    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {args.core})

    from adopter.analysis import ModuleResolver, analyse
    from adopter.analysis.analyser import Analyser
    from adopter.analysis.incremental import DocumentAnalysis
    from adopter.analysis.parse.source import new_parser
    from adopter.corpus import modeling_files, wheel_path

    archive = wheel_path()
    if archive is None:
        print("transformers wheel not cached: run scripts/fetch-corpus.sh", file=sys.stderr)
        return 2
    resolver = ModuleResolver.for_archive(str(archive))
    files = list(modeling_files())
    if args.files:
        files = files[: args.files]
    # Warm-up: imports, the tree-sitter language, and the resolver's cache of the wheel's base files
    # (what a language server has after its first file).
    for f in files[:3]:
        analyse(f.text, f.member, resolver=resolver)

    wall: list[float] = []
    cpu: list[float] = []
    parse_cpu: list[float] = []
    analysis_cpu: list[float] = []
    problems = 0
    for f in files:
        data = f.text.encode("utf-8")
        w, c = _best(lambda f=f: analyse(f.text, f.member, resolver=resolver), args.repeat)
        wall.append(w)
        cpu.append(c)
        parser_ = new_parser()
        _, pc = _best(lambda p=parser_, d=data: p.parse(d), args.repeat)
        tree = parser_.parse(data)
        _, ac = _best(lambda d=data, t=tree, m=f.member: Analyser(resolver).run(d, t, m), args.repeat)
        parse_cpu.append(pc)
        analysis_cpu.append(ac)
        mf = analyse(f.text, f.member, resolver=resolver)
        problems += sum(p.code == "internal-error" for p in mf.problems)

    # Incremental: edit one statement inside one class of BERT, then ask for the result.
    bert = next(f for f in files if f.name == "modeling_bert.py") if any(
        f.name == "modeling_bert.py" for f in files
    ) else files[0]
    doc = DocumentAnalysis(bert.text, bert.member, resolver=resolver)
    doc.result()
    anchor = bert.text.index("\n", len(bert.text) // 2)
    line = bert.text[:anchor].count("\n")
    col = anchor - (bert.text.rfind("\n", 0, anchor) + 1)
    edits: list[float] = []
    for k in range(20):
        w0 = time.process_time()
        if k % 2 == 0:
            doc.edit((line, col), (line, col), " ")  # type a space at the end of a line ...
        else:
            doc.edit((line, col), (line, col + 1), "")  # ... and delete it again
        doc.result()
        edits.append(time.process_time() - w0)

    slowest = sorted(zip(cpu, (f.name for f in files)), reverse=True)[:5]
    report = {
        "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cores; load {os.getloadavg()[0]:.1f}",
        "python": platform.python_version(),
        "files": len(files),
        "repeat": args.repeat,
        "wall": _stats(wall),
        "cpu": _stats(cpu),
        "parse_cpu": _stats(parse_cpu),
        "analysis_cpu": _stats(analysis_cpu),
        "incremental_edit_cpu": _stats(edits),
        "slowest_cpu_ms": [(name, round(t * 1e3, 1)) for t, name in slowest],
        "internal_errors": problems,
    }
    print(f"{report['files']} files, best of {args.repeat}, one core ({report['machine']})")
    from adopter import _native

    print(f"analysis modules: {'native (mypyc)' if _native.state['active'] else 'pure Python'} "
          f"({_native.state['reason']})")
    for key in ("wall", "cpu", "parse_cpu", "analysis_cpu", "incremental_edit_cpu"):
        s = report[key]
        assert isinstance(s, dict)
        print(f"  {key:22} median {s['median_ms']:6.1f} ms  p95 {s['p95_ms']:6.1f} ms  max {s['max_ms']:6.1f} ms"
              f"  total {s['total_s']:6.2f} s")
    print("  slowest (cpu):", ", ".join(f"{n} {t} ms" for n, t in report["slowest_cpu_ms"]))  # type: ignore[attr-defined]
    print("  internal errors:", problems)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
