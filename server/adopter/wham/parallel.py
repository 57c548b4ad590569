"""Distributed training: pipeline stages (balanced partition, per-stage top-k, global selection) and
Megatron-style tensor parallelism (sharded GEMMs, ring all-reduce)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from adopter.wham.constants import BYTES_PER_ELEMENT, NORMALISATIONS
from adopter.wham.evaluate import BlockTime, Evaluator
from adopter.wham.graph import Block, Op, Workload
from adopter.wham.hardware import Design, tdp_w


def partition(costs: Sequence[float], stages: int) -> tuple[tuple[int, ...], ...]:
    """Split a sequence into `stages` contiguous non-empty parts minimising the largest sum (PipeDream DP)."""
    n = len(costs)
    if not 1 <= stages <= n:
        raise ValueError(f"cannot split {n} segments into {stages} stages")
    prefix = [0.0]
    for c in costs:
        prefix.append(prefix[-1] + c)
    inf = float("inf")
    # best[s][i]: minimal max-stage cost of the first i segments in s stages; cut[s][i]: start of the last.
    best = [[inf] * (n + 1) for _ in range(stages + 1)]
    cut = [[0] * (n + 1) for _ in range(stages + 1)]
    best[0][0] = 0.0
    for s in range(1, stages + 1):
        for i in range(s, n - (stages - s) + 1):
            for j in range(s - 1, i):
                v = max(best[s - 1][j], prefix[i] - prefix[j])
                if v < best[s][i]:
                    best[s][i], cut[s][i] = v, j
    parts = []
    i = n
    for s in range(stages, 0, -1):
        j = cut[s][i]
        parts.append(tuple(range(j, i)))
        i = j
    return tuple(reversed(parts))


@dataclass(frozen=True, slots=True)
class PipelinePoint:
    """One replicated design evaluated over every stage of a pipeline."""

    design: Design
    stage_fb_s: tuple[float, ...]
    stage_opt_s: tuple[float, ...]
    step_s: float
    throughput: float
    tdp_w: float  # per device
    objective: float | None

    @property
    def perf_per_tdp(self) -> float:
        """Throughput per watt over all devices."""
        return self.throughput / (self.tdp_w * len(self.stage_fb_s))

    def to_json(self) -> dict[str, Any]:
        """JSON-able form."""
        return {"design": self.design.to_json(), "label": self.design.label(),
                "stage_fb_s": list(self.stage_fb_s), "stage_opt_s": list(self.stage_opt_s),
                "step_s": self.step_s, "throughput": self.throughput, "tdp_w": self.tdp_w,
                "perf_per_tdp": self.perf_per_tdp, "objective": self.objective}


def pipeline_step_s(fb: Sequence[float], opt: Sequence[float], microbatches: int) -> float:
    """1F1B / PipeDream-flush step: slowest stage × (m + S − 1) micro-batch slots, then the optimizer."""
    return max(fb) * (microbatches + len(fb) - 1) + max(opt)


def boundary_bytes(work: Workload, segments: Sequence[int]) -> float:
    """Bytes a pipeline stage made of `segments` sends to the next one per micro-batch: the output of its last
    segment's last forward op (the activation; its gradient comes back the same size)."""
    if not segments:
        return 0.0
    block = work.blocks[work.segments[segments[-1]].block]
    fwd = [op for op in block.ops if op.phase == "fwd"]
    return fwd[-1].bytes_out if fwd else 0.0


def evaluate_pipeline(
    design: Design, stage_evaluators: Sequence[Evaluator], microbatches: int, global_batch: int,
    objective: str, min_throughput: float,
) -> PipelinePoint:
    """A replicated design over every stage (uses the stage evaluators' block timing; not counted)."""
    cache: dict[int, BlockTime] = {}
    fb, opt = [], []
    f = design.clock_mhz * 1e6
    for ev in stage_evaluators:
        t_fb = t_opt = 0.0
        for s in ev.segments or ():
            b = ev.workload.segments[s].block
            if b not in cache:
                cache[b] = ev.block_times_for(design, b)
            t_fb += cache[b].fb / f
            t_opt += cache[b].opt / f
        fb.append(t_fb)
        opt.append(t_opt)
    # The interconnect between stages: per micro-batch, each boundary carries the activation forward and
    # its gradient back over the chip-to-chip link (stage i sends the activation, stage i + 1 the
    # gradient); counted on the stage's time, without overlap with its compute (conservative).
    for i in range(len(stage_evaluators) - 1):
        ev = stage_evaluators[i]
        link_s = boundary_bytes(ev.workload, ev.segments or ()) / (ev.link_gbs * 1e9)
        fb[i] += link_s
        fb[i + 1] += link_s
    step = pipeline_step_s(fb, opt, microbatches)
    thr = global_batch / step if step > 0 else math.inf
    tdp = tdp_w(design)
    value: float | None = thr if objective == "throughput" else thr / (tdp * len(fb))
    if objective == "perf-per-tdp" and thr < min_throughput:
        value = None
    return PipelinePoint(design, tuple(fb), tuple(opt), step, thr, tdp, value)


# --- tensor parallelism --------------------------------------------------------------------------------

def _shard_gemm(op: Op, t: int) -> Op:
    """Megatron split of one GEMM over `t` devices: heads (batched GEMMs) or the larger weight dim."""
    m, n, k, b = op.m, op.n, op.k, op.batch
    if b >= t:
        b = math.ceil(b / t)
    elif n >= k:
        n = math.ceil(n / t)
    else:
        k = math.ceil(k / t)
    return replace(op, m=m, n=n, k=k, batch=b, flops=op.flops / t, bytes_in=op.bytes_in / t,
                   bytes_out=op.bytes_out / t,
                   vector=tuple(replace(w, elements=math.ceil(w.elements / t)) for w in op.vector))


def residual_stream(block: Block) -> set[int]:
    """Element counts of a transformer block's residual stream: its normalisations' (a traced LayerNorm counts
    its per-row mean and rstd outputs too) and its output's, the last forward op's (the stream a pre-norm
    layer's final residual add writes; the activation `boundary_bytes` sends on)."""
    out = [op for op in block.ops if op.phase == "fwd" and op.kind != "comm"]
    sizes = {w.elements for op in block.ops for w in op.vector if w.name in NORMALISATIONS}
    if out:
        sizes.add(int(out[-1].bytes_out / BYTES_PER_ELEMENT))
    return sizes


def on_residual_stream(op: Op, residual: set[int]) -> bool:
    """Whether a vector op works on the residual stream: a normalisation or its backward, or an op over the
    stream's element count (the residual add and its dropout, their gradients, the replicated bias's)."""
    return op.kind == "vector" and op.phase != "opt" and any(
        w.elements in residual or w.name.removesuffix("_backward") in NORMALISATIONS for w in op.vector)


def stream_ops(block: Block) -> set[int]:
    """Indices of a transformer block's ops on the residual stream (`on_residual_stream`), less those that read
    only the attention's batched GEMMs over heads: the Q, K and V bias gradients have the stream's element count
    but belong to the column-parallel QKV projection, split like it."""
    residual = residual_stream(block)
    ops = block.ops
    return {i for i, op in enumerate(ops) if on_residual_stream(op, residual)
            and not (op.deps and all(ops[d].is_gemm and ops[d].batch > 1 for d in op.deps))}


def shard_block(block: Block, t: int) -> Block:
    """A transformer block split over `t` devices, with its all-reduces; other blocks are unchanged.

    Only blocks with a softmax (attention) are split. Vector ops on the residual stream (`on_residual_stream`:
    the LayerNorms, the bias-dropout-add after each sub-layer, their backward) stay replicated, as in Megatron
    without sequence parallelism (Megatron-LM @de7dc40f megatron/model/transformer.py lines 445-520: each
    runs on the all-reduced [s, b, h] tensor on every tensor-parallel rank); one all-reduce of the residual
    follows each sub-layer in forward and one in backward (one per normalisation in the block).
    """
    names = {w.name for op in block.ops for w in op.vector}
    if t <= 1 or "_softmax" not in names:
        return block
    residual = residual_stream(block)
    stream = stream_ops(block)
    norms = sum(1 for op in block.ops for w in op.vector if w.name in NORMALISATIONS and op.phase == "fwd")
    ops: list[Op] = []
    for i, op in enumerate(block.ops):
        if op.is_gemm:
            ops.append(_shard_gemm(op, t))
        elif op.phase == "opt" or i not in stream:
            ops.append(replace(op, flops=op.flops / t, bytes_in=op.bytes_in / t, bytes_out=op.bytes_out / t,
                               vector=tuple(replace(w, elements=math.ceil(w.elements / t), rows=math.ceil(
                                   w.rows / t)) for w in op.vector)))
        else:
            ops.append(op)
    payload = float(max(residual, default=0) * BYTES_PER_ELEMENT)
    for phase in ("fwd", "bwd"):
        last = max((i for i, op in enumerate(ops) if op.phase == phase), default=None)
        prev = last
        for _ in range(max(1, norms)):
            deps = (prev,) if prev is not None else ()
            ops.append(Op(name=f"all-reduce ({phase})", kind="comm", phase=phase, flops=0.0, bytes_in=payload,
                          bytes_out=0.0, deps=deps, m=t))
            prev = len(ops) - 1
    return Block(tuple(ops))


def shard_workload(work: Workload, t: int) -> Workload:
    """The per-device workload of `t`-way tensor parallelism."""
    if t <= 1:
        return work
    return replace(work, blocks=tuple(shard_block(b, t) for b in work.blocks))
