"""Benchmark the WHAM search against its baselines on the model zoo; prints a Markdown report.

Usage: python bench/wham.py [--models bert-base,...] [--budget 150] [--skip-gp] [--out FILE]
Per model: best objective and evaluations / wall time to reach it for every strategy at equal budget;
WHAM's gap to the exhaustive optimum of the reduced grid; WHAM vs TPUv2-like and NVDLA-like at equal
area; and GPT-2 XL on a 32-stage pipeline vs TPUv2-like.
"""

from __future__ import annotations

import argparse
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


def run(work, strategy: str, budget: int, area: float, tdp: float, space: DesignSpace | None = None,
        seed: int = 0) -> StrategyResult:
    ev = Evaluator(work, "throughput", Constraints(area, tdp))
    return run_strategy(make_strategy(strategy), ev, space or DesignSpace(), budget=budget, seed=seed)


def bench_model(name: str, budget: int, strategies: list[str], tdp: float, batch: int | None = None) -> list[str]:
    b, s, _ = ZOO_MODELS[name]
    b = batch or b
    t0 = time.perf_counter()
    work = load_workload(WorkloadSpec(name, b, s))
    trace_s = time.perf_counter() - t0
    area_cap = 606.7
    lines = [f"### {name} (batch {b}, seq {s}: {work.flops / 1e12:.2f} TFLOP/step, {work.op_count()} fused ops, "
             f"{len(work.blocks)} unique blocks; graph load {trace_s:.1f} s)", "",
             "| strategy | best samples/s | evals to best | s to best | evals used | s total | WHAM evals to reach it |",
             "|---|---|---|---|---|---|---|"]
    results: dict[str, StrategyResult] = {}
    for strat in ["wham", *strategies]:
        results[strat] = run(work, strat, budget, area_cap, tdp)
    wham = results["wham"]
    for strat, r in results.items():
        best = r.best.objective if r.best else float("nan")
        reach = evals_to_reach(wham, best) if r.best and strat != "wham" else None
        ratio = f"{reach} ({r.evals_to_best / reach:.1f}× fewer)" if reach else ("—" if strat == "wham" else "never")
        lines.append(f"| {strat} | {best:.4g} | {r.evals_to_best} | {r.seconds_to_best:.2f} | {r.evaluations} | "
                     f"{r.seconds:.2f} | {ratio} |")
    # Reduced grid: exhaustive optimum, WHAM on the same grid and on the full grid.
    reduced = DesignSpace().reduced()
    exh = run(work, "exhaustive", 10**6, area_cap, tdp)
    wham_red = run(work, "wham", budget, area_cap, tdp, space=reduced)
    opt = exh.best.objective if exh.best else float("nan")
    gap_red = (opt - wham_red.best.objective) / opt * 100 if wham_red.best else float("nan")
    gap_full = (opt - wham.best.objective) / opt * 100 if wham.best else float("nan")
    lines += ["", f"Exhaustive on the reduced grid: {exh.evaluations} feasible designs in {exh.seconds:.1f} s, optimum "
              f"{opt:.4g} samples/s ({exh.best.design.label() if exh.best else '-'}). WHAM on the reduced grid: "
              f"{wham_red.best.objective:.4g} after {wham_red.evaluations} evaluations (gap {gap_red:+.2f} %); WHAM on "
              f"the full grid: gap {gap_full:+.2f} % (negative = better than the reduced-grid optimum)."]
    # Equal area against the references.
    for ref_name, ref in (("TPUv2-like", tpuv2_like()), ("NVDLA-like", nvdla_like())):
        area = area_mm2(ref)
        ref_ev = Evaluator(work, "throughput", Constraints(area, 1e9)).evaluate(ref)
        r = run(work, "wham", budget, area, 1e9)
        gain = (r.best.objective / ref_ev.throughput - 1) * 100 if r.best else float("nan")
        lines.append(f"At {ref_name}'s area ({area:.1f} mm²): {ref_name} {ref_ev.throughput:.4g} samples/s "
                     f"({tdp_w(ref):.0f} W), WHAM {r.best.objective if r.best else float('nan'):.4g} "
                     f"({r.best.design.label() if r.best else '-'}, {r.best.tdp_w if r.best else 0:.0f} W): "
                     f"{gain:+.1f} %.")
    lines.append("")
    return lines


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
    lines = [f"Machine: {platform.machine()}, {platform.processor() or 'cpu'}, Python {platform.python_version()}; "
             f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC. Budget {args.budget} designs per strategy, area ≤ "
             f"606.7 mm², TDP ≤ {args.tdp_w:g} W, seed 0.", ""]
    batches = {k: int(v) for k, v in (kv.split("=") for kv in args.batch.split(",") if kv)}
    if not args.no_timing:  # BERT-large timing target (graph from the cache)
        work = load_workload(WorkloadSpec("bert-large", *ZOO_MODELS["bert-large"][:2]))
        t0 = time.perf_counter()
        r = run(work, "wham", args.budget, 606.7, args.tdp_w)
        lines.append(f"BERT-large single-device WHAM search: {time.perf_counter() - t0:.2f} s, {r.evaluations} "
                     f"evaluations (graph cached).")
        lines.append("")
    for name in [m for m in args.models.split(",") if m]:
        block = bench_model(name, args.budget, strategies, args.tdp_w, batches.get(name))
        lines += block
        print("\n".join(block), file=sys.stderr, flush=True)
    if not args.no_pipeline:
        lines += bench_pipeline(args.budget)
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
