"""The recall oracle over a fresh slice of distributions nobody has opened (issue 20): a held-out measure.

`run` installs `bench/oracle/fresh.py`'s distributions into an oracle folder of their own (`ADOPTER_ORACLE_ROOT`,
default `.cache/fresh`: never the shared `.cache/oracle`) and runs the oracle's hosts over them, unchanged.
`report` scores `adopter check` against them with the oracle's own report machinery and prints aggregate figures
only: classes attempted, constructed and traced, oracle sites, static recall and precision overall and by family,
and per distribution only counts. No site, file, line, form or miss is printed; the full report (misses included)
is written inside the fresh root for a later release as a dev census, and nobody reads it before then.

    python bench/oracle_fresh.py run [--max-classes 150] [--jobs 1] [--class-timeout 20]
    python bench/oracle_fresh.py report [--json OUT]      # OUT: the aggregate figures only
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(1, str(ROOT / "server"))

DEFAULT_ROOT = ROOT / ".cache" / "fresh"
SHARED_ROOT = ROOT / ".cache" / "oracle"
FULL_REPORT = "report-full.json"  # inside the root: misses and wrong findings, kept for a later release, unread


def oracle_root(given: str | None) -> Path:
    """The oracle folder this measurement uses; never the shared one (the dev oracle's, read by every helper)."""
    root = Path(given or os.environ.get("ADOPTER_ORACLE_ROOT") or DEFAULT_ROOT).resolve()
    if root == SHARED_ROOT.resolve():
        raise SystemExit(f"oracle_fresh: {root} is the shared oracle folder; name a folder of its own")
    return root


def _use(root: Path) -> None:
    """Point the oracle's modules at `root` (they read it when first imported)."""
    os.environ["ADOPTER_ORACLE_ROOT"] = str(root)
    os.environ.pop("ADOPTER_ORACLE_RESULTS", None)
    os.environ.pop("ADOPTER_ORACLE_HELDOUT", None)  # the held-out set stays excluded here: never downloaded


def run(root: Path, specs: tuple[str, ...], *, jobs: int, class_timeout: float, max_classes: int) -> None:
    """Run the oracle's installer and hosts over `specs` in `root`."""
    root.mkdir(parents=True, exist_ok=True)
    _use(root)
    from oracle import install
    from oracle import run as oracle_run

    assert install.CACHE == root and oracle_run.RESULTS == root / "results", "the oracle read another root"
    oracle_run.run(specs, jobs=jobs, class_timeout=class_timeout, max_classes=max_classes)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("run", "report"))
    parser.add_argument("--root", help="the oracle folder (default $ADOPTER_ORACLE_ROOT or .cache/fresh)")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--class-timeout", type=float, default=20.0)
    parser.add_argument("--max-classes", type=int, default=150)
    parser.add_argument("--json", type=Path, help="write the aggregate figures (no site, file or line) as JSON here")
    args = parser.parse_args()
    from oracle.fresh import specs

    root = oracle_root(args.root)
    if args.command == "run":
        run(root, specs(), jobs=args.jobs, class_timeout=args.class_timeout, max_classes=args.max_classes)
        return 0
    return report(root, args.json)


def report(root: Path, json_out: Path | None, names: list[str] | None = None) -> int:
    """Score the finished distributions of `names` (default: the fresh list), keep the full report in `root`,
    print (and write) the aggregates only."""
    _use(root)
    from oracle import stale
    from oracle.fresh import specs
    from oracle.report import load, score
    from oracle.run import RESULTS

    names = names if names is not None else [s.split("==")[0] for s in specs()]
    changed = stale.stale_folders(RESULTS) if RESULTS.is_dir() else {}
    dists = {k: v for k, v in (load(RESULTS) if RESULTS.is_dir() else {}).items() if k in names and k not in changed}
    table = score(dists)
    (root / FULL_REPORT).write_text(json.dumps(table, indent=1, default=sorted), encoding="utf-8")
    figures = aggregate(table, names, stale=len(changed))
    figures["module imports"] = imports_by_outcome(d.imports for d in dists.values())
    print_aggregate(figures)
    if json_out:
        json_out.write_text(json.dumps(figures, indent=1), encoding="utf-8")
    return 0


# The dev oracle's figures at the last stop (r6: /work/notes/s19/oracle_r6.md), printed beside the fresh slice's.
DEV_ORACLE_R6 = {"distributions with classes": 179, "classes attempted": 6174, "constructed": "57.2 %",
                 "traced": "35.3 %", "oracle sites": 752, "static recall": "93.2 % (701/752)",
                 "static precision": "98.0 % (543/554)"}
DIST_COUNTS = ("classes", "constructed", "traced", "sites", "found", "judged", "right")


def _pct(a: int, b: int) -> str:
    return f"{100 * a / b:.1f} %" if b else "-"


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson score interval of k successes in n, as fractions ((0, 1) when n is 0)."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def _install(how: str) -> str:
    """The installer's outcome as a category (its message can name files and modules: never passed on)."""
    if not how:
        return "not recorded"
    if how.startswith("failed"):
        return "failed"
    return "no-deps" if how.startswith("no-deps") else "with-deps"


def aggregate(table: dict[str, Any], names: list[str], *, stale: int = 0) -> dict[str, Any]:
    """The figures that may be printed: counts and fractions only, per family and per distribution; never a
    site, file, line, pattern, form, scope or message (the full table holds those, for a later release)."""
    fams = table["families"]
    sites = sum(int(v["sites"]) for v in fams.values())
    found = sum(int(v["found"]) for v in fams.values())
    judged = sum(int(v["judged"]) for v in fams.values())
    right = sum(int(v["right"]) for v in fams.values())
    classes = int(table["classes"])
    lo, hi = wilson(found, sites)
    per_dist: dict[str, dict[str, Any]] = {
        name: {"install": _install(str(d.get("how", ""))) if d.get("install") == "ok" else "failed",
               **{k: int(d.get(k, 0)) for k in DIST_COUNTS}}
        for name, d in sorted(table["dists"].items())}
    return {
        "distributions": {"chosen": len(names), "finished": len(table["dists"]), "stale, left out": stale,
                          "with classes attempted": sum(1 for d in per_dist.values() if d["classes"]),
                          "with oracle sites": sum(1 for d in per_dist.values() if d["sites"]),
                          "with a miss": sum(1 for d in per_dist.values() if d["found"] < d["sites"])},
        "classes": {"attempted": classes, "constructed": int(table["constructed"]), "traced": int(table["traced"]),
                    "with a backward": int(table["backward"]), "abstract": int(table.get("abstract", 0)),
                    "constructed %": _pct(int(table["constructed"]), classes),
                    "traced %": _pct(int(table["traced"]), classes)},
        "overall": {"oracle sites": sites, "found": found, "static recall": _pct(found, sites),
                    "recall 95 % interval": f"{100 * lo:.1f}-{100 * hi:.1f} %", "findings judged": judged,
                    "right": right, "static precision": _pct(right, judged),
                    "not judged": sum(int(v["unjudged"]) for v in fams.values())},
        "by family": {str(f): {k: int(v[k]) for k in ("sites", "found", "judged", "right", "unjudged")}
                      for f, v in fams.items()},
        "not traced, by stage": {str(k): int(n) for k, n in sorted(table.get("failures", {}).items())},
        "per distribution": per_dist,
        "not finished": [n for n in names if n not in table["dists"]],
        "dev oracle r6": DEV_ORACLE_R6,
    }


def imports_by_outcome(imports: Iterable[dict[str, str]]) -> dict[str, int]:
    """The distributions' module imports by outcome: "ok" or the exception's type (never the module or message)."""
    out: Counter[str] = Counter()
    for per_dist in imports:
        out.update("ok" if v == "ok" else str(v).split(":")[0].strip() for v in per_dist.values())
    return dict(out.most_common())


def print_aggregate(figures: dict[str, Any]) -> None:
    """The aggregate figures as plain text: counts by family and by distribution, never a site."""
    for key in ("distributions", "classes", "overall", "not traced, by stage", "module imports", "dev oracle r6"):
        if key in figures:
            print(f"{key}: " + ", ".join(f"{k} {v}" for k, v in figures[key].items()))
    print(f"{'family':>6} {'sites':>6} {'found':>6} {'recall':>8} {'judged':>7} {'right':>6} {'precision':>9}")
    for fam, v in figures["by family"].items():
        print(f"{fam:>6} {v['sites']:>6} {v['found']:>6} {_pct(v['found'], v['sites']):>8} {v['judged']:>7} "
              f"{v['right']:>6} {_pct(v['right'], v['judged']):>9}")
    print(f"{'distribution':<26} {'install':<10} " + " ".join(f"{k:>11}" for k in DIST_COUNTS))
    for name, d in figures["per distribution"].items():
        print(f"{name:<26} {d['install']:<10} " + " ".join(f"{d[k]:>11}" for k in DIST_COUNTS))
    if figures["not finished"]:
        print(f"not finished: {len(figures['not finished'])}: {', '.join(figures['not finished'])}")


if __name__ == "__main__":
    raise SystemExit(main())
