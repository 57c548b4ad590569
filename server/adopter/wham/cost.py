"""Per-op latency on a design: systolic GEMM model, vector-op model, roofline memory bound.

GEMM on tensor cores: `ceil(tiles / cores) · (K + PE_x + PE_y − 2)` cycles, tiles = batch · ⌈M/PE_x⌉ · ⌈N/PE_y⌉
split over `cores = min(n_tc, tiles)` (see `gemm_compute_cycles` for the derivation); off-chip traffic from SRAM blocking (three T×T tiles fit the
global buffer); latency = max(compute, traffic / bandwidth). Vector ops: `⌈N / lanes⌉ · c_op` cycles
plus a log-depth row reduction for softmax; also bandwidth-bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from adopter.wham.constants import BYTES_PER_ELEMENT, LINK_GBS, VECTOR_CYCLES, VECTOR_CYCLES_DEFAULT
from adopter.wham.graph import Op, VectorWork
from adopter.wham.hardware import Design

# Why an op takes the time it does (the resource on its critical path).
TENSOR, VECTOR, BANDWIDTH, SRAM, LINK = "tensor", "vector", "bandwidth", "sram", "link"
POOL = {"gemm": 0, "vector": 1, "comm": 2}  # scheduler pool of each op kind


@dataclass(frozen=True, slots=True)
class OpCost:
    """Latency of one op in cycles, the cores it occupies, and its bounding resource."""

    cycles: float
    cores: int
    bound: str
    compute_cycles: float
    memory_cycles: float


def vector_cycles(work: tuple[VectorWork, ...], lanes_total: int) -> float:
    """Cycles of a chain of vector work on `lanes_total` lanes."""
    total = 0.0
    for w in work:
        c = VECTOR_CYCLES.get(w.name.rstrip("_"), VECTOR_CYCLES_DEFAULT)
        total += math.ceil(w.elements / lanes_total) * c
        if w.rows:
            cols = max(1, w.elements // w.rows)
            total += math.ceil(w.rows / lanes_total) * math.ceil(math.log2(cols)) if cols > 1 else 0
    return total


def gemm_fold_cycles(k: int, pe_x: float, pe_y: float) -> float:
    """Cycles of one output-stationary fold (one PE_x × PE_y output tile) with a reduction depth of K.

    Derived from SCALE-Sim 3.0's output-stationary dataflow (scalesim/compute/systolic_compute_os.py,
    `create_ifmap_demand_mat`/`create_ofmap_demand_mat`): with Sr = M output rows on the array's rows,
    Sc = N output columns on its columns and T = K, each of the ⌈Sr/rows⌉ · ⌈Sc/cols⌉ folds streams T operand
    rows, then `cols − 1` idle rows (the inter-fold gap while the last partial sums reach the array's edge),
    and the whole fold is skewed by `rows − 1` rows for the systolic fill: T + rows + cols − 2 cycles a fold,
    folds run back to back with no overlap. A partly used fold (M or N not a multiple of the array) costs
    the same as a full one (its idle PEs still take the skew). On SCALE-Sim's own runs this reproduces its
    compute cycles to within one cycle per layer (its report counts from cycle 0); see
    docs/notes/wham_scalesim.md.
    """
    return k + pe_x + pe_y - 2


def gemm_compute_cycles(op: Op, d: Design) -> tuple[float, int]:
    """(tensor-core cycles, cores used) of a GEMM: its folds split evenly over `min(n_tc, folds)` cores,
    each core running its share back to back (`gemm_fold_cycles` a fold)."""
    m, n, k, b = max(1, op.m), max(1, op.n), max(1, op.k), max(1, op.batch)
    tiles = b * math.ceil(m / d.pe_x) * math.ceil(n / d.pe_y)
    cores = min(d.n_tc, tiles)
    return math.ceil(tiles / cores) * gemm_fold_cycles(k, d.pe_x, d.pe_y), cores


def gemm_traffic_bytes(op: Op, sram_mib: float) -> float:
    """Off-chip bytes of a GEMM with output-stationary blocking in a global buffer of `sram_mib` MiB."""
    m, n, k, b = max(1, op.m), max(1, op.n), max(1, op.k), max(1, op.batch)
    elems = sram_mib * 2**20 / BYTES_PER_ELEMENT
    t = max(1, math.isqrt(int(elems // 3)))
    # A is re-read once per column block of B, B once per row block of A (Hong & Kung style blocking).
    traffic = b * (m * k * math.ceil(n / t) + k * n * math.ceil(m / t) + m * n)
    compulsory = b * (m * k + k * n + m * n)
    return op.bytes_in + op.bytes_out + BYTES_PER_ELEMENT * (traffic - compulsory)


def allreduce_cycles(payload_bytes: float, degree: int, link_gbs: float, clock_mhz: float) -> float:
    """Ring all-reduce of `payload_bytes` over `degree` devices: 2 (n−1)/n · bytes / link bandwidth."""
    if degree <= 1:
        return 0.0
    seconds = 2.0 * (degree - 1) / degree * payload_bytes / (link_gbs * 1e9)
    return seconds * clock_mhz * 1e6


def op_cost(op: Op, d: Design, link_gbs: float = LINK_GBS) -> OpCost:
    """Latency of `op` on design `d` (cycles at d's clock); comm ops use the chip-to-chip link."""
    bpc = d.bytes_per_cycle
    if op.kind == "comm":
        cycles = allreduce_cycles(op.bytes_in, op.m, link_gbs, d.clock_mhz)
        return OpCost(cycles, 1, LINK, 0.0, cycles)
    if op.is_gemm:
        compute, cores = gemm_compute_cycles(op, d)
        compute += vector_cycles(op.vector, d.lanes_total)
        traffic = gemm_traffic_bytes(op, d.sram_mib)
        memory = traffic / bpc
        if compute >= memory:
            return OpCost(compute, cores, TENSOR, compute, memory)
        inflated = traffic > 1.1 * (op.bytes_in + op.bytes_out)
        return OpCost(memory, cores, SRAM if inflated else BANDWIDTH, compute, memory)
    elements = max((w.elements for w in op.vector), default=1)
    cores = min(d.n_vc, max(1, math.ceil(elements / d.lanes)))
    compute = vector_cycles(op.vector, cores * d.lanes)
    memory = (op.bytes_in + op.bytes_out) / bpc
    if compute >= memory:
        return OpCost(compute, cores, VECTOR, compute, memory)
    return OpCost(memory, cores, BANDWIDTH, compute, memory)
