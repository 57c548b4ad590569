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

Nothing here is fitted to the published figures; the derivations are in `constants.SOURCES`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from adopter.wham.constants import (
    BATCHNORM_BACKWARD_EXTRA_READS,
    BATCHNORM_FORWARD_EXTRA_READS,
    BYTES_PER_ELEMENT,
)
from adopter.wham.cost import BANDWIDTH, VECTOR, OpCost, op_cost
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


def kernel_cost(op: Op, d: Design) -> OpCost:
    """Latency of `op` as one GPU kernel: `op_cost` with the batch-norm re-reads added to its traffic."""
    base = op_cost(op, d)
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
    kernels, seconds per bounding resource, and the seconds the batch-norm re-reads add."""

    fb_s: float
    opt_s: float
    kernels: int
    by_bound: tuple[tuple[str, float], ...]
    batchnorm_extra_s: float


def serial_step(work: Workload, d: Design) -> GpuStep:
    """The step's kernels one after another on `d` (seconds at d's clock)."""
    hz = d.clock_mhz * 1e6
    fb = opt = extra = 0.0
    kernels = 0
    bound: dict[str, float] = defaultdict(float)
    per_block: dict[int, list[tuple[str, str, float, float]]] = {}  # (phase, bound, cycles, extra cycles)
    for seg in work.segments:
        costs = per_block.get(seg.block)
        if costs is None:
            costs = per_block[seg.block] = []
            for op in work.blocks[seg.block].ops:
                c = kernel_cost(op, d)
                costs.append((op.phase, c.bound, c.cycles, c.cycles - op_cost(op, d).cycles))
        for phase, why, cycles, more in costs:
            if phase == "opt":
                opt += cycles / hz
            else:
                fb += cycles / hz
            bound[why] += cycles / hz
            extra += more / hz
            kernels += 1
    return GpuStep(fb, opt, kernels, tuple(sorted(bound.items(), key=lambda kv: -kv[1])), extra)
