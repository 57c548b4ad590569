"""Round 11 (wham13) of bench/wham_gpu_published.py's GPT rows.

1. The data-parallel gradient all-reduce of SC21 Table 1's p = 1 rows overlaps the backward pass. Shaped on
   NVIDIA/Megatron-LM @de7dc40f (the commit that added examples/sc21/): run_table_1.sh lines 22, 33, 44, 55 set
   `DDP=torch` for the p = 1 rows and lines 66-121 `DDP=local` for the others; training.py lines 246-251 wrap
   the model in torch.nn.parallel.DistributedDataParallel (bucketed all-reduce from autograd hooks during the
   backward pass); schedules.py lines 117-137 run every micro-batch but the last under `no_sync`; the local DDP's
   hooks only accumulate (model/distributed.py lines 168-177) and training.py lines 369-373 all-reduce after the
   schedule.
2. Every row of Korthikanti et al. 2022 (arXiv 2205.05198) Table 5, configured from its Table 3 and §6.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from adopter.wham.gpu import serial_step
from adopter.wham.recompute import recompute_layers

from .test_megatron_parallel import _decoder

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import wham_gpu_megatron as megatron  # noqa: E402
import wham_gpu_published as bench  # noqa: E402

# Table 3 (heads, hidden, layers, t, p, GPUs, global batch, micro-batch) and Table 5 (seconds an iteration, full
# recompute and present work; MFU and HFU of the present work, %), as transcribed.
TABLE_3_5 = {"22b": (64, 6144, 48, 8, 1, 8, 4, 4, 1.42, 1.10, 41.5, 43.7),
             "175b": (96, 12288, 96, 8, 8, 64, 64, 1, 18.13, 13.75, 51.4, 52.8),
             "530b": (128, 20480, 105, 8, 35, 280, 280, 1, 49.05, 37.83, 56.0, 57.0),
             "1t": (160, 25600, 128, 8, 64, 512, 512, 1, 94.42, 71.49, 56.3, 57.0)}


def _sc21() -> dict[str, bench.Published]:
    return {r.model.removeprefix("gpt-"): r for r in bench.ROWS if r.source.startswith(bench.SC21)}


def _korthikanti() -> list[bench.Published]:
    return [r for r in bench.ROWS if r.source.startswith(bench.KORTHIKANTI)]


def test_serial_step_reports_the_backward_phase() -> None:
    work = _decoder()
    d = bench.GPUS["A100 80GB"]
    gs = serial_step(work, d)
    assert 0 < gs.bwd_s < gs.fb_s
    again = serial_step(recompute_layers(work), d)
    # recomputation adds exactly the layers' forward to the backward phase
    assert again.bwd_s - gs.bwd_s == pytest.approx(again.fb_s - gs.fb_s)


def test_torch_ddp_rows_overlap_the_all_reduce_with_the_backward_pass() -> None:
    rows = _sc21()
    d = bench.GPUS["A100 80GB"]
    r = rows["1.7b"]  # t 1: the word embedding's gradient, 51,200 × 2304 FP16, is the last bucket
    assert r.ddp_tail_bytes == 51200 * 2304 * 2
    tail = bench._dp_exposed_s(10.0, 1e9, r, d)  # a backward far longer than the all-reduce: the tail only
    assert tail == pytest.approx(2 * 31 / 32 * r.ddp_tail_bytes / 25e9, rel=1e-6)  # 32 replicas at 25 GB/s
    assert bench._dp_exposed_s(10.0, 4.0, r, d) == pytest.approx(6.0)  # what does not fit under the backward
    assert bench._dp_exposed_s(1e-6, 4.0, r, d) == 1e-6  # never more than the all-reduce itself
    assert rows["18b"].ddp_tail_bytes == 51200 / 8 * 6144 * 2
    assert bench.torch_ddp_tail_bytes(256, 8) == 25 * 2**20  # a small embedding: one full bucket


def test_local_ddp_rows_all_reduce_after_the_schedule() -> None:
    """Refusal: Megatron's local DDP (p > 1) and every non-Megatron row wait for the whole all-reduce."""
    d = bench.GPUS["A100 80GB"]
    for size in ("39b", "76b", "145b", "310b", "530b", "1t"):
        r = _sc21()[size]
        assert r.ddp_tail_bytes == 0 and bench._dp_exposed_s(3.0, 100.0, r, d) == 3.0
    assert all(not r.ddp_tail_bytes for r in bench.ROWS if not r.factory)
    assert all(not r.ddp_tail_bytes for r in _korthikanti())


def test_every_row_of_korthikanti_table_5_is_reported_with_its_configuration() -> None:
    rows = _korthikanti()
    assert len(rows) == 2 * len(TABLE_3_5)
    for size, (heads, hidden, layers, t, p, n, gbs, mbs, full_s, present_s, mfu, hfu) in TABLE_3_5.items():
        mine = [r for r in rows if r.model == f"gpt-{size}"]
        assert sorted(r.recompute for r in mine) == [False, True]
        assert megatron.SIZES[size] == (layers, hidden, heads) and megatron.STAGES.get(size, 1) == p
        for r in mine:
            seconds = full_s if r.recompute else present_s
            assert (r.gpu, r.seq, r.tp, r.pp, r.gpus, r.batch, r.accumulation) == \
                ("A100 80GB", 2048, t, p, n, mbs, gbs // mbs)
            assert r.gpus // (r.tp * r.pp) == 1  # no data parallelism (Table 3's note): no gradient all-reduce
            assert r.measured == pytest.approx(gbs / seconds)
            assert r.virtual == (3 if size in ("175b", "530b") else 1)  # §6: interleaving for 175B and 530B
            # the present work: sequence parallelism and selective recomputation (§4.2.2, §5)
            assert (r.selective, r.sequence_parallel) == (not r.recompute, not r.recompute)
            assert "overlapped" in r.unmodelled  # both columns overlap the TP all-reduce with a GEMM (§6.2)
            assert f"{seconds} s" in r.source and "Table 5" in r.source
        # the transcription agrees with itself: the present work's model FLOPs (Appendix A,
        # 72·B·s·l·h²·(1 + s/6h + V/12lh)) over its seconds on n GPUs at 312 TFLOPS give Table 5's MFU, and × (1 +
        # s/6h) its HFU, within the rounding of the 3-digit seconds
        flops = 72 * gbs * 2048 * layers * hidden**2 * (1 + 2048 / (6 * hidden) + 51200 / (12 * layers * hidden))
        assert 100 * flops / present_s / n / 312e12 == pytest.approx(mfu, abs=0.2)
        assert 100 * flops * (1 + 2048 / (6 * hidden)) / present_s / n / 312e12 == pytest.approx(hfu, abs=0.3)


def test_a_row_without_data_parallelism_has_no_all_reduce() -> None:
    d = bench.GPUS["A100 80GB"]
    r = _korthikanti()[0]
    assert bench._allreduce_s(10**9, r, d) == 0.0
    assert bench._allreduce_s(10**9, replace(r, gpus=16), d) > 0.0
