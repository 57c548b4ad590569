"""Benchmark the WHAM search against its baselines on the model zoo; prints a Markdown report.

Usage: nice -n 19 python bench/wham.py [--models bert-base,...] [--budget 150] [--skip-gp] [--out FILE]
Per model: best objective and evaluations / wall time to reach it for every strategy at equal budget;
how many evaluations (and seconds, its analytical bound included) WHAM needs to reach the best baseline's
final quality; WHAM's gap to the exhaustive optimum of the reduced grid; WHAM vs TPUv2-like and NVDLA-like
at equal area; and GPT-2 XL on a 32-stage pipeline vs TPUv2-like.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from adopter.wham import SearchRequest, search
from adopter.wham.engine import StrategyResult, run_strategy
from adopter.wham.evaluate import Constraints, Evaluator
from adopter.wham.hardware import DesignSpace, area_mm2, nvdla_like, tdp_w, tpuv2_like
from adopter.wham.models import ZOO_MODELS, WorkloadSpec, load_workload
from adopter.wham.strategies import make_strategy

ZOO = ["bert-base", "bert-large", "gpt2", "gpt2-xl", "t5-base", "resnet50", "vit-b16", "llama-1b"]
BASELINES = ["random", "nsga2", "tpe", "gp"]


def evals_to_reach(result: StrategyResult, target: float) -> int | None:
    """First evaluation count at which `result` reached `target` (None if never)."""
    for n, _, best in result.trace:
        if best is not None and best >= target * (1 - 1e-9):
            return n
    return None


def seconds_to_reach(result: StrategyResult, target: float) -> float | None:
    """Wall seconds (from the strategy's start, so WHAM's bound included) until `result` reached `target`."""
    for _, sec, best in result.trace:
        if best is not None and best >= target * (1 - 1e-9):
            return sec
    return None


def run(work, strategy: str, budget: int, area: float, tdp: float, space: DesignSpace | None = None,
        seed: int = 0) -> StrategyResult:
    ev = Evaluator(work, "throughput", Constraints(area, tdp))
    return run_strategy(make_strategy(strategy), ev, space or DesignSpace(), budget=budget, seed=seed)


def bound_seconds(work, area: float, tdp: float) -> float:
    """Wall time of the analytical bound over the full grid (what WHAM computes before its first evaluation)."""
    t0 = time.perf_counter()
    Evaluator(work, "throughput", Constraints(area, tdp)).bounds(DesignSpace())
    return time.perf_counter() - t0


def bench_model(name: str, budget: int, strategies: list[str], tdp: float, batch: int | None = None) -> dict:
    """Every figure for one zoo model, as rows of the report's tables."""
    b, s, _ = ZOO_MODELS[name]
    b = batch or b
    label = name if batch is None else f"{name} (batch {b})"
    t0 = time.perf_counter()
    work = load_workload(WorkloadSpec(name, b, s))
    trace_s = time.perf_counter() - t0
    area_cap = 606.7
    out: dict = {"model": label, "header": f"{label}: {work.flops / 1e12:.2f} TFLOP/step, {work.op_count()} fused "
                 f"ops, {len(work.blocks)} unique blocks (graph load {trace_s:.1f} s)"}
    results: dict[str, StrategyResult] = {}
    for strat in ["wham", *strategies]:
        results[strat] = run(work, strat, budget, area_cap, tdp)
    wham = results["wham"]
    out["bound_s"] = bound_seconds(work, area_cap, tdp)
    out["strategies"] = []
    for strat, r in results.items():
        best = r.best.objective if r.best else float("nan")
        out["strategies"].append(f"| {label} | {strat} | {best:.5g} | {r.evals_to_best} | {r.seconds_to_best:.2f} | "
                                 f"{r.evaluations} | {r.seconds:.2f} | {r.bounded or '—'} |")
    # The target: evaluations WHAM needs to reach the best baseline's final quality, vs that baseline's.
    finished = [(strat, r) for strat, r in results.items() if strat != "wham" and r.best is not None]
    if finished:
        strat, r = max(finished, key=lambda kv: (kv[1].best.objective, -kv[1].evals_to_best))
        target = r.best.objective
        reach, reach_s = evals_to_reach(wham, target), seconds_to_reach(wham, target)
        ratio = r.evals_to_best / reach if reach else 0.0
        out["target"] = (f"| {label} | {strat}: {target:.5g} after {r.evals_to_best} evaluations, "
                         f"{r.seconds_to_best:.2f} s | " + (f"{reach} evaluation{'s' if reach != 1 else ''}, {reach_s:.2f} s" if reach else "never")
                         + f" | **{ratio:.0f}×** {'met' if ratio >= 30 else 'not met'} | "
                         f"{wham.bounded} designs, {out['bound_s']:.2f} s |")
        out["ratio"] = ratio
    # Reduced grid: exhaustive optimum, WHAM on the same grid and on the full grid.
    reduced = DesignSpace().reduced()
    exh = run(work, "exhaustive", 10**6, area_cap, tdp)
    wham_red = run(work, "wham", budget, area_cap, tdp, space=reduced)
    opt = exh.best.objective if exh.best else float("nan")
    gap_red = (opt - wham_red.best.objective) / opt * 100 if wham_red.best else float("nan")
    gap_full = (opt - wham.best.objective) / opt * 100 if wham.best else float("nan")
    out["exhaustive"] = (f"| {label} | {opt:.5g} ({exh.best.design.label() if exh.best else '-'}) | {exh.evaluations} "
                         f"in {exh.seconds:.1f} s | {wham_red.best.objective:.5g} after {wham_red.evals_to_best} of "
                         f"{wham_red.evaluations} (gap {gap_red:.2f} %) | {gap_full:+.2f} % |")
    # Equal area against the references.
    cells = []
    for ref_name, ref in (("TPUv2-like", tpuv2_like()), ("NVDLA-like", nvdla_like())):
        area = area_mm2(ref)
        ref_ev = Evaluator(work, "throughput", Constraints(area, 1e9)).evaluate(ref)
        r = run(work, "wham", budget, area, 1e9)
        gain = (r.best.objective / ref_ev.throughput - 1) * 100 if r.best else float("nan")
        cells.append(f"{ref_name} {ref_ev.throughput:.4g} ({tdp_w(ref):.0f} W), WHAM "
                     f"{r.best.objective if r.best else float('nan'):.4g} ({r.best.design.label() if r.best else '-'}, "
                     f"{r.best.tdp_w if r.best else 0:.0f} W): **{gain:+.1f} %**")
    out["area"] = f"| {label} | " + " | ".join(cells) + " |"
    return out


def bench_pipeline(budget: int) -> list[str]:
    area = area_mm2(tpuv2_like())
    lines = ["### GPT-2 XL, pipeline depth 32 (batch 32, 32 micro-batches) at TPUv2-like's area", ""]
    for objective in ("throughput", "perf-per-tdp"):
        t0 = time.perf_counter()
        rep = search(SearchRequest(model="gpt2-xl", batch=32, pipeline=32, microbatches=32, objective=objective,
                                   area_mm2=area, tdp_w=1e4, budget=budget, executor="process", workers=2))
        wall = time.perf_counter() - t0
        if rep.error or not rep.pipeline or not rep.pipeline["global"]:
            lines.append(f"- {objective}: failed: {rep.error}")
            continue
        g, ref = rep.pipeline["global"], rep.pipeline["reference"]
        lines.append(f"- objective {objective}: {g['label']}: {g['throughput']:.4g} samples/s, Perf/TDP "
                     f"{g['perf_per_tdp']:.4g}; TPUv2-like {ref['throughput']:.4g} samples/s, Perf/TDP "
                     f"{ref['perf_per_tdp']:.4g} → throughput ×{g['throughput'] / ref['throughput']:.2f}, "
                     f"Perf/TDP ×{g['perf_per_tdp'] / ref['perf_per_tdp']:.2f}; heterogeneous bound "
                     f"{rep.pipeline['heterogeneous']['throughput']:.4g}; {rep.pipeline['distinct_stage_searches']} "
                     f"distinct stage searches, {rep.pipeline['evaluations']} evaluations, wall {wall:.1f} s "
                     f"(graph cached)")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(ZOO))
    ap.add_argument("--budget", type=int, default=150)
    ap.add_argument("--skip-gp", action="store_true", help="leave out the (slow) GP baseline")
    ap.add_argument("--no-pipeline", action="store_true")
    ap.add_argument("--tdp-w", type=float, default=400.0)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--batch", default="", help="per-model batch overrides, e.g. gpt2-xl=1,llama-1b=2")
    ap.add_argument("--no-timing", action="store_true", help="skip the BERT-large timing run")
    args = ap.parse_args()
    strategies = [s for s in BASELINES if not (args.skip_gp and s == "gp")]
    lines = [f"Machine: {platform.machine()}, {platform.processor() or 'cpu'}, Python {platform.python_version()}, "
             f"{os.cpu_count()} CPUs, load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} at the start; "
             f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC. Budget {args.budget} designs per strategy, area ≤ "
             f"606.7 mm², TDP ≤ {args.tdp_w:g} W, seed 0.", ""]
    batches = {k: int(v) for k, v in (kv.split("=") for kv in args.batch.split(",") if kv)}
    if not args.no_timing:  # BERT-large timing target (graph from the cache)
        work = load_workload(WorkloadSpec("bert-large", *ZOO_MODELS["bert-large"][:2]))
        t0 = time.perf_counter()
        r = run(work, "wham", 200, 606.7, args.tdp_w)
        lines.append(f"BERT-large single-device WHAM search, budget 200: {time.perf_counter() - t0:.2f} s, "
                     f"{r.evaluations} evaluations, {r.bounded} designs bounded (graph cached).")
        lines.append("")
    models = []
    for name in [m for m in args.models.split(",") if m]:
        m = bench_model(name, args.budget, strategies, args.tdp_w, batches.get(name))
        models.append(m)
        print(f"{m['header']}\n{m.get('target', '')}", file=sys.stderr, flush=True)
    lines += ["Workloads: " + "; ".join(m["header"] for m in models) + ".", "",
              "| model | strategy | best samples/s | evals to best | s to best | evals used | s total | designs bounded |",
              "|---|---|---|---|---|---|---|---|", *(row for m in models for row in m["strategies"]), "",
              "| model | best baseline: final best, when found | WHAM reaches it after | ratio (target ≥ 30×) | "
              "WHAM's bound |", "|---|---|---|---|---|", *(m["target"] for m in models if "target" in m), "",
              "| model | exhaustive optimum, reduced grid | designs, time | WHAM on the reduced grid | WHAM on the "
              "full grid vs that optimum |", "|---|---|---|---|---|", *(m["exhaustive"] for m in models), "",
              "| model | at TPUv2-like's area | at NVDLA-like's area |", "|---|---|---|", *(m["area"] for m in models),
              ""]
    if not args.no_pipeline:
        lines += bench_pipeline(args.budget)
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
