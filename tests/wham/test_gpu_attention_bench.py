"""bench/wham_gpu_attention.py: the FlashAttention paper's A100 rows, the traced standard attention, the split."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import wham_gpu_attention as bench  # noqa: E402
import wham_gpu_ops as ops  # noqa: E402


@pytest.mark.parametrize("variant", bench.VARIANTS)
def test_the_transcribed_rows_add_up_forward_plus_backward_to_the_combined_table(variant: str) -> None:
    for seq in bench.SEQS:
        if seq <= bench.HOST_BOUND_SEQ:
            continue  # host-bound: the combined call pays the host floor once, the two separate calls twice
        both = bench.measured(variant, "fwd", seq) + bench.measured(variant, "bwd", seq)
        assert both == pytest.approx(bench.measured(variant, "fwd+bwd", seq), rel=0.03)


def test_every_row_names_its_table_of_appendix_e6() -> None:
    assert set(bench.TABLE) == set(bench.MEASURED_MS)
    assert sorted(bench.TABLE.values()) == list(range(15, 21))
    assert all(len(v) == len(bench.SEQS) for v in bench.MEASURED_MS.values())
    assert "2205.14135" in bench.FLASH and "E.6" in bench.FLASH


def _names(ks: tuple[bench.Kernel, ...], phase: str) -> list[str]:
    return sorted(k.name for k in ks if k.phase == phase)


def test_the_traced_attention_is_algorithm_0_without_the_loss() -> None:
    plain, drop = bench.kernels("none", 128), bench.kernels("dropout", 128)
    assert _names(plain, "fwd") == ["_softmax", "bmm", "bmm"]
    assert sorted(k.name for k in plain if k.phase != "fwd") == ["_softmax_backward_data", "bmm", "bmm", "bmm", "bmm"]
    assert _names(drop, "fwd") == ["_softmax", "bmm", "bmm", "native_dropout"]
    assert "native_dropout_backward" in [k.name for k in drop if k.phase != "fwd"]
    assert [k.gemm for k in plain].count(True) == 6


def test_each_attention_gemm_moves_one_fp16_score_matrix_and_two_head_panels() -> None:
    seq, heads = 1024, bench.BATCH * bench.HEADS
    for k in bench.kernels("none", seq):
        if k.gemm:
            assert k.bytes == 2 * heads * (seq * seq + 2 * seq * bench.HEAD_DIM)


def test_the_dropout_time_is_the_difference_of_the_tables_over_its_traced_bytes() -> None:
    meas, pred, gbs = bench.dropout_bandwidth(2048, "fwd")
    assert meas == pytest.approx(6.56 - 4.32)
    drop = [k for k in bench.kernels("dropout", 2048) if k.phase == "fwd" and "dropout" in k.name]
    assert pred == pytest.approx(sum(k.us for k in drop) / 1e3)
    assert gbs == pytest.approx(sum(k.bytes for k in drop) / (meas * 1e-3) / 1e9)


def test_the_split_ends_are_the_whole_measurement_on_one_side() -> None:
    ks = bench.kernels("none", 2048)
    gemm_x, _ = bench.chain_split(2048, "fwd", math.inf)  # a free softmax: the GEMMs take all of the 4.32 ms
    assert gemm_x == pytest.approx(4.32 / bench.predicted_ms(ks, "fwd", gemm=True))
    _, soft_gbs = bench.chain_split(2048, "fwd", 1.0)
    soft = sum(k.bytes for k in ks if k.phase == "fwd" and not k.gemm)
    assert soft_gbs == pytest.approx(soft / ((4.32 - bench.predicted_ms(ks, "fwd", gemm=True)) * 1e-3) / 1e9)


def test_the_papers_runtime_shares_cover_the_three_operator_classes() -> None:
    assert sum(pct for _, pct in ops.CLASS_SHARES) == pytest.approx(100.0)
    assert {cls for cls, _ in ops.CLASS_SHARES} == {ops.TENSOR, ops.NORM, ops.ELEMENTWISE}
    assert "Table 1" in ops.CLASS_SOURCE and "MLSys 2021" in ops.CLASS_SOURCE
