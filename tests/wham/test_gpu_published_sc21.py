"""bench/wham_gpu_published.py's GPT rows: every row of Narayanan et al. SC21 Table 1 (round 10, wham12), each
run as NVIDIA/Megatron-LM @d98e8a64 examples/academic_paper_scripts/sc21/run_table_1.sh configures it."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from adopter.wham.evaluate import segments_flops

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import wham_gpu_megatron as megatron  # noqa: E402
import wham_gpu_published as bench  # noqa: E402

# SC21 Table 1 as transcribed: size -> (layers, hidden, t, p, GPUs, batch, teraFLOP/s per GPU, % of peak,
# aggregate petaFLOP/s).
TABLE_1 = {"1.7b": (24, 2304, 1, 1, 32, 512, 137, 44, 4.4), "3.6b": (30, 3072, 2, 1, 64, 512, 138, 44, 8.8),
           "7.5b": (36, 4096, 4, 1, 128, 512, 142, 46, 18.2), "18b": (40, 6144, 8, 1, 256, 1024, 135, 43, 34.6),
           "39b": (48, 8192, 8, 2, 512, 1536, 138, 44, 70.8), "76b": (60, 10240, 8, 4, 1024, 1792, 140, 45, 143.8),
           "145b": (80, 12288, 8, 8, 1536, 2304, 148, 47, 227.1),
           "310b": (96, 16384, 8, 16, 1920, 2160, 155, 50, 297.4),
           "530b": (105, 20480, 8, 35, 2520, 2520, 163, 52, 410.2),
           "1t": (128, 25600, 8, 64, 3072, 3072, 163, 52, 502.0)}


def _gpt_rows() -> dict[str, bench.Published]:
    return {r.model.removeprefix("gpt-"): r for r in bench.ROWS
            if r.model.startswith("gpt-") and r.source.startswith(bench.SC21)}


def test_every_row_of_table_1_is_reported_with_its_run() -> None:
    rows = _gpt_rows()
    assert set(rows) == set(TABLE_1)
    for size, (layers, hidden, t, p, n, gbs, tflops, pct, agg) in TABLE_1.items():
        r = rows[size]
        assert (r.gpu, r.seq, r.tp, r.pp, r.gpus, r.recompute) == ("A100 80GB", 2048, t, p, n, True)
        assert r.batch * r.accumulation * (n // (t * p)) == gbs  # micro-batch × micro-batches × replicas
        assert "Table 1" in r.source and "run_table_1.sh" in r.source and f"{tflops} teraFLOP/s" in r.source
        assert r.factory.startswith("wham_gpu_megatron:gpt_") and r.precision == bench.HALF and r.fused
        assert megatron.SIZES[size][:2] == (layers, hidden) and megatron.STAGES.get(size, 1) == p
        assert r.p2p_bytes == r.batch * 2048 * hidden * 2  # a micro-batch's b·s·h FP16 activation
        # the transcription agrees with itself: per-GPU rate × GPUs = aggregate (the per-GPU rate is rounded to
        # a whole teraFLOP/s: ±0.5 in 135), and ÷ 312 = % of peak
        assert tflops * n / 1000 == pytest.approx(agg, rel=0.5 / 135 + 0.001)
        assert round(100 * tflops / 312) == pct


def test_the_measured_rate_converts_back_to_the_papers_teraflops_by_eq_3() -> None:
    for size, (layers, hidden, t, p, _n, _gbs, tflops, _pct, _agg) in TABLE_1.items():
        r = _gpt_rows()[size]
        per_sample = 96 * 2048 * layers * hidden**2 * (1 + 2048 / (6 * hidden) + 51200 / (16 * layers * hidden))
        assert r.measured * per_sample / (t * p) == pytest.approx(tflops * 1e12)


def test_the_pipeline_bubble_and_transfers_follow_the_schedule() -> None:
    """SC21 §2.2: bubble (p − 1)/m under 1F1B, (p − 1)/(v·m) interleaved; no pipeline, no bubble (refusal)."""
    r = _gpt_rows()["145b"]  # p 8, v 2, m = 2304 / (24 replicas × micro-batch 2) = 48
    assert (r.pp, r.virtual, r.accumulation) == (8, 2, 48)
    p2p = 2 * 2 * r.p2p_bytes / 8 / (r.dp_link_gbs * 1e9)
    assert bench._pipelined(1.0, r) == pytest.approx(1 + 7 / (2 * 48) + p2p)
    assert bench._pipelined(1.0, replace(r, virtual=1)) == pytest.approx(1 + 7 / 48 + p2p / 2)
    assert bench._pipelined(1.0, _gpt_rows()["18b"]) == 1.0


def test_the_traced_step_counts_the_papers_flops(cache_env: Path) -> None:
    """The traced 1.7B GPT, with every layer recomputed, does Eq. 3's FLOPs a sequence (its GEMMs: within 1 %;
    the paper counts GEMMs only)."""
    r = replace(_gpt_rows()["1.7b"], batch=1)
    work = bench.run_workload(r)
    gemm = sum(op.flops for s in work.segments for op in work.blocks[s.block].ops if op.is_gemm)
    per_sample = 96 * 2048 * 24 * 2304**2 * (1 + 2048 / (6 * 2304) + 51200 / (16 * 24 * 2304))
    assert gemm == pytest.approx(per_sample, rel=0.01)
    assert segments_flops(work, range(len(work.segments))) >= gemm
    plain = bench.run_workload(replace(r, recompute=False))
    assert gemm / sum(op.flops for s in plain.segments for op in plain.blocks[s.block].ops if op.is_gemm) \
        == pytest.approx(4 / 3, rel=0.03)  # 4 passes against 3: the recomputed forward
