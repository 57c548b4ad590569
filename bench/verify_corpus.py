"""Run `adopter verify` on every fix `adopter fix` writes in a corpus, wherever the class constructs.

    python bench/verify_corpus.py --set transformers [--limit N] [--repeats 3] [--out bench/out/verify.json]
    python bench/verify_corpus.py --files a.py b.py --pythonpath SITE   # any files, their imports on SITE

The transformers set is the 4.35.0 modeling files as installed in `.cache/tf435` (scripts/fetch-corpus.sh),
imported as part of their package (relative imports work). Each file is one `adopter verify --format json`
subprocess (its own worker subprocess imports the model), with a timeout. Prints, per rule: fixes seen,
classes built, equivalent, not equivalent, and the median CPU speedup of forward+backward (with the
range over classes), then the totals. Timings are of a shared machine: read them with its load (printed).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TF435 = ROOT / ".cache" / "tf435"


def transformers_files(limit: int | None) -> list[Path]:
    sys.path.insert(0, str(ROOT / "server"))
    from adopter.corpus import modeling_files

    files = [TF435 / f.member for f in modeling_files("4.35.0")]
    missing = [f for f in files if not f.is_file()]
    if missing:
        sys.exit(f"{len(missing)} modeling files are not installed in {TF435}: run scripts/fetch-corpus.sh")
    return files[:limit] if limit else files


def verify_file(path: Path, pythonpath: str, repeats: int, timeout: float) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "server"), pythonpath]))
    cmd = [sys.executable, "-m", "adopter", "verify", str(path), "--format", "json", "--repeats", str(repeats),
           "--timeout", str(timeout)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout + 120)
    except subprocess.TimeoutExpired:
        return {"path": str(path), "error": "timed out", "rows": []}
    try:
        out: dict[str, Any] = json.loads(done.stdout) if done.stdout.strip() else {"rows": []}
    except json.JSONDecodeError:
        out = {"rows": []}
    out["exit"] = done.returncode
    if done.returncode == 2 and not out.get("rows"):
        out["error"] = done.stderr.strip().splitlines()[-1][:300] if done.stderr.strip() else "exit 2"
    out["path"] = str(path)
    return out


def summarise(results: list[dict[str, Any]]) -> dict[str, Any]:
    per_rule: dict[str, dict[str, Any]] = defaultdict(lambda: {"fixes": 0, "built": 0, "equivalent": 0,
                                                                 "not_equivalent": [], "speedups": []})
    for res in results:
        for row in res.get("rows", []):
            tally = per_rule[row["rule"]]
            tally["fixes"] += 1
            if "not_built" in row:
                continue
            tally["built"] += 1
            if row.get("equivalent"):
                tally["equivalent"] += 1
            else:
                tally["not_equivalent"].append(f"{res['path']}:{row['line']} {row['class']}: {row.get('error') or row.get('worst')}")
            if "speedup" in row:
                tally["speedups"].append(row["speedup"])
    return dict(per_rule)


def print_table(per_rule: dict[str, Any], results: list[dict[str, Any]]) -> None:
    print(f"{'rule':34} {'fixes':>5} {'built':>5} {'equiv':>5} {'not':>4} {'speedup (median, min-max)':>28}")
    totals = [0, 0, 0, 0]
    for rule in sorted(per_rule):
        t = per_rule[rule]
        sp = t["speedups"]
        speed = f"{statistics.median(sp):.2f}x ({min(sp):.2f}-{max(sp):.2f})" if sp else "-"
        print(f"{rule:34} {t['fixes']:>5} {t['built']:>5} {t['equivalent']:>5} {len(t['not_equivalent']):>4} {speed:>28}")
        for i, v in enumerate((t["fixes"], t["built"], t["equivalent"], len(t["not_equivalent"]))):
            totals[i] += v
    print(f"{'total':34} {totals[0]:>5} {totals[1]:>5} {totals[2]:>5} {totals[3]:>4}")
    files_with_fixes = sum(1 for r in results if r.get("rows"))
    failed = [r for r in results if r.get("error")]
    print(f"files: {len(results)}, with fixes run: {files_with_fixes}, whole-file failures: {len(failed)}")
    for r in failed[:15]:
        print(f"  {r['path']}: {r['error']}")
    for rule in sorted(per_rule):
        for line in per_rule[rule]["not_equivalent"][:10]:
            print(f"  NOT EQUIVALENT {rule}: {line}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", choices=("transformers",), help="a corpus of this repository")
    ap.add_argument("--files", nargs="*", default=[], help="other files (their imports on --pythonpath)")
    ap.add_argument("--pythonpath", default="", help="folders the files' imports are in")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--repeats", type=int, default=3, help="timed pairs per fix")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per file")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "verify_corpus.json")
    args = ap.parse_args()
    files = transformers_files(args.limit) if args.set else [Path(f) for f in args.files]
    pythonpath = os.pathsep.join(p for p in (str(TF435) if args.set else "", args.pythonpath) if p)
    start = time.time()
    results = []
    for i, path in enumerate(files, 1):
        results.append(verify_file(path, pythonpath, args.repeats, args.timeout))
        rows = results[-1].get("rows", [])
        print(f"[{i}/{len(files)}] {path.name}: {len(rows)} rows, exit {results[-1].get('exit')}", file=sys.stderr)
    per_rule = summarise(results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"results": results, "per_rule": per_rule}, indent=1), encoding="utf-8")
    print(f"# {len(files)} files in {time.time() - start:.0f} s; load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print_table(per_rule, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
