"""Benchmark one common design for a set of zoo models (WHAM's "accelerator for a set of DNNs").

Usage: nice -n 19 python bench/wham_set.py [--models bert-base,gpt2,...] [--budget 200] [--skip-gp] [--out FILE]

Prints Markdown: (1) the default `adopter wham --model <set>` run, end to end, with its wall time (fresh
graph cache and warm); (2) WHAM against the black-box baselines on the same set objective (geometric
mean of throughputs) at equal budgets; (3) the paper's comparison: the common design found within each
reference design's area (TDP unlimited, as in bench/wham.py) against that reference, per model and as a
geometric mean; (4) the `worst` aggregate.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from adopter.wham import SearchRequest, search
from adopter.wham.hardware import REFERENCE_DESIGNS, area_mm2
from adopter.wham.report import SearchReport

SET = "bert-base,gpt2,t5-base,resnet50,vit-b16,llama-1b"
BASELINES = ("random", "nsga2", "tpe", "gp")


def _timed(req: SearchRequest) -> tuple[SearchReport, float]:
    t0 = time.perf_counter()
    rep = search(req)
    return rep, time.perf_counter() - t0


def _check(rep: SearchReport) -> SearchReport:
    if rep.error:
        raise SystemExit(f"search failed: {rep.error}")
    return rep


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=SET)
    ap.add_argument("--budget", type=int, default=200)
    ap.add_argument("--skip-gp", action="store_true", help="leave out the (slow) GP baseline")
    ap.add_argument("--skip-fresh", action="store_true", help="do not time a run with an empty graph cache")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    n = len(args.models.split(","))
    lines = [f"Machine: {platform.machine()}, Python {platform.python_version()}, {os.cpu_count()} CPUs, load "
             f"average {' '.join(f'{x:.1f}' for x in os.getloadavg())} at the start; "
             f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC. Set of {n} models: {args.models} (zoo sizes). "
             f"Budget {args.budget} designs per strategy, seed 0, process executor with 2 workers.", ""]

    # (1) The default command, end to end.
    base = SearchRequest(model=args.models, budget=args.budget)
    if not args.skip_fresh:
        with tempfile.TemporaryDirectory() as tmp:
            old = os.environ.get("ADOPTER_CACHE_DIR")
            os.environ["ADOPTER_CACHE_DIR"] = tmp
            try:
                rep, fresh = _timed(base)
            finally:
                if old is None:
                    del os.environ["ADOPTER_CACHE_DIR"]
                else:
                    os.environ["ADOPTER_CACHE_DIR"] = old
            _check(rep)
        lines.append(f"- `adopter wham --model {args.models}` with an empty graph cache (six traces included): "
                     f"**{fresh:.1f} s** (target ≤ 60 s).")
    rep, warm = _timed(base)
    _check(rep)
    _timed(base)  # fills the cache when --skip-fresh
    r = rep.result
    assert r is not None and rep.best is not None
    lines.append(f"- the same with the graphs cached: {warm:.1f} s in all; the common search itself "
                 f"{r.seconds:.2f} s, {r.evaluations} designs evaluated (each on {n} models), "
                 f"{r.bounded} bounded analytically; common design {rep.best.design.label()}, geometric mean "
                 f"{rep.best.objective:.6g} samples/s.")
    lines += ["", "| model | batch × seq | common design | own best | common / own |"
              + "".join(f" {ref.name} |" for ref in rep.references), "|---|---|---|---|---|"
              + "---|" * len(rep.references)]
    for m in rep.models:
        own = m["own_best"]["throughput"]
        lines.append(f"| {m['model']} | {m['batch']} × {m['seq']} | {m['common']['throughput']:.6g} | {own:.6g} | "
                     f"{m['common']['throughput'] / own:.1%} |"
                     + "".join(f" {m['references'][ref.name]['throughput']:.6g} |" for ref in rep.references))

    # (2) Baselines on the same set objective, equal budgets.
    compare = tuple(s for s in BASELINES if not (args.skip_gp and s == "gp"))
    rep2, _ = _timed(SearchRequest(model=args.models, budget=args.budget, compare=compare))
    _check(rep2)
    lines += ["", "| strategy | best geomean samples/s | evals to best | s to best | evals used | s total | "
              "designs bounded |", "|---|---|---|---|---|---|---|"]
    runs = [rep2.result, *rep2.comparisons]
    for run in runs:
        assert run is not None
        best = run.best.objective if run.best and run.best.objective is not None else float("nan")
        lines.append(f"| {run.strategy} | {best:.6g} | {run.evals_to_best} | {run.seconds_to_best:.2f} | "
                     f"{run.evaluations} | {run.seconds:.2f} | {run.bounded or '—'} |")

    # (3) Equal area against each reference design.
    lines += ["", "| reference | its area mm² | reference geomean samples/s | common design found within that "
              "area | its geomean | gain | per model (common / reference) |", "|---|---|---|---|---|---|---|"]
    for name, make in REFERENCE_DESIGNS.items():
        area = area_mm2(make())
        rep3 = _check(search(SearchRequest(model=args.models, budget=args.budget, area_mm2=round(area, 3) + 1e-3,
                                           tdp_w=1e4)))
        ref = next(x for x in rep3.references if x.name == name)
        assert rep3.best is not None
        per = ", ".join(f"{m['model']} ×{m['common']['throughput'] / m['references'][name]['throughput']:.2f}"
                        for m in rep3.models)
        lines.append(f"| {name} | {area:.1f} | {ref.evaluation.throughput:.6g} | {rep3.best.design.label()} | "
                     f"{rep3.best.throughput:.6g} | **×{rep3.best.throughput / ref.evaluation.throughput:.2f}** | "
                     f"{per} |")

    # (4) The worst-model aggregate.
    rep4 = _check(search(SearchRequest(model=args.models, budget=args.budget, aggregate="worst")))
    assert rep4.best is not None and rep4.best.objective is not None
    lines += ["", f"- `--aggregate worst`: {rep4.best.design.label()}; worst model at "
              f"{rep4.best.objective:.1%} of its own best."]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
