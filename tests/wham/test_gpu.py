"""The GPU step model (adopter.wham.gpu): kernels one after another on one stream; batch norm's second reads."""

from __future__ import annotations

import math

import pytest

from adopter.wham.constants import BATCHNORM_BACKWARD_EXTRA_READS, BATCHNORM_FORWARD_EXTRA_READS
from adopter.wham.cost import BANDWIDTH, op_cost
from adopter.wham.evaluate import Constraints, Evaluator
from adopter.wham.gpu import batchnorm_extra_bytes, kernel_cost, serial_step
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
