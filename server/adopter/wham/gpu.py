"""A training step as a GPU runs it: every kernel on one stream, in issue order (bench/wham_gpu_published.py).

WHAM's scheduler (`schedule.py`) overlaps independent ops on separate tensor and vector pools, each op taking
the whole off-chip bandwidth while it runs: a dataflow accelerator's schedule. A GPU running a framework's
training step does not: PyTorch, TensorFlow and PaddlePaddle issue the step's kernels on one CUDA stream
(`constants.GPU_STREAMS` and its source), and kernels of one stream execute in issue order, one after
another. So the GPU's step is the *sum* of its kernels' latencies, not the DAG's makespan.

Each kernel's latency is `cost.op_cost` (the same systolic, vector and roofline model as the search), with
the traffic the real kernel adds to what the trace records:

* **Batch normalisation in training** (`batchnorm_extra_bytes`): the output of a normalisation needs the
  statistics of the whole channel over the batch, so a forward pass reads its input twice (statistics,
  then normalise) and a backward pass reads the output gradient and the input twice (the two channel sums
  Σdy and Σdy·x̂, then dx), whenever the input does not fit on chip (`Design.sram_mib`, the GPU's L2).
  The trace records one read of each.

* **Tile and wave quantization of GEMMs** (`gemm_kernel`, when the step is given a `TileModel`): a
  GPU GEMM (and an implicit-GEMM convolution, M = N·P·Q, N = K, K = C·R·S) cuts its output into thread-block
  tiles, runs one tile per SM stepping through K a k-tile at a time, and schedules the tiles in waves of
  one per SM; a partial tile, a partial k-tile and a partial last wave cost full ones (NVIDIA's "Matrix
  Multiplication Background User's Guide", "Dimension Quantization Effects"). The tile is the fastest of
  cuBLAS's shapes for the GEMM (an ideal heuristic), each tile at the SM's achieved MAC rate or at its share
  of the L2 bandwidth feeding the tile's operand panels, whichever is lower; a GEMM with too few tiles to
  fill the SMs may split K (CUTLASS's split-K, its partial sums reduced by a second pass over memory).
  This replaces `op_cost`'s systolic fold model (K + PE_x + PE_y − 2 cycles a 16×16 fold), which describes a
  systolic array, not a GPU. Grouped convolutions are left at `op_cost` (no cited source says how cuDNN runs
  them; see `is_grouped_conv`).

Nothing here is fitted to the published figures; the derivations are in `constants.SOURCES`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from adopter.wham.constants import (
    BATCHNORM_BACKWARD_EXTRA_READS,
    BATCHNORM_FORWARD_EXTRA_READS,
    BYTES_PER_ELEMENT,
    LINK_GBS,
    SPLIT_K_PARTIAL_BYTES,
    TILES_PER_SM_WAVE,
)
from adopter.wham.cost import BANDWIDTH, TENSOR, VECTOR, OpCost, gemm_traffic_bytes, op_cost, vector_cycles
from adopter.wham.graph import Op, Workload
from adopter.wham.hardware import Design

# ATen's training batch-norm ops (forward, backward): the names the tracer records.
BATCHNORM_FORWARD = frozenset({"native_batch_norm", "_native_batch_norm_legit",
                               "_native_batch_norm_legit_functional", "cudnn_batch_norm"})
BATCHNORM_BACKWARD = frozenset({"native_batch_norm_backward", "cudnn_batch_norm_backward"})


def batchnorm_extra_bytes(op: Op, sram_mib: float) -> float:
    """Off-chip bytes a training batch-norm kernel reads beyond the trace's one read of each input.

    The normalised input x (`op.vector[0].elements` elements) must be read once for the channel statistics
    and again to normalise (forward: one extra read of x), and the backward reads dy and x once for Σdy and
    Σdy·x̂ and again for dx (two extra reads); 0 when x fits in the on-chip buffer (the second read hits it)
    or the op is not a batch norm."""
    if not op.vector:
        return 0.0
    name = op.vector[0].name.rstrip("_")
    if name in BATCHNORM_FORWARD:
        reads = BATCHNORM_FORWARD_EXTRA_READS
    elif name in BATCHNORM_BACKWARD:
        reads = BATCHNORM_BACKWARD_EXTRA_READS
    else:
        return 0.0
    x_bytes = BYTES_PER_ELEMENT * op.vector[0].elements
    if x_bytes <= sram_mib * 2**20:
        return 0.0
    return reads * x_bytes


@dataclass(frozen=True, slots=True)
class TileModel:
    """How a GPU runs a GEMM kernel: `sms` SMs, each running one thread-block tile at a time at
    `macs_per_sm_clock` (achieved, a full tile), fed by `l2_bytes_per_clock` of L2 read bandwidth shared by
    all SMs; `tiles` the M × N tile shapes the library chooses from, `k_tile` the K-step of its main loop."""

    sms: int
    macs_per_sm_clock: float
    l2_bytes_per_clock: float
    k_tile: int
    tiles: tuple[tuple[int, int], ...]
    tile_latency_cycles: float = 0.0  # a fixed cost per tile per wave (its first k-tile's load); 0: not modelled


def is_grouped_conv(op: Op) -> bool:
    """Whether `op` is a grouped convolution (the tracer records the groups as the GEMM batch)."""
    return op.batch > 1 and "convolution" in op.name


def tile_rate(tile: tuple[int, int], tm: TileModel) -> float:
    """MACs a clock one SM sustains on an `M_t × N_t` tile: the achieved Tensor Core rate, or the SM's share
    of the L2 bandwidth over the bytes each k-step reads ((M_t + N_t) elements for M_t · N_t MACs)."""
    mt, nt = tile
    l2 = tm.l2_bytes_per_clock / tm.sms * mt * nt / (BYTES_PER_ELEMENT * (mt + nt))
    return min(tm.macs_per_sm_clock, l2)


def tile_waves(op: Op, tile: tuple[int, int], sms: int) -> tuple[int, int]:
    """(tiles, waves) of a GEMM cut into `tile`s, one tile per SM at a time (`TILES_PER_SM_WAVE`)."""
    m, n, b = max(1, op.m), max(1, op.n), max(1, op.batch)
    tiles = b * math.ceil(m / tile[0]) * math.ceil(n / tile[1])
    return tiles, math.ceil(tiles / (sms * TILES_PER_SM_WAVE))


@dataclass(frozen=True, slots=True)
class GemmKernel:
    """A GEMM as the GPU runs it: Tensor Core cycles of its tiles' waves, the tile, the split-K factor, and the
    bytes of the split-K reduction (partial sums written and read back; 0 without a split)."""

    cycles: float
    tile: tuple[int, int]
    splits: int
    reduction_bytes: float


SPLIT_WAVES = 32  # wave counts whose filling split-K factor is tried (beyond them a last wave costs < 1/32)


def split_candidates(tiles: int, k_steps: int, slots: int) -> tuple[int, ...]:
    """Split-K factors worth trying for a GEMM of `tiles` output tiles and `k_steps` k-tiles on `slots` SMs:
    1, the powers of two, and for each wave count w ≤ `SPLIT_WAVES` the largest factor that still fits in
    w waves (⌊w · slots / tiles⌋: at a given wave count a larger factor only shortens each slice); each at
    most `k_steps` (a slice holds at least one k-tile). CUTLASS's split-K takes any factor."""
    got = {1}
    p = 2
    while p <= k_steps:
        got.add(p)
        p *= 2
    for w in range(1, SPLIT_WAVES + 1):
        s = w * slots // tiles
        if 1 <= s <= k_steps:
            got.add(s)
    return tuple(sorted(got))


def gemm_kernel(op: Op, tm: TileModel, memory_cycles: float = 0.0, bytes_per_cycle: float = math.inf,
                split_k: bool = True) -> GemmKernel:
    """The fastest way a GPU library runs a GEMM (an ideal heuristic): over the tiles of `tm` and the split-K
    factors s of `split_candidates` (CUTLASS's "parallel reduction splitK": K cut into s slices run as extra
    thread blocks, then a reduction kernel that writes and reads back the s partial sums,
    `SPLIT_K_PARTIAL_BYTES` an element), the one with the least max(compute, `memory_cycles`) + reduction
    bytes / `bytes_per_cycle`, then the least compute. Compute = waves × one full tile's time, K per slice
    rounded up to the k-tile (plus `tile_latency_cycles` a tile). `split_k=False`: s = 1 only."""
    m, n = max(1, op.m), max(1, op.n)
    k_steps = math.ceil(max(1, op.k) / tm.k_tile)
    best: tuple[float, float, GemmKernel] | None = None
    for tile in tm.tiles:
        tiles, _ = tile_waves(op, tile, tm.sms)
        per_step = tile[0] * tile[1] * tm.k_tile / tile_rate(tile, tm)
        for s in split_candidates(tiles, k_steps, tm.sms * TILES_PER_SM_WAVE) if split_k else (1,):
            waves = math.ceil(tiles * s / (tm.sms * TILES_PER_SM_WAVE))
            cycles = waves * (math.ceil(k_steps / s) * per_step + tm.tile_latency_cycles)
            red = (2 * s * SPLIT_K_PARTIAL_BYTES * m * n * max(1, op.batch)) if s > 1 else 0.0
            total = max(cycles, memory_cycles) + red / bytes_per_cycle
            if best is None or (total, cycles) < best[:2]:  # a memory-bound tie goes to the least compute
                best = (total, cycles, GemmKernel(cycles, tile, s, red))
    assert best is not None, "a TileModel needs at least one tile"
    return best[2]


def kernel_cost(op: Op, d: Design, tm: TileModel | None = None, link_gbs: float = LINK_GBS) -> OpCost:
    """Latency of `op` as one GPU kernel: `op_cost` with the batch-norm re-reads added to its traffic; with a
    `TileModel`, a GEMM's compute is its tiles' waves (`gemm_kernel`, split-K included) instead of the
    systolic model, and a split-K reduction's traffic is added after it; a tensor-parallel all-reduce
    (`kind == "comm"`) runs on a link of `link_gbs` GB/s each way (the GPUs' NVLink, given by the caller)."""
    if tm is not None and op.is_gemm and not is_grouped_conv(op):
        memory = gemm_traffic_bytes(op, d.sram_mib) / d.bytes_per_cycle
        g = gemm_kernel(op, tm, memory, d.bytes_per_cycle)
        compute = g.cycles + vector_cycles(op.vector, d.lanes_total)
        reduction = g.reduction_bytes / d.bytes_per_cycle
        if compute >= memory:
            return OpCost(compute + reduction, tm.sms, TENSOR, compute, memory + reduction)
        return OpCost(memory + reduction, tm.sms, BANDWIDTH, compute, memory + reduction)
    base = op_cost(op, d, link_gbs)
    extra = batchnorm_extra_bytes(op, d.sram_mib)
    if not extra:
        return base
    memory = base.memory_cycles + extra / d.bytes_per_cycle
    if base.compute_cycles >= memory:
        return OpCost(base.compute_cycles, base.cores, VECTOR, base.compute_cycles, memory)
    return OpCost(memory, base.cores, BANDWIDTH, base.compute_cycles, memory)


@dataclass(frozen=True, slots=True)
class GpuStep:
    """One training step on one GPU stream: seconds of forward+backward and of the optimizer, the number of
    kernels, seconds per bounding resource, the seconds the batch-norm re-reads add, and the seconds of the
    backward phase alone (a part of `fb_s`: what a bucketed gradient all-reduce can overlap)."""

    fb_s: float
    opt_s: float
    kernels: int
    by_bound: tuple[tuple[str, float], ...]
    batchnorm_extra_s: float
    bwd_s: float = 0.0


def serial_step(work: Workload, d: Design, tm: TileModel | None = None, launch_s: float = 0.0,
                link_gbs: float = LINK_GBS) -> GpuStep:
    """The step's kernels one after another on `d` (seconds at d's clock); GEMMs tiled by `tm` if given; each
    kernel costing `launch_s` more (a fixed start-up per kernel on one stream; 0: not modelled, the default,
    since no like-for-like figure exists for every GPU: docs/wham.md, "Validation"); `link_gbs`: each way on
    the link a tensor-parallel all-reduce crosses."""
    hz = d.clock_mhz * 1e6
    fb = opt = extra = bwd = 0.0
    kernels = 0
    bound: dict[str, float] = defaultdict(float)
    per_block: dict[int, list[tuple[str, str, float, float]]] = {}  # (phase, bound, cycles, extra cycles)
    for seg in work.segments:
        costs = per_block.get(seg.block)
        if costs is None:
            costs = per_block[seg.block] = []
            for op in work.blocks[seg.block].ops:
                c = kernel_cost(op, d, tm, link_gbs)
                more = c.cycles - op_cost(op, d, link_gbs).cycles if batchnorm_extra_bytes(op, d.sram_mib) else 0.0
                costs.append((op.phase, c.bound, c.cycles, more))
        for phase, why, cycles, more in costs:
            if phase == "opt":
                opt += cycles / hz + launch_s
            else:
                fb += cycles / hz + launch_s
                if phase == "bwd":
                    bwd += cycles / hz + launch_s
            bound[why] += cycles / hz
            if launch_s:
                bound["launch"] += launch_s
            extra += more / hz
            kernels += 1
    return GpuStep(fb, opt, kernels, tuple(sorted(bound.items(), key=lambda kv: -kv[1])), extra, bwd)
