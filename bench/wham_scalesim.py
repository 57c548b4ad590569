"""WHAM's tensor-core timing against SCALE-Sim (cycle-accurate systolic array), per GEMM layer.

Usage: nice -n 19 python bench/wham_scalesim.py [--array 64] [--max-cycles 60000] [--pkgs DIR] [--out FILE]
Needs SCALE-Sim in its own folder (its numpy pin clashes with the project's; `--pkgs` names another one):
    python -m pip install --target .cache/wham/scalesim-pkgs scalesim
    python -m pip install --target .cache/wham/scalesim-pkgs --upgrade --no-deps "numpy<2"
(scalesim 3.0.0 fails under numpy 2 in read_buffer.prefetch_active_buffer.)

Every distinct GEMM (forward, data- and weight-gradient; convolutions as their im2col GEMMs) of the training
graphs of bert-base and gpt2 (batch 1, sequence 128) and resnet50 (batch 1, 64×64 images) is run through
SCALE-Sim on one `array × array` output-stationary array with 1 MiB per operand SRAM and 4·array words per
cycle, and through `adopter.wham.cost.op_cost` on the same single array (epilogue stripped, one batch
instance: SCALE-Sim has no batched GEMM). The comparison is compute against compute: SCALE-Sim's cycles less
its memory stalls (shown apart: its double-buffered SRAM refetches operands that exceed half a buffer). Small graphs keep SCALE-Sim's
per-cycle simulation within minutes on a shared 2-core machine; the GEMM shapes are the models' own.
Layers whose simulation would exceed `--max-cycles` are listed as not simulated, not dropped silently.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from adopter.wham.cost import op_cost
from adopter.wham.hardware import Design
from adopter.wham.models import WorkloadSpec, load_workload

ROOT = Path(__file__).resolve().parents[1]
MODELS = (("bert-base", 1, 128), ("gpt2", 1, 128), ("resnet50", 1, 64))
PKGS = ROOT / ".cache" / "wham" / "scalesim-pkgs"

CONFIG = """[general]
run_name = wham

[architecture_presets]
ArrayHeight = {a}
ArrayWidth = {a}
IfmapSramSzkB = 1024
FilterSramSzkB = 1024
OfmapSramSzkB = 1024
IfmapOffset = 0
FilterOffset = 10000000
OfmapOffset = 20000000
Bandwidth = {bw}
Dataflow = os
ReadRequestBuffer = 32
WriteRequestBuffer = 32

[layout]
IfmapCustomLayout = False
FilterCustomLayout = False
IfmapSRAMBankBandwidth = 10
IfmapSRAMBankNum = 10
IfmapSRAMBankPort = 2
FilterSRAMBankBandwidth = 10
FilterSRAMBankNum = 10
FilterSRAMBankPort = 2

[sparsity]
SparsitySupport = false
SparseRep = ellpack_block
OptimizedMapping = false
BlockSize = 8
RandomNumberGeneratorSeed = 40

[run_presets]
InterfaceBandwidth = USER
UseRamulatorTrace = False
"""

# --compute-only: SCALE-Sim's own compute model (operand matrices, then the output-stationary demand matrices)
# without its memory simulation, which is what takes hours on the large layers. A layer's compute cycles are
# its OFMAP demand matrix's rows less one: on 64×64×256, 128×128×64 and 1×2048×1000 this equals the full
# simulation's cycles less stalls (381, 759, 36 031).
COMPUTE = """
import sys
from scalesim.scale_config import scale_config
from scalesim.topology_utils import topologies
from scalesim.layout_utils import layouts
from scalesim.compute.operand_matrix import operand_matrix
from scalesim.compute.systolic_compute_os import systolic_compute_os
c = scale_config(); c.read_conf_file({cfg!r})
t = topologies(); t.load_arrays(topofile={topo!r}, mnk_inputs=True)
lay = layouts(); lay.load_arrays(layoutfile={layout!r}, mnk_inputs=True)
with open({out!r}, "w") as f:
    for i in range(t.get_num_layers()):
        om = operand_matrix(); om.set_params(config_obj=c, topoutil_obj=t, layoututil_obj=lay, layer_id=i)
        _, a = om.get_ifmap_matrix(); _, b = om.get_filter_matrix(); _, o = om.get_ofmap_matrix()
        cs = systolic_compute_os(); cs.set_params(config_obj=c, ifmap_op_mat=a, filter_op_mat=b, ofmap_op_mat=o)
        _, _, od = cs.get_demand_matrices()
        f.write(f"{{od.shape[0] - 1}}\\n"); f.flush()
"""

RUN = """
from scalesim.scale_sim import scalesim
s = scalesim(save_disk_space=True, verbose=False, config={cfg!r}, topology={topo!r}, layout={layout!r},
             input_type_gemm=True)
s.run_scale(top_path={out!r})
"""


def shapes() -> dict[tuple[int, int, int], list[str]]:
    """Distinct (M, N, K) of every GEMM in the three training graphs, with the ops that have them."""
    out: dict[tuple[int, int, int], list[str]] = {}
    for name, batch, seq in MODELS:
        work = load_workload(WorkloadSpec(name, batch, seq))
        for block in work.blocks:
            for op in block.ops:
                if op.is_gemm:
                    out.setdefault((max(1, op.m), max(1, op.n), max(1, op.k)), []).append(f"{name}:{op.name}")
    return out


def ours(m: int, n: int, k: int, array: int) -> float:
    """Compute cycles of one GEMM instance on one `array × array` tensor core (cost.op_cost)."""
    from adopter.wham.graph import Op

    op = Op("mm", "gemm", "fwd", 2.0 * m * n * k, 2.0 * (m * k + k * n), 2.0 * m * n, (), m=m, n=n, k=k)
    d = Design(n_tc=1, pe_x=array, pe_y=array, n_vc=1, lanes=array, sram_mib=3.0, bandwidth_gbs=1e6)
    return op_cost(replace(op, vector=()), d).compute_cycles


def simulate(layers: list[tuple[int, int, int]], array: int, pkgs: Path,
             compute_only: bool = False) -> list[tuple[float, float]]:
    """SCALE-Sim's (total cycles without the initial prefetch, stall cycles) per layer, in order; with
    `compute_only`, (compute cycles, NaN): its compute model alone, no memory simulation."""
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        (t / "cfg.cfg").write_text(CONFIG.format(a=array, bw=4 * array))
        (t / "topo.csv").write_text("Layer, M, N, K,\n" + "".join(
            f"l{i}, {m}, {n}, {k},\n" for i, (m, n, k) in enumerate(layers)))
        (t / "layout.csv").write_text("Layer name," + ",".join(["x"] * 20) + ",\n" + "".join(
            f"l{i}," + ",".join(["1"] * 20) + ",\n" for i in range(len(layers))))
        files = {"cfg": str(t / "cfg.cfg"), "topo": str(t / "topo.csv"), "layout": str(t / "layout.csv")}
        env = {**os.environ, "PYTHONPATH": str(pkgs)}
        if compute_only:
            code = COMPUTE.format(**files, out=str(t / "cycles.txt"))
            subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, timeout=3600)
            return [(float(x), float("nan")) for x in (t / "cycles.txt").read_text().split()]
        code = RUN.format(**files, out=str(t / "out"))
        subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, timeout=3600)
        report = next((t / "out").rglob("COMPUTE_REPORT.csv"))
        with report.open() as f:
            rows = list(csv.reader(f))[1:]
        return [(float(r[2]), float(r[3])) for r in rows if r]


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--array", type=int, default=64)
    ap.add_argument("--max-cycles", type=float, default=60_000)
    ap.add_argument("--compute-only", action="store_true",
                    help="SCALE-Sim's compute model without its memory simulation (hours faster on big layers)")
    ap.add_argument("--pkgs", type=Path, default=PKGS, help="folder SCALE-Sim is installed in (pip --target)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if not (args.pkgs / "scalesim").is_dir():
        print(f"SCALE-Sim is not installed in {args.pkgs}: see this script's docstring", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    a = args.array
    found = shapes()
    # SCALE-Sim's OS cost is folds · (K + 2·array − 2) (cost.gemm_fold_cycles): keeps the run bounded.
    est = {s: -(-s[0] // a) * -(-s[1] // a) * (s[2] + 2 * a) for s in found}
    run = sorted((s for s in found if est[s] <= args.max_cycles), key=lambda s: est[s])
    skipped = sorted((s for s in found if est[s] > args.max_cycles), key=lambda s: est[s])
    sim = simulate(run, a, args.pkgs, args.compute_only)
    ratios = []
    lines = [f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.machine()}, {os.cpu_count()} CPUs, "
             f"load {os.getloadavg()[0]:.2f}. Command: python bench/wham_scalesim.py --array {a} --max-cycles "
             f"{args.max_cycles:g}{' --compute-only' if args.compute_only else ''}", "",
             f"One {a}×{a} output-stationary array, 1 MiB per operand SRAM, bandwidth {4 * a} words/cycle.", "",
             ("Compared: SCALE-Sim's compute model alone (its OS demand matrices; no memory simulation, so no stalls) "
              "with ours." if args.compute_only else
              "Compared: SCALE-Sim's cycles less its memory stall cycles (its compute) with ours; stalls shown apart."),
             "", "| M | N | K | ops | SCALE-Sim cycles | of which stalls | SCALE-Sim compute | ours | ours / compute |",
             "|---|---|---|---|---|---|---|---|---|"]
    for s, (total, stall) in zip(run, sim):
        c = total if math.isnan(stall) else total - stall
        mine = ours(*s, a)
        ratio = mine / c if c else float("nan")
        ratios.append(ratio)
        ops = found[s]
        lines.append(f"| {s[0]} | {s[1]} | {s[2]} | {ops[0]}{f' (+{len(ops) - 1})' if len(ops) > 1 else ''} | "
                     f"{total:.0f} | {'—' if math.isnan(stall) else f'{stall:.0f}'} | {c:.0f} | {mine:.0f} | {ratio:.3f} |")
    errs = sorted(abs(r - 1) for r in ratios)
    lines += ["", f"{len(run)} distinct GEMMs simulated; |ours/SCALE-Sim − 1|: median {statistics.median(errs):.1%}, "
              f"worst {errs[-1]:.1%} (must hold: ±10 % median, ±25 % worst).",
              f"Not simulated (estimated > {args.max_cycles:g} cycles): " + (", ".join(
                  f"{m}×{n}×{k}" for m, n, k in skipped) or "none") + ".",
              f"whole run {time.perf_counter() - t0:.0f} s"]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
