"""WHAM against the paper's baselines (ConfuciuX-style RL + GA, Spotlight-style domain-aware BO) and NSGA-II,
TPE and random, on the same cost model, grid and budget; prints a Markdown report.

Usage: nice -n 19 python bench/wham_baselines.py [--budget 200] [--strategies wham,confuciux,...]
                                                 [--single bert-base] [--pipe gpt2-xl] [--out FILE]

Rows: one device (the single model, throughput and Perf/TDP objectives), and pipelines of depth 8 and 32
(the pipe model, a design searched per stage; the report gives the replicated design the global step
picks and the heterogeneous bound where each stage runs its own). For each strategy: the best throughput
and Perf/TDP at the end (convergence), the evaluations and wall seconds to reach its own best, and the
whole run's seconds. Then the paper's comparisons: WHAM's wall time to reach the best baseline's final
quality against that baseline's, and WHAM's final throughput against ConfuciuX's.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from adopter.wham import SearchRequest, search
from adopter.wham.engine import StrategyResult, run_strategy
from adopter.wham.evaluate import Constraints, Evaluator
from adopter.wham.hardware import DesignSpace
from adopter.wham.models import WorkloadSpec, load_workload
from adopter.wham.strategies import make_strategy

STRATEGIES = ["wham", "confuciux", "spotlight", "nsga2", "tpe", "random"]


def seconds_to_reach(r: StrategyResult, target: float) -> float | None:
    for _, sec, best in r.trace:
        if best is not None and best >= target * (1 - 1e-9):
            return sec
    return None


def single(model: str, objective: str, strategies: list[str], budget: int) -> list[str]:
    work = load_workload(WorkloadSpec(model, 8, 512 if model.startswith("bert") else 1024))
    rows, results = [], {}
    for s in strategies:
        ev = Evaluator(work, objective, Constraints(606.7, 400.0), samples=work.batch)
        t0 = time.perf_counter()
        r = run_strategy(make_strategy(s), ev, DesignSpace(), budget=budget, seed=0)
        total = time.perf_counter() - t0
        results[s] = r
        b = r.best
        rows.append(f"| {s} | {b.throughput:.4g} | {b.perf_per_tdp:.4g} | {r.evals_to_best} | "
                    f"{r.seconds_to_best:.2f} | {r.evaluations} | {total:.2f} |" if b else f"| {s} | none | | | | |")
    out = [f"**{model}, one device, objective {objective}** (budget {budget})", "",
           "| strategy | samples/s | Perf/TDP | evals to best | s to best | evals | s total |",
           "|---|---|---|---|---|---|---|", *rows, ""]
    return out + _verdict(results) + [""]


def _verdict(results: dict[str, StrategyResult]) -> list[str]:
    w = results.get("wham")
    base = {k: v for k, v in results.items() if k != "wham" and v.best and v.best.objective}
    if not w or not w.best or not base:
        return []
    name, best = max(base.items(), key=lambda kv: kv[1].best.objective)  # type: ignore[union-attr]
    target = best.best.objective  # type: ignore[union-attr]
    t_w = seconds_to_reach(w, target)
    lines = [f"- best baseline: {name} ({target:.4g}); WHAM's final {w.best.objective:.4g} "
             f"(×{w.best.objective / target:.3f})."]
    if t_w is None:
        lines.append(f"- WHAM never reached {name}'s final quality.")
    else:
        lines.append(f"- wall time to {name}'s final quality: WHAM {t_w:.2f} s vs {name} {best.seconds_to_best:.2f} s "
                     f"(**×{best.seconds_to_best / max(t_w, 1e-9):.1f}** sooner; goal ≥ 10×).")
    c = results.get("confuciux")
    if c and c.best and c.best.objective:
        lines.append(f"- WHAM vs ConfuciuX final: **×{w.best.objective / c.best.objective:.3f}** "
                     "(goal ≥ 1.20 in throughput).")
    return lines


def pipeline(model: str, depth: int, objective: str, strategies: list[str], budget: int) -> list[str]:
    rows: list[str] = []
    data: dict[str, Any] = {}
    times: dict[str, tuple[float, float]] = {}
    for s in strategies:
        req = SearchRequest(model=model, batch=depth, pipeline=depth, microbatches=depth, objective=objective,
                            strategy=s, budget=budget, executor="serial")
        t0 = time.perf_counter()
        rep = search(req)
        total = time.perf_counter() - t0
        if rep.error or not rep.pipeline or not rep.pipeline.get("global"):
            rows.append(f"| {s} | failed: {rep.error} | | | | | | | |")
            continue
        p = rep.pipeline
        g, h = p["global"], p["heterogeneous"]
        # Stages with the same layers share one search, listed once per stage: count each search once.
        distinct = list({json.dumps(st, sort_keys=True): st for st in p["per_stage"]}.values())
        stage_s = sum(st["seconds"] for st in distinct)
        to_best = sum(st["seconds_to_best"] for st in distinct)
        cpu_best = sum(st.get("cpu_seconds_to_best", 0.0) for st in distinct)
        cpu_s = sum(st.get("cpu_seconds", 0.0) for st in distinct)
        evals = sum(st["evaluations"] for st in distinct)
        data[s] = g
        times[s] = (to_best, cpu_best)
        rows.append(f"| {s} | {g['throughput']:.4g} | {g['perf_per_tdp']:.4g} | {h['throughput']:.4g} | "
                    f"{len(distinct)} | {evals} | {to_best:.2f} ({cpu_best:.2f}) | {stage_s:.2f} ({cpu_s:.2f}) | "
                    f"{total:.2f} |")
    out = [f"**{model}, pipeline depth {depth} (batch {depth}, {depth} micro-batches), objective {objective}** "
           f"(budget {budget} per stage search)", "",
           "| strategy | samples/s (replicated) | Perf/TDP | samples/s (design per stage) | distinct stage searches | "
           "evals in them | s to each one's best, summed (CPU s) | s in stage searches (CPU s) | s total |",
           "|---|---|---|---|---|---|---|---|---|", *rows, ""]
    key = "throughput" if objective == "throughput" else "perf_per_tdp"
    if "wham" in data and "confuciux" in data:
        out.append(f"- WHAM vs ConfuciuX ({key}): ×{data['wham'][key] / data['confuciux'][key]:.3f}")
    # Every stage search of WHAM finds its best at its first evaluation or later; the summed seconds to each
    # stage's best are the time to the final quality when WHAM's final is at least the baseline's.
    base = {k: v for k, v in data.items() if k != "wham"}
    if "wham" in data and base:
        name = max(base, key=lambda k: base[k][key])
        if data["wham"][key] >= base[name][key] * (1 - 1e-9):
            (bw, bc), (ww, wc) = times[name], times["wham"]
            out.append(f"- best baseline: {name} ({base[name][key]:.4g}); WHAM's final {data['wham'][key]:.4g}. "
                       f"Seconds to each stage search's best, summed: WHAM {ww:.2f} s wall ({wc:.2f} s CPU) vs "
                       f"{name} {bw:.2f} s ({bc:.2f} s CPU): **×{bw / max(ww, 1e-9):.1f} wall, "
                       f"×{bc / max(wc, 1e-9):.1f} CPU** sooner (goal ≥ 10×).")
        else:
            out.append(f"- best baseline: {name} ({base[name][key]:.4g}) beats WHAM's {data['wham'][key]:.4g}.")
    return [*out, ""]


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--budget", type=int, default=200)
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--single", default="bert-base")
    ap.add_argument("--pipe", default="gpt2-xl")
    ap.add_argument("--depths", default="8,32")
    ap.add_argument("--skip-single", action="store_true", help="only the pipeline rows")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    strategies = [s for s in args.strategies.split(",") if s]
    t0 = time.perf_counter()
    lines = [f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.machine()}, {os.cpu_count()} CPUs, "
             f"load {os.getloadavg()[0]:.2f}. Command: python bench/wham_baselines.py --budget {args.budget} "
             f"--single {args.single} --pipe {args.pipe} --depths {args.depths}", ""]
    for objective in () if args.skip_single else ("throughput", "perf-per-tdp"):
        lines += single(args.single, objective, strategies, args.budget)
        print("\n".join(lines[-12:]), file=sys.stderr, flush=True)
    for depth in [int(x) for x in args.depths.split(",") if x]:
        lines += pipeline(args.pipe, depth, "throughput", strategies, args.budget)
        print("\n".join(lines[-12:]), file=sys.stderr, flush=True)
    lines.append(f"whole run {time.perf_counter() - t0:.0f} s; load at the end {os.getloadavg()[0]:.2f}")
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
