"""WHAM's GPU kernel model against a published per-operator measurement of a BERT-large encoder layer (issue 23).

Usage: nice -n 10 python bench/wham_gpu_ops.py [--out FILE]

Whole-step throughput (bench/wham_gpu_published.py) cannot say which kernels the model gets wrong. The one
per-operator source found for a BERT(-large) training step on a real GPU whose measurements are published as text is
Ivanov et al.'s Substation repository (spcl/substation @9ae8698, the code of "Data Movement Is All You Need",
MLSys 2021), measured on Lassen's V100-SXM2 (`SUBSTATION` below):

* the whole encoder layer: README.md, "Current Performance": PyTorch's BERT-large encoder layer, batch 8 × seq 512:
  9.14 ms; batch 96 × seq 128: 18.43 ms. The PyTorch baseline is pytorch_profiling/transformer_layer.py
  `time_encoder`: `torch.nn.TransformerEncoderLayer(1024, 16, dim_feedforward=4096)` (ReLU, dropout 0.1, train
  mode), `.half()` with --fp fp16, timed as forward + backward (+ `zero_grad`) after a GPU wait kernel that hides
  the launch latency (pytorch_profiling/profiling.py `time_one`);
* single kernels: pytorch_module/perf_*.txt, the authors' own fused memory-bound kernels timed in every data
  layout at batch 8 × seq 512 (the inputs and outputs each perf_*.py allocates, FP16), of which we take the best
  layout: the softmax over [16, 8, 512, 512] (the same work as PyTorch's `_softmax`), dropout + residual +
  LayerNorm ("drln"), bias + dropout + residual + LayerNorm ("bdrln") over [8, 512, 1024], bias + activation +
  dropout ("bad") over [8, 512, 4096].

The paper's own per-operator table (PyTorch's kernels one by one, % of peak) is not reachable as text from here
(docs/notes/wham10.md lists what was searched). So the comparison is (1) the layer, per phase and per operator class
(tensor contractions, statistical normalisations, element-wise: the paper's classes), predicted by the same kernel
model as the throughput bench (`gpu.kernel_cost` on the V100 template with its tile model, PyTorch's CUDA dropout
kernel), against the measured layer; and (2) each measured kernel's achieved bandwidth (its FP16 inputs and outputs
over its time) against the copy bandwidth every memory-bound kernel is charged at (`constants.V100_HBM_COPY_GBS`).

The layer is traced as PyTorch 1.x ran it (torch/nn/functional.py `multi_head_attention_forward`: one in-projection
GEMM chunked into q, k, v, q scaled, `bmm`, `softmax`, `dropout`, `bmm`, the output projection, and with
`need_weights` left True by `TransformerEncoderLayer.forward` the head-averaged weights `sum(dim=1) / num_heads`),
unfused (eager), the input requiring grad as `time_encoder`'s does. The `.contiguous()` copies of k, v and the
attention output are real kernels on a GPU but free in the tracer (`trace._FREE`); their bytes are shown apart.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from adopter.wham import constants as C
from adopter.wham.cuda_step import fused_dropout
from adopter.wham.gpu import kernel_cost
from adopter.wham.graph import Op, build_workload
from adopter.wham.models import WorkloadSpec, trace_raw

BENCH = Path(__file__).resolve().parent
SUBSTATION = "spcl/substation @9ae8698"
EMBED, HEADS, FFN = 1024, 16, 4096  # BERT-large (README: h16-e1024; transformer_layer.py: 4 × embed)

TENSOR, NORM, ELEMENTWISE = "tensor contraction", "statistical normalization", "element-wise"
NORM_OPS = ("softmax", "layer_norm", "sum", "mean", "var")  # reductions whose result is then mapped (the paper's class)


@dataclass(frozen=True, slots=True)
class LayerRun:
    """One measured encoder-layer time: batch, sequence, milliseconds (forward + backward), where published."""

    batch: int
    seq: int
    measured_ms: float
    source: str


@dataclass(frozen=True, slots=True)
class KernelRun:
    """One measured fused kernel: what it computes, the FP16 elements it reads and writes, microseconds (best layout)."""

    name: str
    what: str
    elements_in: int
    elements_out: int
    measured_us: float
    source: str


LAYERS = (
    LayerRun(8, 512, 9.14, f"{SUBSTATION} README.md, 'BERT-large, batch size 8, max sequence length 512 runtime', "
                           "column PyTorch"),
    LayerRun(96, 128, 18.43, f"{SUBSTATION} README.md, 'BERT-large, batch size 96, max sequence length 128 "
                             "runtime', column PyTorch"),
)
# The paper's Table 1, "Proportions for operator classes in PyTorch", column "% Runtime" (% flop: 99.80, 0.17, 0.03).
# Its figures are at batch 8 × seq 512: the same copies give Figure 1's MHA at 43 Gflop, and 4 projections of
# 2·8·512·1024² plus QKᵀ and P·V of 2·8·16·512²·64 each make 42.9 Gflop (at 96 × 128 the projections alone are 103).
CLASS_SHARES = ((TENSOR, 61.0), (NORM, 25.5), (ELEMENTWISE, 13.5))
CLASS_SOURCE = ("Ivanov et al., 'Data Movement Is All You Need', MLSys 2021, Table 1 'Proportions for operator classes "
                "in PyTorch', column '% Runtime', as reproduced (with the '% flop' column 99.80 / 0.17 / 0.03) in "
                "Stanford CS336 lecture 3's slides, credited '[Ivanov et al 2023]'; the paper's text was not reachable")
_ATT = HEADS * 8 * 512 * 512  # [H, B, J, K] of perf_softmax.py
_ROW = 8 * 512 * EMBED  # [B, J, N] of perf_drln.py / perf_bdrln.py
_FF = 8 * 512 * FFN  # [B, S, U] of perf_bad.py
KERNELS = (
    KernelRun("softmax", "softmax over the last axis (PyTorch's _softmax)", _ATT, _ATT, 187.9737,
              f"{SUBSTATION} pytorch_module/perf_softmax.txt, fastest of 576 layouts (row 'softmax HBJK -> JBHK')"),
    KernelRun("drln", "dropout + residual + LayerNorm (in, resid -> out)", 2 * _ROW, _ROW, 50.7992,
              f"{SUBSTATION} pytorch_module/perf_drln.txt, fastest of 216 layouts (row 'OUT JBN IN BJN RESID BJN')"),
    KernelRun("bdrln", "bias + dropout + residual + LayerNorm (in, resid -> out)", 2 * _ROW, _ROW, 51.5326,
              f"{SUBSTATION} pytorch_module/perf_bdrln.txt, fastest of 216 layouts (row 'OUT JBN IN BJN RESID BJN')"),
    KernelRun("bad", "bias + activation + dropout (in -> out)", _FF, _FF, 91.4514,
              f"{SUBSTATION} pytorch_module/perf_bad.txt, fastest of 36 layouts (row 'IN SBU OUT BSU')"),
)


def encoder_layer(batch: int, seq: int) -> tuple[Any, tuple[Any, ...], Any]:
    """The traced factory: PyTorch 1.x's `TransformerEncoderLayer(1024, 16, 4096)` step on the meta device, input
    (seq, batch, embed) requiring grad, loss = the output's sum (its backward is a broadcast, no kernel)."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    class EncoderLayer(nn.Module):
        """`nn.TransformerEncoderLayer` with `multi_head_attention_forward` written out as PyTorch 1.x ran it."""

        def __init__(self) -> None:
            super().__init__()
            self.in_proj = nn.Linear(EMBED, 3 * EMBED)
            self.out_proj = nn.Linear(EMBED, EMBED)
            self.linear1, self.linear2 = nn.Linear(EMBED, FFN), nn.Linear(FFN, EMBED)
            self.norm1, self.norm2 = nn.LayerNorm(EMBED), nn.LayerNorm(EMBED)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            length, bsz, _ = x.shape
            hd = EMBED // HEADS
            q, k, v = self.in_proj(x).chunk(3, dim=-1)
            q = (q * hd ** -0.5).contiguous().view(length, bsz * HEADS, hd).transpose(0, 1)
            k = k.contiguous().view(length, bsz * HEADS, hd).transpose(0, 1)
            v = v.contiguous().view(length, bsz * HEADS, hd).transpose(0, 1)
            w = F.dropout(F.softmax(torch.bmm(q, k.transpose(1, 2)), dim=-1), 0.1, training=True)
            a = torch.bmm(w, v).transpose(0, 1).contiguous().view(length, bsz, EMBED)
            a = self.out_proj(a)
            _averaged = w.view(bsz, HEADS, length, length).sum(dim=1) / HEADS  # need_weights=True: computed, unused
            x = self.norm1(x + F.dropout(a, 0.1, training=True))
            y = self.linear2(F.dropout(F.relu(self.linear1(x)), 0.1, training=True))
            return self.norm2(x + F.dropout(y, 0.1, training=True))  # type: ignore[no-any-return]

    with torch.device("meta"):
        model = EncoderLayer()
        x = torch.zeros(seq, batch, EMBED, requires_grad=True)
    return model, (x,), lambda out: out.sum()


def op_class(op: Op) -> str:
    """The paper's operator class of a kernel."""
    if op.is_gemm:
        return TENSOR
    name = op.name.split(":")[0]
    return NORM if any(n in name for n in NORM_OPS) else ELEMENTWISE


@dataclass(frozen=True, slots=True)
class OpTime:
    """One predicted kernel of the layer: phase, name, class, microseconds, bytes moved, bounding resource."""

    phase: str
    name: str
    cls: str
    us: float
    bytes: float
    bound: str


def layer_kernels(batch: int, seq: int) -> list[OpTime]:
    """The layer's forward and backward kernels (no optimizer: the measured run times no step), predicted on the
    V100 template as bench/wham_gpu_published.py predicts a PyTorch run's kernels."""
    from wham_gpu_published import GPUS, TILES  # the same templates, not a copy of them

    raw = fused_dropout(trace_raw(WorkloadSpec("wham_gpu_ops:encoder_layer", batch, seq, path=str(BENCH))))
    work = build_workload(raw, model="encoder-layer", batch=batch, seq=seq, fuse=False)
    d, tm = GPUS["V100 32GB"], TILES["V100 32GB"]
    hz = d.clock_mhz * 1e6
    got: list[OpTime] = []
    for seg in work.segments:
        for op in work.blocks[seg.block].ops:
            if op.phase == "opt":
                continue
            c = kernel_cost(op, d, tm)
            got.append(OpTime(op.phase, op.name.split(":")[0], op_class(op), c.cycles / hz * 1e6,
                              op.bytes_in + op.bytes_out, c.bound))
    return got


def measured_fraction(o: OpTime) -> float:
    """The fraction of the copy bandwidth the measured fused kernel of `o`'s kind achieved (`KERNELS`): softmax for a
    softmax, the LayerNorm kernel for a LayerNorm, the element-wise one for any other memory-bound vector kernel;
    1 for a GEMM or a compute-bound kernel (no per-kernel measurement of those)."""
    if o.cls == TENSOR or o.bound != "bandwidth":
        return 1.0
    pick = "softmax" if "softmax" in o.name else "drln" if "layer_norm" in o.name else "bad"
    k = next(k for k in KERNELS if k.name == pick)
    achieved = 2 * (k.elements_in + k.elements_out) / k.measured_us / 1e3
    return min(1.0, achieved / C.V100_HBM_COPY_GBS)


def free_copy_us(batch: int, seq: int) -> float:
    """Microseconds of the `.contiguous()` copies the tracer leaves out, at the copy bandwidth: forward k, v and the
    attention output ([seq, batch, embed] each, read + write at 2 bytes), and their gradients' copies backward."""
    elements = seq * batch * EMBED
    return 6 * 2 * 2 * elements / (C.V100_HBM_COPY_GBS * 1e9) * 1e6


def layer_table() -> list[str]:
    """Per layer run: predicted vs measured, by phase and by operator class; then the per-operator detail."""
    lines = ["| batch × seq | measured (ms) | predicted (ms) | predicted / measured | forward | backward | "
             f"{TENSOR} | {NORM} | {ELEMENTWISE} | kernels | .contiguous copies not traced | "
             "memory-bound kernels at the measured bandwidths (ms; / measured) | source |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    detail: list[str] = []
    for run in LAYERS:
        ops = layer_kernels(run.batch, run.seq)
        total = sum(o.us for o in ops) / 1e3
        by_phase: dict[str, float] = defaultdict(float)
        by_cls: dict[str, float] = defaultdict(float)
        for o in ops:
            by_phase[o.phase] += o.us / 1e3
            by_cls[o.cls] += o.us / 1e3
        slowed = sum(o.us / measured_fraction(o) for o in ops) / 1e3
        share = {k: f"{v:.2f} ms ({100 * v / total:.0f}%)" for k, v in by_cls.items()}
        lines.append(f"| {run.batch} × {run.seq} | {run.measured_ms} | {total:.2f} | {total / run.measured_ms:.2f} | "
                     f"{by_phase['fwd']:.2f} | {by_phase['bwd']:.2f} | {share.get(TENSOR, '0')} | "
                     f"{share.get(NORM, '0')} | {share.get(ELEMENTWISE, '0')} | {len(ops)} | "
                     f"{free_copy_us(run.batch, run.seq) / 1e3:.2f} ms | {slowed:.2f} ({slowed / run.measured_ms:.2f}) | "
                     f"{run.source} |")
        detail += ["", f"Per operator, batch {run.batch} × seq {run.seq} (V100 template, µs):", "",
                   "| phase | operator | class | bytes (MB) | predicted (µs) | bound |", "|---|---|---|---|---|---|"]
        detail += [f"| {o.phase} | {o.name} | {o.cls} | {o.bytes / 1e6:.1f} | {o.us:.1f} | {o.bound} |" for o in ops]
    return lines + detail


def class_table() -> list[str]:
    """Batch 8 × seq 512: each operator class's measured time (the paper's runtime share × the measured layer) against
    the model's. The shares come from the paper's own profile; that its total is README's 9.14 ms is an assumption."""
    run = next(r for r in LAYERS if (r.batch, r.seq) == (8, 512))
    by_cls: dict[str, float] = defaultdict(float)
    for o in layer_kernels(run.batch, run.seq):
        by_cls[o.cls] += o.us / 1e3
    lines = ["| operator class | runtime share (%) | measured (ms, share × 9.14) | predicted (ms) | predicted / measured "
             "| measured − predicted (ms) | source |", "|---|---|---|---|---|---|---|"]
    for cls, pct in CLASS_SHARES:
        meas = pct / 100 * run.measured_ms
        lines.append(f"| {cls} | {pct} | {meas:.2f} | {by_cls[cls]:.2f} | {by_cls[cls] / meas:.2f} | "
                     f"{meas - by_cls[cls]:.2f} | {CLASS_SOURCE} |")
    return lines


def kernel_table() -> list[str]:
    """Each measured fused kernel: its FP16 bytes over its time, against the copy bandwidth the model charges."""
    lines = ["| kernel | computes | bytes (MB, FP16 in + out) | measured (µs) | achieved (GB/s) | "
             "model's bandwidth (GB/s) | predicted (µs) | predicted / measured | source |",
             "|---|---|---|---|---|---|---|---|---|"]
    for k in KERNELS:
        b = 2 * (k.elements_in + k.elements_out)
        pred = b / (C.V100_HBM_COPY_GBS * 1e9) * 1e6
        lines.append(f"| {k.name} | {k.what} | {b / 1e6:.1f} | {k.measured_us:.1f} | {b / k.measured_us / 1e3:.0f} | "
                     f"{C.V100_HBM_COPY_GBS:.0f} | {pred:.1f} | {pred / k.measured_us:.2f} | {k.source} |")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="write the tables (markdown) here as well")
    args = ap.parse_args()
    sys.path.insert(0, str(BENCH))
    text = "\n".join(["## Encoder layer (V100-SXM2, PyTorch FP16)", "", *layer_table(), "",
                      "## Per operator class, batch 8 × seq 512 (the paper's runtime shares)", "", *class_table(), "",
                      "## Measured fused kernels (V100-SXM2, batch 8 × seq 512)", "", *kernel_table(), ""])
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
