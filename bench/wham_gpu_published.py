"""WHAM's cost model against published measured GPU training throughputs (no GPU needed).

Usage: nice -n 19 python bench/wham_gpu_published.py [--out FILE]

The template is set to a published GPU (A100 SXM4 80GB and 40GB, V100 SXM2, from NVIDIA's architecture
whitepapers and datasheets); each row's training step is traced at the published configuration (model, batch per GPU,
sequence length) and predicted with the same graph and cost model the search uses. With gradient
accumulation (the BERT pre-training rows) the optimizer runs once per `accumulation` micro-steps, so the
predicted samples/s is batch / (forward+backward + optimizer / accumulation). Every measured figure is
cited with its file, table and row; none is typed from memory. The must-hold band is ±25 %; a (model, GPU)
pair counts as within only when every one of its rows is.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from adopter.wham.evaluate import Evaluator, segments_flops
from adopter.wham.hardware import Constraints, Design
from adopter.wham.models import WorkloadSpec, load_workload

# A100 SXM4 80GB (NVIDIA A100 Tensor Core GPU Architecture whitepaper, 2020; A100 80GB datasheet): 108 SMs,
# 4 third-generation Tensor Cores per SM (432), each 256 dense FP16 FMA per clock at the 1410 MHz boost
# clock (432 × 256 × 2 × 1.41e9 = 312 TFLOPS, the sheet's dense FP16/BF16 figure); 64 FP32 lanes per SM;
# 40 MB L2 (the template's shared buffer); HBM2e 2039 GB/s; TDP 400 W.
A100 = Design(n_tc=432, pe_x=16, pe_y=16, n_vc=108, lanes=64, sram_mib=40.0, bandwidth_gbs=2039.0,
              clock_mhz=1410.0)
# A100 SXM4 40GB: the same chip (same whitepaper) with HBM2 at 1555 GB/s (A100 datasheet, 40GB column).
A100_40 = replace(A100, bandwidth_gbs=1555.0)
# V100 SXM2 (NVIDIA Tesla V100 GPU Architecture whitepaper, 2017): 80 SMs, 8 Tensor Cores per SM (640), each a
# 4×4×4 matrix FMA (64 FMA) per clock, modelled as an 8×8 array; 1530 MHz boost (640 × 64 × 2 × 1.53e9 =
# 125 TFLOPS, the whitepaper's Tensor figure); 64 FP32 lanes per SM; 6144 KB L2; HBM2 900 GB/s; 300 W.
# The 16 GB and 32 GB parts differ only in HBM capacity (V100 datasheet).
V100 = Design(n_tc=640, pe_x=8, pe_y=8, n_vc=80, lanes=64, sram_mib=6.0, bandwidth_gbs=900.0, clock_mhz=1530.0)
GPUS = {"A100 80GB": A100, "A100 40GB": A100_40, "V100 16GB": V100, "V100 32GB": V100}

DLE = "NVIDIA/DeepLearningExamples @729963dd"


@dataclass(frozen=True, slots=True)
class Published:
    """One measured training throughput and where it is published."""

    model: str
    gpu: str  # a key of GPUS
    batch: int
    seq: int
    accumulation: int
    measured: float  # samples/s on one GPU
    source: str


ROWS = (
    Published("bert-large", "A100 80GB", 256, 128, 32, 580.0,
              f"{DLE} PyTorch/LanguageModeling/BERT/README.md, table 'Pre-training NVIDIA DGX A100 (8x A100 "
              "80GB)', row GPUs 1, seq 128, mixed precision"),
    Published("bert-large", "A100 80GB", 32, 512, 128, 210.0,
              f"{DLE} PyTorch/LanguageModeling/BERT/README.md, table 'Pre-training NVIDIA DGX A100 (8x A100 "
              "80GB)', row GPUs 1, seq 512, mixed precision"),
    Published("bert-large", "A100 80GB", 256, 128, 32, 694.0,
              f"{DLE} PaddlePaddle/LanguageModeling/BERT/README.md, table 'Training performance: NVIDIA DGX "
              "A100 (8x A100 80GB)', row GPUs 1, seq 128, mixed precision"),
    Published("bert-large", "A100 80GB", 32, 512, 128, 264.0,
              f"{DLE} PaddlePaddle/LanguageModeling/BERT/README.md, table 'Training performance: NVIDIA DGX "
              "A100 (8x A100 80GB)', row GPUs 1, seq 512, mixed precision"),
    Published("resnet50", "A100 80GB", 256, 224, 1, 2470.0,
              f"{DLE} PyTorch/Classification/ConvNets/resnet50v1.5/README.md, table 'Training performance: "
              "NVIDIA DGX A100 (8x A100 80GB)', row GPUs 1, mixed precision (batch 256, the script's default)"),
    Published("bert-large", "A100 40GB", 64, 128, 1024, 356.845,
              f"{DLE} TensorFlow/LanguageModeling/BERT/README.md, table 'Pre-training training performance: "
              "single-node on DGX A100 40GB', row GPUs 1, seq 128, mixed precision (batch 64, accumulation 1024)"),
    Published("bert-large", "A100 40GB", 16, 512, 2048, 70.856,
              f"{DLE} TensorFlow/LanguageModeling/BERT/README.md, table 'Pre-training training performance: "
              "single-node on DGX A100 40GB', row GPUs 1, seq 512, mixed precision (batch 16, accumulation 2048)"),
    Published("resnet50", "A100 40GB", 256, 224, 1, 2375.0,
              f"{DLE} TensorFlow/Classification/ConvNets/resnet50v1.5/README.md, table 'Training performance: "
              "NVIDIA DGX A100 (8x A100 40GB)', row GPUs 1, mixed precision + XLA (batch 256)"),
    Published("bert-large", "V100 32GB", 64, 128, 64, 224.0,
              f"{DLE} PyTorch/LanguageModeling/BERT/README.md, table 'Pre-training NVIDIA DGX-1 With 32G', row "
              "GPUs 1, seq 128, mixed precision (4096 accumulated over 64 steps: batch 64)"),
    Published("bert-large", "V100 32GB", 8, 512, 256, 75.0,
              f"{DLE} PyTorch/LanguageModeling/BERT/README.md, table 'Pre-training NVIDIA DGX-1 With 32G', row "
              "GPUs 1, seq 512, mixed precision (2048 accumulated over 256 steps: batch 8)"),
    Published("resnet50", "V100 16GB", 256, 224, 1, 1200.0,
              f"{DLE} PyTorch/Classification/ConvNets/resnet50v1.5/README.md, table 'Training performance: "
              "NVIDIA DGX-1 16GB (8x V100 16GB)', row GPUs 1, mixed precision (batch 256, the script's default)"),
    Published("resnet50", "V100 32GB", 256, 224, 1, 1156.0,
              f"{DLE} PyTorch/Classification/ConvNets/resnet50v1.5/README.md, table 'Training performance: "
              "NVIDIA DGX-1 32GB (8x V100 32GB)', row GPUs 1, mixed precision (batch 256, the script's default)"),
    Published("resnet50", "V100 16GB", 256, 224, 1, 1270.0,
              f"{DLE} TensorFlow/Classification/ConvNets/resnet50v1.5/README.md, table 'Training performance: "
              "NVIDIA DGX-1 (8x V100 16G)', row GPUs 1, mixed precision + XLA (batch 256)"),
)


def predict(row: Published) -> tuple[float, str, float]:
    """Predicted samples/s of the row's training step on its GPU's template, where its critical path goes
    (resource shares) with the tensor cores' utilisation, and the share of the GPU's peak tensor rate the
    *measured* figure implies (the traced GEMM FLOPs per sample × measured samples/s ÷ peak: what the real
    run sustained over its whole step, optimizer and non-GEMM ops included)."""
    work = load_workload(WorkloadSpec(row.model, row.batch, row.seq))
    d = GPUS[row.gpu]
    ev = Evaluator(work, "throughput", Constraints(math.inf, math.inf), samples=row.batch).evaluate(d)
    crit = sum(t for _, t in ev.critical) or 1.0
    shares = ", ".join(f"{r} {t / crit:.0%}" for r, t in sorted(ev.critical, key=lambda rt: -rt[1]) if t / crit >= 0.01)
    flops = segments_flops(work, range(len(work.segments))) / row.batch
    return (row.batch / (ev.fb_s + ev.opt_s / row.accumulation), f"{shares}; tensor util {ev.tensor_util:.0%}",
            row.measured * flops / d.peak_flops)


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    t0 = time.perf_counter()
    lines = [f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.machine()}, {os.cpu_count()} CPUs, "
             f"load {os.getloadavg()[0]:.2f}. Command: python bench/wham_gpu_published.py",
             *(f"{name} template: {d.label()}, {d.clock_mhz:g} MHz → {d.peak_flops / 1e12:.0f} TFLOPS dense FP16."
               for name, d in GPUS.items()), "",
             "| model | GPU | batch × seq (accumulation) | measured samples/s | predicted | predicted / measured | "
             "within ±25 % | critical path (model) | peak tensor rate the measurement sustains | source |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    within = 0
    pairs: dict[tuple[str, str], list[bool]] = {}
    for row in ROWS:
        try:
            pred, why, sustained = predict(row)
        except Exception as exc:  # a model that cannot be traced is reported; the rest go on
            lines.append(f"| {row.model} | {row.gpu} | {row.batch} × {row.seq} | {row.measured:g} | failed: {exc} "
                         f"| — | — | — | — | {row.source} |")
            continue
        ratio = pred / row.measured
        ok = abs(ratio - 1) <= 0.25
        within += ok
        pairs.setdefault((row.model, row.gpu), []).append(ok)
        lines.append(f"| {row.model} | {row.gpu} | {row.batch} × {row.seq} ({row.accumulation}) | {row.measured:g} | "
                     f"{pred:.4g} | {ratio:.2f} | {'yes' if ok else 'no'} | {why} | {sustained:.0%} | {row.source} |")
        print(lines[-1], file=sys.stderr, flush=True)
    every = sum(all(v) for v in pairs.values())
    lines += ["", f"{within} of {len(ROWS)} rows within ±25 %; (model, GPU) pairs with every row within: {every} of "
              f"{len(pairs)} ({', '.join(f'{m} on {g}' for (m, g), v in pairs.items() if all(v)) or 'none'}); "
              f"whole run {time.perf_counter() - t0:.0f} s."]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
