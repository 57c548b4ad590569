"""Design choices trade off: buffer capacity sets off-chip traffic, bandwidth costs power and buys time, and
the link between pipeline stages costs time."""

from __future__ import annotations

from dataclasses import replace

import pytest

from adopter.wham.cost import gemm_traffic_bytes, op_cost
from adopter.wham.evaluate import Evaluator
from adopter.wham.graph import Op
from adopter.wham.hardware import Constraints, tdp_w, tpuv2_like
from adopter.wham.parallel import boundary_bytes, evaluate_pipeline

from .synthetic import toy_workload

BIG = Op("mm", "gemm", "fwd", 2.0 * 4096**3, 2.0 * 2 * 4096**2, 2.0 * 4096**2, (), m=4096, n=4096, k=4096)


def test_a_bigger_buffer_means_less_off_chip_traffic() -> None:
    traffic = [gemm_traffic_bytes(BIG, s) for s in (0.5, 2.0, 8.0, 32.0)]
    assert traffic == sorted(traffic, reverse=True) and traffic[0] > 2 * traffic[-1]
    compulsory = BIG.bytes_in + BIG.bytes_out
    assert traffic[-1] >= compulsory  # never below reading the operands once


def test_bandwidth_buys_time_and_costs_power() -> None:
    d = replace(tpuv2_like(), sram_mib=0.5)
    slow, fast = replace(d, bandwidth_gbs=175.0), replace(d, bandwidth_gbs=2800.0)
    assert op_cost(BIG, fast).cycles < op_cost(BIG, slow).cycles
    assert tdp_w(fast) > tdp_w(slow)


@pytest.mark.parametrize("stages", [2, 4])
def test_the_link_between_pipeline_stages_costs_time(stages: int) -> None:
    work = toy_workload(layers=4)
    per = len(work.segments) // stages
    parts = [tuple(range(i * per, (i + 1) * per if i < stages - 1 else len(work.segments))) for i in range(stages)]
    assert boundary_bytes(work, parts[0]) > 0

    def step(link: float) -> float:
        evs = [Evaluator(work, "throughput", Constraints(1e5, 1e5), segments=p, link_gbs=link) for p in parts]
        return evaluate_pipeline(tpuv2_like(), evs, 4, 32, "throughput", 0.0).step_s

    slow, fast = step(1.0), step(1000.0)
    assert slow > fast
    # every stage has a boundary, whose transfer adds to each of its (m + S − 1) micro-batch slots
    extra = boundary_bytes(work, parts[0]) * (1 / 1e9 - 1 / 1e12)
    assert slow - fast >= extra * (4 + stages - 1) * (1 - 1e-9)
