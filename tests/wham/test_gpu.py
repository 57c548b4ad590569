"""The GPU step model (adopter.wham.gpu): kernels one after another on one stream; batch norm's second reads;
GEMMs as tiles in waves."""

from __future__ import annotations

import math

import pytest

from adopter.wham.constants import (
    BATCHNORM_BACKWARD_EXTRA_READS,
    BATCHNORM_FORWARD_EXTRA_READS,
    SPLIT_K_PARTIAL_BYTES,
)
from adopter.wham.cost import BANDWIDTH, gemm_traffic_bytes, op_cost
from adopter.wham.evaluate import Constraints, Evaluator
from adopter.wham.gpu import (
    TileModel,
    batchnorm_extra_bytes,
    gemm_kernel,
    is_grouped_conv,
    kernel_cost,
    serial_step,
    split_candidates,
    tile_rate,
    tile_waves,
)
from adopter.wham.graph import Op, VectorWork, build_workload
from adopter.wham.hardware import Design

from .synthetic import gemm, toy_workload, vec


def _design(sram_mib: float = 1.0, bw: float = 100.0) -> Design:
    return Design(4, 8, 8, 4, 16, sram_mib, bandwidth_gbs=bw, clock_mhz=1000.0)


def _bn(name: str, elements: int) -> Op:
    return Op(name, "vector", "fwd" if "backward" not in name else "bwd", float(elements), 2.0 * elements,
              2.0 * elements, (), vector=(VectorWork(name, elements),))


def test_the_one_stream_step_is_the_sum_of_every_kernel_and_never_shorter_than_the_overlapped_schedule() -> None:
    work = toy_workload(layers=3)
    d = _design()
    gs = serial_step(work, d)
    hz = d.clock_mhz * 1e6
    fb = sum(op_cost(op, d).cycles for s in work.segments for op in work.blocks[s.block].ops if op.phase != "opt")
    opt = sum(op_cost(op, d).cycles for s in work.segments for op in work.blocks[s.block].ops if op.phase == "opt")
    assert gs.fb_s == pytest.approx(fb / hz) and gs.opt_s == pytest.approx(opt / hz)
    assert gs.kernels == work.op_count() and gs.batchnorm_extra_s == 0.0
    assert sum(t for _, t in gs.by_bound) == pytest.approx(gs.fb_s + gs.opt_s)
    ev = Evaluator(work, "throughput", Constraints(math.inf, math.inf)).evaluate(d)
    assert gs.fb_s >= ev.fb_s * (1 - 1e-9) and gs.opt_s >= ev.opt_s * (1 - 1e-9)


def test_two_independent_kernels_run_one_after_the_other() -> None:
    # Two GEMMs with no dependence: WHAM's scheduler overlaps them on 4 tensor cores, one stream does not.
    raw = {"ops": [gemm("mm", 8, 8, 64, [], "s"), gemm("mm", 8, 8, 64, [], "s")], "params": 1}  # one core each
    work = build_workload(raw, model="two", batch=1, seq=1)
    d = _design(bw=1e6)
    one = op_cost(work.blocks[0].ops[0], d).cycles / (d.clock_mhz * 1e6)
    ev = Evaluator(work, "throughput", Constraints(math.inf, math.inf)).evaluate(d)
    assert ev.fb_s == pytest.approx(one)
    assert serial_step(work, d).fb_s == pytest.approx(2 * one)


def test_a_start_up_per_kernel_adds_once_per_kernel_in_its_phase_and_shows_as_its_own_bound() -> None:
    work = toy_workload(layers=3)
    d = _design()
    base, more = serial_step(work, d), serial_step(work, d, launch_s=2e-6)
    n_opt = sum(op.phase == "opt" for s in work.segments for op in work.blocks[s.block].ops)
    assert more.opt_s == pytest.approx(base.opt_s + n_opt * 2e-6)
    assert more.fb_s == pytest.approx(base.fb_s + (base.kernels - n_opt) * 2e-6)
    assert dict(more.by_bound)["launch"] == pytest.approx(base.kernels * 2e-6) and "launch" not in dict(base.by_bound)


@pytest.mark.parametrize(("name", "reads"), [("native_batch_norm", BATCHNORM_FORWARD_EXTRA_READS),
                                             ("_native_batch_norm_legit_functional", BATCHNORM_FORWARD_EXTRA_READS),
                                             ("native_batch_norm_backward", BATCHNORM_BACKWARD_EXTRA_READS)])
def test_batch_norm_rereads_its_input_when_it_does_not_fit_on_chip(name: str, reads: int) -> None:
    big = 1 << 20  # 2 MiB at 2 bytes an element: larger than a 1 MiB buffer
    assert batchnorm_extra_bytes(_bn(name, big), 1.0) == reads * 2 * big
    assert batchnorm_extra_bytes(_bn(name, big), 4.0) == 0.0  # fits in 4 MiB: the second read hits on chip
    d = _design(sram_mib=1.0)
    base, more = op_cost(_bn(name, big), d), kernel_cost(_bn(name, big), d)
    assert more.bound == BANDWIDTH
    assert more.cycles == pytest.approx(base.memory_cycles + reads * 2 * big / d.bytes_per_cycle)


def test_batch_norm_rereads_show_in_the_step_and_other_vector_ops_do_not_change() -> None:
    assert batchnorm_extra_bytes(_bn("native_layer_norm", 1 << 20), 1.0) == 0.0
    assert batchnorm_extra_bytes(_bn("add", 1 << 20), 1.0) == 0.0
    raw = {"ops": [vec("native_batch_norm", 1 << 20, [], "s"), vec("relu", 1 << 20, [0], "s")], "params": 1}
    work = build_workload(raw, model="bn", batch=1, seq=1, fuse=False)
    d = _design(sram_mib=1.0)
    gs = serial_step(work, d)
    hz = d.clock_mhz * 1e6
    assert gs.batchnorm_extra_s == pytest.approx(2 * (1 << 20) / d.bytes_per_cycle / hz)
    plain = sum(op_cost(op, d).cycles for op in work.blocks[0].ops) / hz
    assert gs.fb_s == pytest.approx(plain + gs.batchnorm_extra_s)


# --- GEMMs as GPU kernels: thread-block tiles in waves of one per SM (gpu.gemm_kernel). -----------------------

def _tiles(sms: int = 4, tiles: tuple[tuple[int, int], ...] = ((16, 16),), k_tile: int = 16,
           l2: float = math.inf, rate: float = 256.0) -> TileModel:
    return TileModel(sms, rate, l2, k_tile, tiles)


def _gemm(m: int, n: int, k: int, batch: int = 1, name: str = "mm") -> Op:
    return Op(name, "gemm", "fwd", 2.0 * m * n * k * batch, 2.0 * batch * (m * k + k * n), 2.0 * batch * m * n, (),
              m=m, n=n, k=k, batch=batch)


def test_one_row_past_a_full_wave_costs_a_second_wave() -> None:
    # 4 SMs, 16×16 tiles: M = 4·16 fills one wave exactly; M = 4·16 + 1 needs a fifth tile, a second wave
    # that costs as much as the first (a partial tile and a partial wave cost full ones).
    tm = _tiles()
    one_tile = 16 * 16 * 32 / 256.0  # a full tile's cycles at K = 32 (two k-tiles)
    full = gemm_kernel(_gemm(4 * 16, 16, 32), tm, split_k=False)
    past = gemm_kernel(_gemm(4 * 16 + 1, 16, 32), tm, split_k=False)
    assert tile_waves(_gemm(4 * 16, 16, 32), (16, 16), 4) == (4, 1)
    assert tile_waves(_gemm(4 * 16 + 1, 16, 32), (16, 16), 4) == (5, 2)
    assert full.cycles == pytest.approx(one_tile) and past.cycles == pytest.approx(2 * one_tile)
    # The roofline the old model stood on has no such step: 65/64 of the work, not twice the time.
    assert past.cycles / full.cycles == 2.0


def test_a_partial_k_tile_costs_a_full_one_and_a_batch_fills_the_same_waves() -> None:
    tm = _tiles()
    assert gemm_kernel(_gemm(16, 16, 17), tm, split_k=False).cycles == gemm_kernel(_gemm(16, 16, 32), tm,
                                                                                     split_k=False).cycles
    # A batched GEMM's tiles share the waves: 4 members of one tile each on 4 SMs is one wave, 5 are two.
    assert gemm_kernel(_gemm(16, 16, 16, batch=4), tm, split_k=False).cycles == pytest.approx(16 * 16 * 16 / 256)
    assert gemm_kernel(_gemm(16, 16, 16, batch=5), tm, split_k=False).cycles == pytest.approx(2 * 16 * 16 * 16 / 256)


def test_the_tile_is_the_one_that_wastes_least_and_a_small_tile_can_be_l2_bound() -> None:
    # N = 64 output columns: a 128-wide tile is half empty, a 64-wide one is full.
    tm = _tiles(sms=8, tiles=((128, 128), (128, 64)), k_tile=32)
    got = gemm_kernel(_gemm(128 * 8, 64, 256), tm, split_k=False)
    assert got.tile == (128, 64) and got.cycles == pytest.approx(128 * 64 * 256 / 256.0)
    # L2 share per SM: 64 B a clock over 8 SMs = 8 B; a 64×64 tile reads (64 + 64) · 2 B a k-step for 4096 MACs.
    l2 = _tiles(sms=8, tiles=((64, 64),), l2=64.0, rate=256.0)
    assert tile_rate((64, 64), l2) == pytest.approx(8.0 * 64 * 64 / (2 * 128))
    assert tile_rate((64, 64), _tiles(l2=1e9)) == 256.0


def test_too_few_tiles_split_k_and_pay_for_the_reduction() -> None:
    # One 16×16 output tile, K = 64 k-tiles deep, on 4 SMs: split in 4 slices, one wave of 16 k-tiles each,
    # then the 4 FP32 partial tiles are written and read back.
    tm = _tiles()
    op = _gemm(16, 16, 64 * 16)
    got = gemm_kernel(op, tm)
    assert got.splits == 4 and got.cycles == pytest.approx(16 * 16 * 16 * 16 / 256.0)
    assert got.reduction_bytes == 2 * 4 * SPLIT_K_PARTIAL_BYTES * 16 * 16
    assert gemm_kernel(op, tm, split_k=False).cycles == pytest.approx(4 * got.cycles)
    # A reduction that costs more than the split saves is not taken.
    assert gemm_kernel(op, tm, bytes_per_cycle=1e-3).splits == 1
    assert 1 in split_candidates(1, 1, 4) and max(split_candidates(1, 64, 4)) == 64
    assert all(s <= 3 for s in split_candidates(2, 3, 108))


def test_kernel_cost_uses_the_tiles_for_gemms_and_leaves_grouped_convolutions_and_vector_ops() -> None:
    d = _design(bw=1e6)
    tm = _tiles()
    op = _gemm(4 * 16 + 1, 16, 32)
    c = kernel_cost(op, d, tm)
    memory = gemm_traffic_bytes(op, d.sram_mib) / d.bytes_per_cycle
    g = gemm_kernel(op, tm, memory, d.bytes_per_cycle)
    assert g.splits == 2  # 5 tiles on 4 SMs: 2 slices of one k-tile in 3 waves beat 2 waves of 2 k-tiles
    assert c.cycles == pytest.approx(max(g.cycles, memory) + g.reduction_bytes / d.bytes_per_cycle)
    grouped = _gemm(64, 4, 36, batch=32, name="convolution")
    assert is_grouped_conv(grouped) and not is_grouped_conv(_gemm(64, 4, 36, batch=32, name="bmm"))
    assert kernel_cost(grouped, d, tm) == op_cost(grouped, d)
    v = _bn("relu", 1 << 10)
    assert kernel_cost(v, d, tm) == kernel_cost(v, d)
    # Memory-bound: the kernel takes its traffic's time, whatever the tile.
    slow = _design(bw=1e-3)
    assert kernel_cost(op, slow, tm).cycles == pytest.approx(kernel_cost(op, slow, tm).memory_cycles)


def test_the_a100_tile_rate_reproduces_the_measurement_it_comes_from() -> None:
    # The MAMF best shape at the de-quantized per-SM rate, through the same tile model, gives back the
    # measured 271.2 TFLOPS: the rate is the measurement with only its shape's wave quantization taken out.
    from adopter.wham import constants as C

    tm = TileModel(C.A100_SMS, C.A100_TILE_MACS_PER_SM_CLOCK, C.A100_L2_BYTES_PER_CLOCK, C.CUTLASS_SM80_TILE[2],
                   C.GPU_CUBLAS_TILES)
    m, n, k = C.A100_MAMF_SHAPE
    got = gemm_kernel(_gemm(m, n, k), tm, bytes_per_cycle=C.A100_80GB_HBM_ACHIEVED_GBS * 1e3 / C.A100_BOOST_MHZ)
    assert got.splits == 1  # a split's FP32 partials (GBs at this size) would cost more than it saves
    cycles = got.cycles
    tflops = 2.0 * m * n * k / (cycles / (C.A100_BOOST_MHZ * 1e6)) / 1e12
    assert tflops == pytest.approx(C.A100_MAMF_BF16_TFLOPS, rel=1e-9)
