"""Fidelity of WHAM's cost model on a real GPU: predicted vs measured training-step time.

Usage: python bench/wham_fidelity.py [--gpu h100|h200|auto] [--models bert-base,...] [--steps 10] [--out FILE]

The template is set to a published GPU (constants below, from NVIDIA's sheets); the training step of
five zoo models at stated sizes is predicted with the same graph and cost model the search uses. On a
machine with CUDA the same steps are measured with torch (bf16 autocast, AdamW foreach, warm-up steps,
CUDA events) and the table gives predicted / measured per model. Without CUDA it prints the predictions
only and says so.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from adopter.wham.evaluate import Constraints, Evaluator
from adopter.wham.hardware import Design
from adopter.wham.models import WorkloadSpec, load_workload


@dataclass(frozen=True, slots=True)
class Gpu:
    """A published GPU in the template's terms, with where each figure comes from."""

    name: str
    design: Design
    peak_bf16_tflops: float
    tdp_w: float
    sources: str


# H100 SXM5 (NVIDIA H100 Tensor Core GPU datasheet, 2023; NVIDIA H100 Tensor Core GPU Architecture
# whitepaper v1.04, 2022): 132 SMs, 4 fourth-generation Tensor Cores per SM (528), each 512 dense
# FP16/BF16 FMA per clock (989.4 TFLOPS dense BF16 at the 1830 MHz boost clock the whitepaper's peak
# figures use: 528 × 512 × 2 × 1.83e9 = 989.5e12); 128 FP32 lanes per SM; 50 MB L2 (the template's
# shared buffer; the 256 KB of L1/shared memory per SM is left out); HBM3 3.35 TB/s; TDP up to 700 W.
H100 = Gpu("H100 SXM5", Design(n_tc=528, pe_x=16, pe_y=32, n_vc=132, lanes=128, sram_mib=50.0,
                               bandwidth_gbs=3350.0, clock_mhz=1830.0), 989.4, 700.0,
           "NVIDIA H100 datasheet and H100 architecture whitepaper")
# H200 SXM (NVIDIA H200 Tensor Core GPU datasheet, 2024): the same GH100 compute (989 TFLOPS dense BF16),
# HBM3e 141 GB at 4.8 TB/s, TDP up to 700 W.
H200 = Gpu("H200 SXM", Design(n_tc=528, pe_x=16, pe_y=32, n_vc=132, lanes=128, sram_mib=50.0,
                              bandwidth_gbs=4800.0, clock_mhz=1830.0), 989.4, 700.0,
           "NVIDIA H200 datasheet; compute as H100 SXM5")
GPUS = {"h100": H100, "h200": H200}

# Five zoo models at the sizes measured: (name, batch, sequence or image side).
MODELS = (("bert-base", 32, 512), ("gpt2", 16, 1024), ("resnet50", 128, 224), ("vit-b16", 128, 224),
          ("llama-1b", 8, 2048))


def predict(gpu: Gpu, name: str, batch: int, seq: int) -> tuple[float, float]:
    """(predicted step seconds, TFLOP per step) of the model's training step on `gpu`."""
    work = load_workload(WorkloadSpec(name, batch, seq))
    ev = Evaluator(work, "throughput", Constraints(math.inf, math.inf)).evaluate(gpu.design)
    return ev.step_s, work.flops / 1e12


def _real(x: Any, device: Any) -> Any:
    import torch

    if isinstance(x, torch.Tensor):
        if x.is_floating_point():
            return torch.randn(x.shape, dtype=x.dtype, device=device)
        return torch.zeros(x.shape, dtype=x.dtype, device=device)  # token ids and labels: index 0 is valid
    return x


def measure(name: str, batch: int, seq: int, steps: int, warmup: int) -> float:
    """Median seconds of one training step on CUDA: bf16 autocast, AdamW(foreach=True), CUDA events."""
    import torch

    from adopter.wham.workload.trace import default_loss
    from adopter.wham.workload.zoo import ZOO

    dev = torch.device("cuda")
    model, inputs, loss_fn = ZOO[name][0](batch, seq)
    model = model.to_empty(device=dev)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.02)
        for n, b in model.named_buffers():
            b.fill_(1.0 if "var" in n else 0.0)
    inputs = tuple(_real(x, dev) for x in inputs)
    opt = torch.optim.AdamW(model.parameters(), foreach=True)
    model.train()

    def step(model: Any, opt: Any) -> None:
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = model(*inputs)
            loss = (loss_fn or default_loss)(out)
        loss.backward()
        opt.step()

    for _ in range(warmup):
        step(model, opt)
    torch.cuda.synchronize()
    times = []
    for _ in range(steps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step(model, opt)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    del model, opt
    torch.cuda.empty_cache()
    return sorted(times)[len(times) // 2]


def _cuda() -> str | None:
    try:
        import torch
    except ImportError:
        return None
    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", default="auto", help="h100 | h200 | auto (from the CUDA device's name; H100 otherwise)")
    ap.add_argument("--models", default=",".join(m for m, _, _ in MODELS))
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    device = _cuda()
    key = args.gpu if args.gpu != "auto" else ("h200" if device and "H200" in device else "h100")
    gpu = GPUS[key]
    d = gpu.design
    lines = [f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.machine()}, {os.cpu_count()} CPUs; "
             f"CUDA device: {device or 'none'}.",
             f"Template set to {gpu.name} ({gpu.sources}): {d.n_tc} tensor cores of {d.pe_x}×{d.pe_y}, "
             f"{d.n_vc}×{d.lanes} lanes, {d.sram_mib:g} MiB, {d.bandwidth_gbs:g} GB/s, {d.clock_mhz:g} MHz → "
             f"{d.peak_flops / 1e12:.1f} TFLOPS dense bf16 (sheet: {gpu.peak_bf16_tflops:g}); TDP {gpu.tdp_w:g} W.",
             "", "| model | batch × seq | TFLOP/step | predicted ms | measured ms | predicted / measured |",
             "|---|---|---|---|---|---|"]
    sizes = {m: (b, s) for m, b, s in MODELS}
    for name in [m for m in args.models.split(",") if m]:
        b, s = sizes.get(name, (8, 512))
        pred, tflop = predict(gpu, name, b, s)
        if device:
            meas = measure(name, b, s, args.steps, args.warmup)
            cells = f"{meas * 1e3:.2f} | {pred / meas:.2f}"
        else:
            cells = "— | — (no CUDA here)"
        lines.append(f"| {name} | {b} × {s} | {tflop:.2f} | {pred * 1e3:.2f} | {cells} |")
        print(lines[-1], file=sys.stderr, flush=True)
    if not device:
        lines += ["", "No CUDA device: predictions only; the measured column waits for a machine with a GPU "
                  "(run this script there)."]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
