"""Fidelity of WHAM's cost model on a real GPU: predicted vs measured training-step time.

Usage: python bench/wham_fidelity.py [--gpu h100|h200|auto] [--models bert-base,...] [--steps 10]
                                     [--mem-gib G] [--time-limit-s 540] [--out FILE]

The template is set to a published GPU (constants below, from NVIDIA's sheets); the training step of
five zoo models is predicted with the same graph and cost model the search uses. On a machine with CUDA
the same steps are measured with torch (bf16 autocast, AdamW foreach, warm-up steps, CUDA events) and the
table gives predicted / measured per model. Without CUDA it prints the predictions only and says so.

Sizing: each model's batch is cut, before anything runs on the GPU, until its step fits the card. The
memory comes from the traced graph at batch 1 (`workload.memory`: parameters and saved activations, at 16
bits): a step holds 20 bytes per parameter (fp32 weights, fp32 gradients, AdamW's two fp32 moments, and one
fp32 temporary of the foreach update) plus the saved activations counted at 4 bytes per element (the graph
counts 2; autocast keeps some in fp32, so all-fp32 is the worst case) times the batch. The batch is the
largest power of two at most the requested one whose step takes ≤ 85 % of the card (the rest for the
allocator's fragmentation, cuBLAS workspaces and the CUDA context). llama-1b at 8 × 2048 would need about
165 GiB of saved activations alone at 16 bits; it runs at the batch that fits and the table says so.
A model that fails (out of memory anyway, a tracing error) gets its row with the error, and the run goes
on; a model that would start after `--time-limit-s` is listed as skipped, so the whole run stays under
ten minutes.
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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from adopter.wham.evaluate import Constraints, Evaluator
from adopter.wham.gpu import serial_step
from adopter.wham.hardware import Design
from adopter.wham.models import WorkloadSpec, load_workload


@dataclass(frozen=True, slots=True)
class Gpu:
    """A published GPU in the template's terms, with where each figure comes from."""

    name: str
    design: Design
    peak_bf16_tflops: float
    tdp_w: float
    memory_gib: float
    sources: str


# H100 SXM5 (NVIDIA H100 Tensor Core GPU datasheet, 2023; NVIDIA H100 Tensor Core GPU Architecture
# whitepaper v1.04, 2022): 132 SMs, 4 fourth-generation Tensor Cores per SM (528), each 512 dense
# FP16/BF16 FMA per clock (989.4 TFLOPS dense BF16 at the 1830 MHz boost clock the whitepaper's peak
# figures use: 528 × 512 × 2 × 1.83e9 = 989.5e12); 128 FP32 lanes per SM; 50 MB L2 (the template's
# shared buffer; the 256 KB of L1/shared memory per SM is left out); HBM3 3.35 TB/s; TDP up to 700 W.
H100 = Gpu("H100 SXM5", Design(n_tc=528, pe_x=16, pe_y=32, n_vc=132, lanes=128, sram_mib=50.0,
                               bandwidth_gbs=3350.0, clock_mhz=1830.0), 989.4, 700.0, 80 * 1e9 / 2**30,
           "NVIDIA H100 datasheet and H100 architecture whitepaper")
# H200 SXM (NVIDIA H200 Tensor Core GPU datasheet, 2024): the same GH100 compute (989 TFLOPS dense BF16),
# HBM3e 141 GB at 4.8 TB/s, TDP up to 700 W.
H200 = Gpu("H200 SXM", Design(n_tc=528, pe_x=16, pe_y=32, n_vc=132, lanes=128, sram_mib=50.0,
                              bandwidth_gbs=4800.0, clock_mhz=1830.0), 989.4, 700.0, 141 * 1e9 / 2**30,
           "NVIDIA H200 datasheet; compute as H100 SXM5")
GPUS = {"h100": H100, "h200": H200}

# Five zoo models at the sizes measured: (name, batch, sequence or image side).
MODELS = (("bert-base", 32, 512), ("gpt2", 16, 1024), ("resnet50", 128, 224), ("vit-b16", 128, 224),
          ("llama-1b", 8, 2048))


BYTES_PER_PARAM = 4 + 4 + 8 + 4  # fp32 weight, fp32 gradient, AdamW's two fp32 moments, one foreach temporary
ACTIVATION_WIDTH_FACTOR = 2.0  # the graph counts saved activations at 2 bytes; worst case all fp32 (4 bytes)
USABLE_FRACTION = 0.85  # of the card: the rest for fragmentation, cuBLAS workspaces and the CUDA context


def step_bytes(name: str, batch: int, seq: int) -> tuple[float, float]:
    """(fixed bytes, saved-activation bytes per sample) of one training step, from the graph at batch 1."""
    work = load_workload(WorkloadSpec(name, 1, seq))
    return work.params * BYTES_PER_PARAM, work.memory.saved_activation_bytes * ACTIVATION_WIDTH_FACTOR


def fitting_batch(fixed: float, per_sample: float, requested: int, card_bytes: float) -> int:
    """The largest power of two ≤ `requested` whose step fits `USABLE_FRACTION` of the card (0: none does)."""
    room = USABLE_FRACTION * card_bytes - fixed
    batch = 1 << (max(1, requested).bit_length() - 1)
    while batch >= 1 and fixed + per_sample * batch > USABLE_FRACTION * card_bytes:
        batch //= 2
    return batch if room > 0 else 0


def predict(gpu: Gpu, name: str, batch: int, seq: int) -> tuple[float, float, float]:
    """(predicted step seconds, TFLOP per step, predicted step seconds as the GPU runs it) of the model's training
    step on `gpu`: the search's model (fused graph, overlapping scheduler), and `gpu.serial_step` on the eager
    graph (every op its own kernel, one stream, batch norm's second reads), which is how the measured eager
    PyTorch step runs."""
    spec = WorkloadSpec(name, batch, seq)
    work = load_workload(spec)
    ev = Evaluator(work, "throughput", Constraints(math.inf, math.inf)).evaluate(gpu.design)
    gs = serial_step(load_workload(spec, fuse=False), gpu.design)
    return ev.step_s, work.flops / 1e12, gs.fb_s + gs.opt_s


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


def _card_bytes(device: str | None, override_gib: float | None, gpu: Gpu) -> float:
    if override_gib:
        return override_gib * 2**30
    if device:
        import torch

        return float(torch.cuda.mem_get_info(0)[1])  # type: ignore[no-any-return]
    return gpu.memory_gib * 2**30


def _row(name: str, b: int, s: int, gpu: Gpu, device: str | None, args: argparse.Namespace,
         card: float) -> str:
    fixed, per_sample = step_bytes(name, b, s)
    fit = fitting_batch(fixed, per_sample, b, card)
    need = (fixed + per_sample * b) / 2**30
    if fit == 0:
        return (f"| {name} | {b} × {s} | — | — | — | — | — | — (parameters and optimizer state alone, "
                f"{fixed / 2**30:.1f} GiB, exceed the card) |")
    size = f"{fit} × {s}" + (f" (asked {b}: {need:.0f} GiB > {USABLE_FRACTION:.0%} of {card / 2**30:.0f} GiB)"
                             if fit < b else "")
    pred, tflop, serial = predict(gpu, name, fit, s)
    if device:
        try:
            meas = measure(name, fit, s, args.steps, args.warmup)
        except Exception as exc:  # one model failing must not lose the others' rows
            import torch

            torch.cuda.empty_cache()
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
            return (f"| {name} | {size} | {tflop:.2f} | {pred * 1e3:.2f} | {serial * 1e3:.2f} | failed: "
                    f"{type(exc).__name__}: {first} | — | — |")
        cells = f"{meas * 1e3:.2f} | {pred / meas:.2f} | {serial / meas:.2f}"
    else:
        cells = "— | — (no CUDA here) | —"
    return f"| {name} | {size} | {tflop:.2f} | {pred * 1e3:.2f} | {serial * 1e3:.2f} | {cells} |"


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--gpu", default="auto", help="h100 | h200 | auto (from the CUDA device's name; H100 otherwise)")
    ap.add_argument("--models", default=",".join(m for m, _, _ in MODELS))
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--mem-gib", type=float, default=None,
                    help="card memory to size batches for (default: the CUDA device's, else the sheet's)")
    ap.add_argument("--time-limit-s", type=float, default=540.0,
                    help="start no model after this many seconds (the run stays under ten minutes)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    t0 = time.monotonic()
    device = _cuda()
    key = args.gpu if args.gpu != "auto" else ("h200" if device and "H200" in device else "h100")
    gpu = GPUS[key]
    d = gpu.design
    card = _card_bytes(device, args.mem_gib, gpu)
    lines = [f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.machine()}, {os.cpu_count()} CPUs; "
             f"CUDA device: {device or 'none'}; batches sized for {card / 2**30:.0f} GiB.",
             f"Template set to {gpu.name} ({gpu.sources}): {d.n_tc} tensor cores of {d.pe_x}×{d.pe_y}, "
             f"{d.n_vc}×{d.lanes} lanes, {d.sram_mib:g} MiB, {d.bandwidth_gbs:g} GB/s, {d.clock_mhz:g} MHz → "
             f"{d.peak_flops / 1e12:.1f} TFLOPS dense bf16 (sheet: {gpu.peak_bf16_tflops:g}); TDP {gpu.tdp_w:g} W.",
             "", "| model | batch × seq | TFLOP/step | predicted ms | one-stream eager predicted ms | measured ms | "
             "predicted / measured | one-stream / measured |",
             "|---|---|---|---|---|---|---|---|"]
    sizes = {m: (b, s) for m, b, s in MODELS}
    for name in [m for m in args.models.split(",") if m]:
        b, s = sizes.get(name, (8, 512))
        if time.monotonic() - t0 > args.time_limit_s:
            lines.append(f"| {name} | {b} × {s} | — | — | — | skipped: past --time-limit-s {args.time_limit_s:g} | — | — |")
            continue
        try:
            lines.append(_row(name, b, s, gpu, device, args, card))
        except Exception as exc:  # a model that cannot be traced is reported, the run goes on
            lines.append(f"| {name} | {b} × {s} | — | — | — | failed: {type(exc).__name__}: {str(exc)[:160]} | — | — |")
        print(lines[-1], file=sys.stderr, flush=True)
    if not device:
        lines += ["", "No CUDA device: predictions only; the measured column waits for a machine with a GPU "
                  "(run this script there)."]
    lines += ["", f"whole run {time.monotonic() - t0:.0f} s"]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
