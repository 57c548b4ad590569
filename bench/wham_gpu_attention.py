"""WHAM's GPU kernel model against a published A100 measurement of unfused (standard) attention (issue 23).

Usage: nice -n 10 python bench/wham_gpu_attention.py [--out FILE]

The BERT rows on A100 (bench/wham_gpu_published.py) are predicted 1.25–1.99× too fast, and on V100 the encoder layer's
residual (bench/wham_gpu_ops.py) is not one GEMM efficiency. One suspect is the attention's batched GEMMs (K = 64 for
QKᵀ, N = 64 for P·V), which the model costs at the bandwidth roofline. The one A100 measurement found of exactly those
kernels is the "PyTorch Attention" baseline of the FlashAttention paper (`FLASH`): Dao et al., "FlashAttention: Fast
and Memory-Efficient Exact Attention with IO-Awareness", NeurIPS 2022 (arXiv 2205.14135), Appendix E.6, "Full
Benchmarking Results": "8 heads of dimension 64, and batch size 16 on a machine with one A100 GPU with 40 GB of GPU
HBM", random Q, K, V (no projections), FP16, "the average of 100 measurements of the attention call", forward,
backward and both, by sequence length; Tables 18–20 without dropout or masking, Tables 15–17 with dropout 0.1. The
standard implementation is the paper's Algorithm 0 (Section 2.2): S = QKᵀ written to HBM, P = softmax(S) read and
written, O = PV, with dropout a separate kernel on P when enabled. The masking tables (9–14) are left out: the paper
does not say how the padding mask is applied (an add, `masked_fill`, or a fused kernel), so there is no kernel to
trace for it.

Per sequence length and variant this bench traces that attention (`attention`, `attention_dropout`: q, k, v of
[batch·heads, seq, 64], each differentiated; the softmax scale folded into the first GEMM as the authors' reference
`attention_pytorch` does with `baddbmm(alpha=...)`, Dao-AILab/flash-attention @0469c727
benchmarks/benchmark_flash_attention.py, so no kernel), costs every kernel with `gpu.kernel_cost` on the `A100 40GB` template and
its tile model (imported from bench/wham_gpu_published.py), and compares the sums with the tables. It also derives,
from the difference between the dropout and no-dropout tables, the dropout kernels' measured time, and so the
bandwidth an element-wise kernel achieves on that A100; and it bounds what the measurement allows for the GEMMs.
A last table is a what-if, not a model: the single-GPU A100 BERT rows of bench/wham_gpu_published.py with their
batched GEMMs slowed by the upper end of that bound at seq 1024 (the lower end is ×1: the softmax takes it all).
Rows at sequence ≤ 512 are shown but not used for conclusions: their times sit on a ~0.2 ms floor (0.21 ms at 128
and 0.22 ms at 256 for 16× the work), i.e. the host, not the kernels.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from adopter.wham.cuda_step import fused_dropout
from adopter.wham.gpu import is_grouped_conv, kernel_cost, serial_step
from adopter.wham.graph import build_workload
from adopter.wham.models import WorkloadSpec, trace_raw

BENCH = Path(__file__).resolve().parent
FLASH = "Dao et al., FlashAttention (NeurIPS 2022, arXiv 2205.14135), Appendix E.6"
BATCH, HEADS, HEAD_DIM = 16, 8, 64  # E.6 "Setup": 8 heads of dimension 64, batch size 16
DROPOUT = 0.1  # E.6 "Setup": "For dropout, we use dropout 0.1"
GPU = "A100 40GB"  # E.6 "Setup": "one A100 GPU with 40 GB of GPU HBM"
HOST_BOUND_SEQ = 512  # at and below: the ~0.2 ms floor of Tables 18–20 (see the module docstring)
SEQS = (128, 256, 512, 1024, 2048, 4096)
LOSS = "sum"  # the traced loss's reduction: the measured call has none (its backward starts from a given gradient)

# "PyTorch Attention" rows, ms, by sequence length 128 … 4096 (Table 18 also has 8192: 67.77 ms, forward only).
MEASURED_MS: dict[tuple[str, str], tuple[float, ...]] = {
    ("none", "fwd"): (0.21, 0.22, 0.43, 1.27, 4.32, 16.47),
    ("none", "bwd"): (0.26, 0.29, 0.78, 2.44, 8.82, 33.87),
    ("none", "fwd+bwd"): (0.67, 0.70, 1.18, 3.67, 13.22, 50.44),
    ("dropout", "fwd"): (0.26, 0.24, 0.57, 1.80, 6.56, 25.34),
    ("dropout", "bwd"): (0.44, 0.35, 0.90, 2.94, 10.77, 41.67),
    ("dropout", "fwd+bwd"): (0.66, 0.67, 1.43, 4.82, 17.47, 67.29),
}
TABLE = {("none", "fwd"): 18, ("none", "bwd"): 19, ("none", "fwd+bwd"): 20,
         ("dropout", "fwd"): 15, ("dropout", "bwd"): 16, ("dropout", "fwd+bwd"): 17}
VARIANTS = ("none", "dropout")
PASSES = ("fwd", "bwd", "fwd+bwd")


def _attention(batch: int, seq: int, dropout: float) -> tuple[Any, tuple[Any, ...], Any]:
    """The traced factory: Algorithm 0 on the meta device for `batch` sequences of `HEADS` heads (q, k, v of
    [batch·heads, seq, 64], requiring grad), loss = the output's sum (its backward is a broadcast, no kernel)."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    class Attention(nn.Module):
        """softmax(QKᵀ)·V, dropout on P when `dropout` > 0; the 1/√d scale is the first GEMM's alpha (no kernel).
        K and V are the module's parameters (the tracer differentiates parameters) and Q its input, requiring grad:
        the same kernels as three inputs requiring grad."""

        def __init__(self) -> None:
            super().__init__()
            self.k = nn.Parameter(torch.zeros(batch * HEADS, seq, HEAD_DIM))
            self.v = nn.Parameter(torch.zeros(batch * HEADS, seq, HEAD_DIM))

        def forward(self, q: torch.Tensor) -> torch.Tensor:
            p = F.softmax(torch.bmm(q, self.k.transpose(1, 2)), dim=-1)
            if dropout:
                p = F.dropout(p, dropout, training=True)
            return torch.bmm(p, self.v)

    with torch.device("meta"):
        model = Attention()
        q = torch.zeros(batch * HEADS, seq, HEAD_DIM, requires_grad=True)
    return model, (q,), lambda out: out.sum()


def attention(batch: int, seq: int) -> tuple[Any, tuple[Any, ...], Any]:
    """Tables 18–20's attention: no dropout, no mask."""
    return _attention(batch, seq, 0.0)


def attention_dropout(batch: int, seq: int) -> tuple[Any, tuple[Any, ...], Any]:
    """Tables 15–17's attention: dropout 0.1 on P, no mask."""
    return _attention(batch, seq, DROPOUT)


@dataclass(frozen=True, slots=True)
class Kernel:
    """One predicted kernel: phase ("fwd"/"bwd"), ATen name, whether it is a GEMM, µs, bytes in + out."""

    phase: str
    name: str
    gemm: bool
    us: float
    bytes: float


@cache
def kernels(variant: str, seq: int) -> tuple[Kernel, ...]:
    """The attention's kernels at `seq`, predicted on the A100 40GB template as bench/wham_gpu_published.py predicts a
    PyTorch run's (its tile model; PyTorch's CUDA dropout kernel); the optimizer's and the loss's kernels left out."""
    from wham_gpu_published import GPUS, TILES  # the same templates, not a copy of them

    factory = "attention" if variant == "none" else "attention_dropout"
    raw = fused_dropout(trace_raw(WorkloadSpec(f"wham_gpu_attention:{factory}", BATCH, seq, path=str(BENCH))))
    work = build_workload(raw, model=f"attention-{variant}", batch=BATCH, seq=seq, fuse=False)
    d, tm = GPUS[GPU], TILES[GPU]
    hz = d.clock_mhz * 1e6
    got: list[Kernel] = []
    for seg in work.segments:
        for op in work.blocks[seg.block].ops:
            if op.phase == "opt" or op.name.split(":")[0] == LOSS:
                continue
            c = kernel_cost(op, d, tm)
            got.append(Kernel(op.phase, op.name.split(":")[0], op.is_gemm, c.cycles / hz * 1e6,
                              op.bytes_in + op.bytes_out))
    return tuple(got)


def in_pass(k: Kernel, which: str) -> bool:
    """Whether kernel `k` belongs to `which` ("fwd", "bwd" or "fwd+bwd")."""
    return which == "fwd+bwd" or k.phase == which or (which == "bwd" and k.phase != "fwd")


def predicted_ms(ks: tuple[Kernel, ...], which: str, gemm: bool | None = None) -> float:
    """Milliseconds of the kernels of pass `which` (only GEMMs, only the others, or all when `gemm` is None)."""
    return sum(k.us for k in ks if in_pass(k, which) and (gemm is None or k.gemm == gemm)) / 1e3


def measured(variant: str, which: str, seq: int) -> float:
    """The published time (ms) of `variant`'s pass `which` at `seq`."""
    return MEASURED_MS[variant, which][SEQS.index(seq)]


def dropout_bandwidth(seq: int, which: str) -> tuple[float, float, float]:
    """(measured dropout ms, predicted dropout ms, achieved GB/s): the dropout kernels' time as the published
    difference between the dropout and the no-dropout table, their bytes (from the trace) over that time."""
    with_drop = kernels("dropout", seq)
    drop = [k for k in with_drop if in_pass(k, which) and "dropout" in k.name]
    meas = measured("dropout", which, seq) - measured("none", which, seq)
    pred = sum(k.us for k in drop) / 1e3
    nbytes = sum(k.bytes for k in drop)
    return meas, pred, nbytes / (meas * 1e-3) / 1e9


def chain_split(seq: int, which: str, vector_gbs: float) -> tuple[float, float]:
    """The two ends of what the no-dropout measurement of pass `which` at `seq` (GEMMs + softmax, one sum) allows:
    (the GEMMs' time ÷ the model's if the softmax kernels ran at `vector_gbs`, the softmax kernels' GB/s if the GEMMs
    ran as the model predicts)."""
    ks = kernels("none", seq)
    meas = measured("none", which, seq)
    soft_bytes = sum(k.bytes for k in ks if in_pass(k, which) and not k.gemm)
    gemm_ms = predicted_ms(ks, which, gemm=True)
    gemms_if_vector = meas - soft_bytes / (vector_gbs * 1e9) * 1e3
    return gemms_if_vector / gemm_ms, soft_bytes / ((meas - gemm_ms) * 1e-3) / 1e9


def rows_table() -> list[str]:
    """Per variant, pass and sequence length: measured, predicted (GEMMs + the rest), predicted / measured."""
    lines = ["| variant | pass | seq | measured (ms) | predicted (ms) | GEMMs | softmax + dropout | predicted / measured "
             "| kernels | source |", "|---|---|---|---|---|---|---|---|---|---|"]
    for variant in VARIANTS:
        for seq in SEQS:
            ks = kernels(variant, seq)
            for which in PASSES:
                meas, pred = measured(variant, which, seq), predicted_ms(ks, which)
                note = " (host-bound)" if seq <= HOST_BOUND_SEQ else ""
                lines.append(f"| {variant} | {which} | {seq}{note} | {meas} | {pred:.2f} | "
                             f"{predicted_ms(ks, which, gemm=True):.2f} | {predicted_ms(ks, which, gemm=False):.2f} | "
                             f"{pred / meas:.2f} | {sum(in_pass(k, which) for k in ks)} | {FLASH}, Table "
                             f"{TABLE[variant, which]}, row 'PyTorch Attention', column {seq} |")
    return lines


def split_table() -> list[str]:
    """The dropout kernels' measured bandwidth, and the two ends of the GEMM / softmax split it leaves open."""
    lines = ["| seq | pass | dropout: measured (ms, Table 15/16 − 18/19) | predicted | achieved (GB/s) | GEMMs + softmax: "
             "measured (ms, Table 18/19) | predicted | GEMMs ÷ predicted, softmax at the dropout's GB/s | softmax GB/s, "
             "GEMMs as predicted |", "|---|---|---|---|---|---|---|---|---|"]
    for seq in SEQS:
        if seq <= HOST_BOUND_SEQ:
            continue
        for which in ("fwd", "bwd"):
            meas, pred, gbs = dropout_bandwidth(seq, which)
            gemm_x, soft_gbs = chain_split(seq, which, gbs)
            lines.append(f"| {seq} | {which} | {meas:.2f} | {pred:.2f} | {gbs:.0f} | {measured('none', which, seq)} | "
                         f"{predicted_ms(kernels('none', seq), which):.2f} | {gemm_x:.2f} | {soft_gbs:.0f} |")
    return lines


def kernel_table(seq: int) -> list[str]:
    """The kernels at one sequence length (dropout variant), as the model costs them."""
    lines = ["| phase | operator | GEMM | bytes (MB) | predicted (µs) | GB/s at that time |", "|---|---|---|---|---|---|"]
    for k in kernels("dropout", seq):
        lines.append(f"| {k.phase} | {k.name} | {'yes' if k.gemm else ''} | {k.bytes / 1e6:.1f} | {k.us:.1f} | "
                     f"{k.bytes / k.us / 1e3:.0f} |")
    return lines


def batched_gemm_s(work: Any, gpu: str) -> float:
    """Seconds of a step's batched GEMMs (attention's QKᵀ and P·V and their gradients: a GEMM with a batch, not a
    grouped convolution) on `gpu`'s template, as `gpu.serial_step` sums them."""
    from wham_gpu_published import GPUS, TILES

    d, tm = GPUS[gpu], TILES[gpu]
    cycles = 0.0
    for seg in work.segments:
        for op in work.blocks[seg.block].ops:
            if op.is_gemm and op.batch > 1 and not is_grouped_conv(op):
                cycles += kernel_cost(op, d, tm).cycles
    return cycles / (d.clock_mhz * 1e6)


def bert_table() -> list[str]:
    """What-if, not a model: each single-GPU A100 BERT row of bench/wham_gpu_published.py with its batched GEMMs
    slowed by the forward and the backward GEMM factor at seq 1024 with the softmax at dropout's measured bandwidth
    (`chain_split`: the upper end; the lower end, the softmax taking it all, leaves the rows as they are)."""
    from wham_gpu_published import GPUS, ROWS, TILES, _allreduce_s, run_workload

    lo = min(chain_split(1024, w, dropout_bandwidth(1024, w)[2])[0] for w in ("fwd", "bwd"))
    hi = max(chain_split(1024, w, dropout_bandwidth(1024, w)[2])[0] for w in ("fwd", "bwd"))
    lines = [f"| row | predicted / measured | batched GEMMs' share of the predicted step | with them ×{lo:.2f} | "
             f"with them ×{hi:.2f} |", "|---|---|---|---|---|"]
    for row in ROWS:
        if row.model != "bert-large" or row.gpus != 1 or not row.gpu.startswith("A100"):
            continue
        work, d = run_workload(row), GPUS[row.gpu]
        gs = serial_step(work, d, TILES[row.gpu])
        step = gs.fb_s + (gs.opt_s + _allreduce_s(work.params, row, d)) / row.accumulation
        ratio, share = row.batch / step / row.measured, batched_gemm_s(work, row.gpu) / step
        cond = f" ({row.unmodelled.split(' (')[0]})" if row.unmodelled else ""
        lines.append(f"| {row.gpu} {row.batch}×{row.seq}{cond} | {ratio:.2f} | {share:.1%} | "
                     f"{ratio / (1 + share * (lo - 1)):.2f} | {ratio / (1 + share * (hi - 1)):.2f} |")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="write the tables (markdown) here as well")
    args = ap.parse_args()
    sys.path.insert(0, str(BENCH))
    text = "\n".join([f"## Standard attention on the {GPU} (batch {BATCH}, {HEADS} heads, head dim {HEAD_DIM}, FP16)",
                      "", *rows_table(), "", "## What the measurement says per kernel kind", "", *split_table(), "",
                      "## Kernels at seq 2048, dropout (as the model costs them)", "", *kernel_table(2048), "",
                      "## What-if: the single-GPU A100 BERT rows with their batched GEMMs at those factors", "",
                      *bert_table(), ""])
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
