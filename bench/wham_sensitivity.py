"""Which verdicts flip when each remaining assumption of the cost model moves by ±50 %.

Usage: nice -n 19 python bench/wham_sensitivity.py [--model bert-base] [--budget 100] [--out FILE]

Each assumption (a constant of `adopter.wham.constants`, or the vector-cycle table as a whole) is scaled
by 0.5 and 1.5 in turn, everything else at its cited value; for each setting the same verdicts are
recomputed on the model's training step (WHAM's search at the stated budget, equal areas from the
reference designs under that setting):

  V1  found ≥ 1.12 × TPUv2-like's throughput at TPUv2-like's area       (the paper's +12 %)
  V2  found ≥ 2 × NVDLA-like's throughput at NVDLA-like's area          (the paper's 2×)
  V3  found ≥ 8.1 × TPUv2-like's Perf/TDP at TPUv2-like's area          (the paper's 8.1×, one device)
  V4  WHAM's best ≥ NSGA-II's best at the same budget                   (the search claim)
  V5  the resource dominating the found design's critical path          (tensor, bandwidth, …)

A verdict that differs from the cited setting's is marked **flips**.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from adopter.wham import constants as C
from adopter.wham.engine import run_strategy
from adopter.wham.evaluate import Constraints, Evaluator
from adopter.wham.graph import Workload
from adopter.wham.hardware import DesignSpace, area_mm2, nvdla_like, tpuv2_like
from adopter.wham.models import WorkloadSpec, load_workload
from adopter.wham.strategies import make_strategy

# The assumptions moved: constants read at call time by hardware.py/cost.py.
ASSUMPTIONS = ("PE_AREA_UM2", "PE_ENERGY_PJ", "LANE_AREA_UM2", "LANE_ENERGY_PJ", "SRAM_AREA_MM2_PER_MIB",
               "SRAM_ENERGY_PJ_PER_BYTE", "DRAM_ENERGY_PJ_PER_BYTE", "VECTOR_CYCLES", "LINK_GBS")


@contextmanager
def scaled(name: str, factor: float) -> Iterator[None]:
    """Constant `name` × `factor` for the duration (the vector table: every entry)."""
    if name == "VECTOR_CYCLES":
        saved = dict(C.VECTOR_CYCLES)
        for k in C.VECTOR_CYCLES:
            C.VECTOR_CYCLES[k] = saved[k] * factor
        try:
            yield
        finally:
            C.VECTOR_CYCLES.update(saved)
        return
    old = getattr(C, name)
    setattr(C, name, old * factor)
    try:
        yield
    finally:
        setattr(C, name, old)


def verdicts(work: Workload, budget: int, link_gbs: float) -> dict[str, str]:
    def best(objective: str, area: float, strategy: str = "wham") -> tuple[float, float, str]:
        ev = Evaluator(work, objective, Constraints(area * (1 + 1e-9), 1e5), link_gbs=link_gbs, samples=work.batch)
        r = run_strategy(make_strategy(strategy), ev, DesignSpace(), budget=budget, seed=0)
        if r.best is None:
            return 0.0, 0.0, "none"
        crit = max(r.best.critical, key=lambda kv: kv[1])[0] if r.best.critical else "?"
        return r.best.throughput, r.best.perf_per_tdp, crit

    def ref(d: Callable[[], object]) -> tuple[float, float]:
        e = Evaluator(work, "throughput", Constraints(1e5, 1e5), link_gbs=link_gbs, samples=work.batch).evaluate(d())  # type: ignore[arg-type]
        return e.throughput, e.perf_per_tdp

    tpu_a, nv_a = area_mm2(tpuv2_like()), area_mm2(nvdla_like())
    tpu_thr, tpu_ppt = ref(tpuv2_like)
    nv_thr, _ = ref(nvdla_like)
    thr, _, crit = best("throughput", tpu_a)
    nv_found, _, _ = best("throughput", nv_a)
    _, ppt, _ = best("perf-per-tdp", tpu_a)
    nsga, _, _ = best("throughput", tpu_a, "nsga2")
    return {"V1": f"×{thr / tpu_thr:.2f} {'met' if thr >= 1.12 * tpu_thr else 'not met'}",
            "V2": f"×{nv_found / nv_thr:.2f} {'met' if nv_found >= 2 * nv_thr else 'not met'}",
            "V3": f"×{ppt / tpu_ppt:.2f} {'met' if ppt >= 8.1 * tpu_ppt else 'not met'}",
            "V4": f"×{thr / nsga:.3f} {'met' if thr >= nsga * (1 - 1e-9) else 'not met'}" if nsga else "n/a",
            "V5": crit}


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--model", default="bert-base")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--budget", type=int, default=100)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    t0 = time.perf_counter()
    work = load_workload(WorkloadSpec(args.model, args.batch, args.seq))
    base = verdicts(work, args.budget, C.LINK_GBS)
    lines = [f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.machine()}, {os.cpu_count()} CPUs, "
             f"load {os.getloadavg()[0]:.2f}. Command: python bench/wham_sensitivity.py --model {args.model} "
             f"--batch {args.batch} --seq {args.seq} --budget {args.budget}", "",
             "| assumption | × | V1 +12 % over TPUv2 | V2 2× NVDLA | V3 8.1× Perf/TDP | V4 WHAM ≥ NSGA-II | "
             "V5 critical resource |", "|---|---|---|---|---|---|---|",
             "| (cited values) | 1 | " + " | ".join(base[k] for k in ("V1", "V2", "V3", "V4", "V5")) + " |"]
    flips: list[str] = []
    for name in ASSUMPTIONS:
        for factor in (0.5, 1.5):
            with scaled(name, factor):
                link = C.LINK_GBS
                v = verdicts(work, args.budget, link)
            cells = []
            for k in ("V1", "V2", "V3", "V4", "V5"):
                changed = v[k].split()[-1] != base[k].split()[-1]
                cells.append(f"{v[k]} **flips**" if changed else v[k])
                if changed:
                    flips.append(f"{name} ×{factor:g}: {k}")
            lines.append(f"| {name} | {factor:g} | " + " | ".join(cells) + " |")
            print(lines[-1], file=sys.stderr, flush=True)
    lines += ["", "Flips: " + ("; ".join(flips) if flips else "none"),
              f"whole run {time.perf_counter() - t0:.0f} s; load at the end {os.getloadavg()[0]:.2f}"]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
