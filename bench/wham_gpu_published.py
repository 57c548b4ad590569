"""WHAM's cost model against published measured GPU training throughputs (no GPU needed).

Usage: nice -n 19 python bench/wham_gpu_published.py [--out FILE]

The template is set to a published GPU (A100 SXM4 80GB below, from NVIDIA's architecture whitepaper and
datasheet); each row's training step is traced at the published configuration (model, batch per GPU,
sequence length) and predicted with the same graph and cost model the search uses. With gradient
accumulation (the BERT pre-training rows) the optimizer runs once per `accumulation` micro-steps, so the
predicted samples/s is batch / (forward+backward + optimizer / accumulation). Every measured figure is
cited with its file, table and row; none is typed from memory. The must-hold band is ±25 %.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from adopter.wham.evaluate import Evaluator
from adopter.wham.hardware import Constraints, Design
from adopter.wham.models import WorkloadSpec, load_workload

# A100 SXM4 80GB (NVIDIA A100 Tensor Core GPU Architecture whitepaper, 2020; A100 80GB datasheet): 108 SMs,
# 4 third-generation Tensor Cores per SM (432), each 256 dense FP16 FMA per clock at the 1410 MHz boost
# clock (432 × 256 × 2 × 1.41e9 = 312 TFLOPS, the sheet's dense FP16/BF16 figure); 64 FP32 lanes per SM;
# 40 MB L2 (the template's shared buffer); HBM2e 2039 GB/s; TDP 400 W.
A100 = Design(n_tc=432, pe_x=16, pe_y=16, n_vc=108, lanes=64, sram_mib=40.0, bandwidth_gbs=2039.0,
              clock_mhz=1410.0)

DLE = "NVIDIA/DeepLearningExamples @729963dd"


@dataclass(frozen=True, slots=True)
class Published:
    """One measured training throughput and where it is published."""

    model: str
    gpu: str
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
)


def predict(row: Published) -> float:
    """Predicted samples/s of the row's training step on the A100 template."""
    work = load_workload(WorkloadSpec(row.model, row.batch, row.seq))
    ev = Evaluator(work, "throughput", Constraints(math.inf, math.inf), samples=row.batch).evaluate(A100)
    return row.batch / (ev.fb_s + ev.opt_s / row.accumulation)


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    t0 = time.perf_counter()
    lines = [f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.machine()}, {os.cpu_count()} CPUs, "
             f"load {os.getloadavg()[0]:.2f}. Command: python bench/wham_gpu_published.py",
             f"A100 template: {A100.n_tc} tensor cores of {A100.pe_x}×{A100.pe_y}, {A100.n_vc}×{A100.lanes} lanes, "
             f"{A100.sram_mib:g} MiB, {A100.bandwidth_gbs:g} GB/s, {A100.clock_mhz:g} MHz → "
             f"{A100.peak_flops / 1e12:.0f} TFLOPS dense FP16.", "",
             "| model | GPU | batch × seq (accumulation) | measured samples/s | predicted | predicted / measured | "
             "within ±25 % | source |", "|---|---|---|---|---|---|---|---|"]
    within = 0
    for row in ROWS:
        try:
            pred = predict(row)
        except Exception as exc:  # a model that cannot be traced is reported; the rest go on
            lines.append(f"| {row.model} | {row.gpu} | {row.batch} × {row.seq} | {row.measured:g} | failed: {exc} "
                         f"| — | — | {row.source} |")
            continue
        ratio = pred / row.measured
        ok = abs(ratio - 1) <= 0.25
        within += ok
        lines.append(f"| {row.model} | {row.gpu} | {row.batch} × {row.seq} ({row.accumulation}) | {row.measured:g} | "
                     f"{pred:.4g} | {ratio:.2f} | {'yes' if ok else 'no'} | {row.source} |")
        print(lines[-1], file=sys.stderr, flush=True)
    lines += ["", f"{within} of {len(ROWS)} rows within ±25 %; whole run {time.perf_counter() - t0:.0f} s."]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
