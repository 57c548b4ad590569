"""bench/wham_gpu_published.py: its markdown table and its JSON come from the same records and agree."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import wham_gpu_published as bench  # noqa: E402


def _rec(model: str, gpu: str, ratio: float, gpus: int = 1) -> dict[str, object]:
    return {"model": model, "traced": model, "gpu": gpu, "gpus": gpus, "batch": 256, "seq": 224, "accumulation": 1,
            "fused": False, "measured": 1000.0, "source": "a table", "predicted": 1000.0 * ratio, "ratio": ratio,
            "within": abs(ratio - 1) <= bench.WITHIN, "round1": 1.5, "round2": 1.4, "round3": 1.3, "round4": 1.25, "cutlass": 1.2,
            "why": "tensor 60%, bandwidth 40%; 10 kernels; batch-norm re-reads 5%", "opt_share": 0.01,
            "sustained": 0.3}


def test_the_table_and_the_json_agree_on_every_row_and_the_counts() -> None:
    recs = [_rec("resnet50", "A100 80GB", 1.10), _rec("resnet50", "A100 80GB", 1.30, gpus=8),
            _rec("resnet50", "V100 16GB", 0.80), _rec("bert-large", "A100 40GB", 1.24),
            {**_rec("gpt", "H100 80GB", 1.0), "error": "could not trace"}]
    for r in recs[-1:]:
        for key in ("predicted", "ratio", "within"):
            r.pop(key)
    summ = bench.summary(recs)
    doc = json.loads(json.dumps({"rows": recs, "summary": summ}))
    lines = bench.table(doc["rows"], doc["summary"])
    body = [line for line in lines if line.startswith("| ") and not line.startswith("| model")]
    assert len(body) == len(doc["rows"])
    for line, r in zip(body, doc["rows"], strict=True):
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[0] == r["traced"] and cells[1] == f"{r['gpu']} ×{r['gpus']}"
        if "error" in r:
            assert cells[5] == f"failed: {r['error']}" and cells[7] == "no"
            continue
        assert float(cells[6]) == round(r["ratio"], 2) and cells[7] == ("yes" if r["within"] else "no")
        assert float(cells[10]) == round(r["round3"], 2) and float(cells[11]) == round(r["round4"], 2)
        assert float(cells[12]) == round(r["cutlass"], 2)
    # The summary line's counts are the JSON's: 3 of 5 rows; pairs within: resnet50 on V100 16GB and bert-large on
    # A100 40GB (the A100 80GB pair has a row at 1.30; the failed row's pair is not within).
    assert summ["rows_within"] == 3 and summ["pairs_within"] == ["resnet50 on V100 16GB", "bert-large on A100 40GB"]
    assert summ["a100_h100_pairs"] == 3 and summ["a100_h100_pairs_within"] == ["bert-large on A100 40GB"]
    text = lines[-1]
    got = re.match(r"(\d+) of (\d+) rows within ±25 %; \(model, GPU\) pairs with every row within: (\d+) of (\d+) .*"
                   r"A100/H100 pairs with every row within: (\d+) of (\d+);", text)
    assert got is not None, text
    assert tuple(map(int, got.groups())) == (summ["rows_within"], summ["rows"], len(summ["pairs_within"]),
                                            summ["pairs"], len(summ["a100_h100_pairs_within"]),
                                            summ["a100_h100_pairs"])


def test_every_gpu_template_takes_its_hbm_figure_from_one_definition() -> None:
    # Round 5: the per-op cost charges read + write bytes at the template's bandwidth, so every part's figure is
    # a copy-like kernel's (one load and one store stream, both counted), from the same benchmark; rounds 2-4
    # mixed a read-only kernel (A100 80GB), cudaMemcpy (V100) and a carried-over fraction (A100 40GB).
    from adopter.wham import constants as C

    copy = {"A100 80GB": C.A100_80GB_HBM_COPY_GBS, "A100 40GB": C.A100_40GB_HBM_COPY_GBS,
            "V100 16GB": C.V100_HBM_COPY_GBS, "V100 32GB": C.V100_HBM_COPY_GBS}
    assert {name: d.bandwidth_gbs for name, d in bench.GPUS.items()} == copy
    for name, source in (("A100_80GB_HBM_COPY_GBS", "a100_80.txt"), ("A100_40GB_HBM_COPY_GBS", "a100_40.txt"),
                         ("V100_HBM_COPY_GBS", "v100.txt")):
        assert f"RRZE-HPC/gpu-benches @1038c5d0 gpu-stream/{source}" in C.SOURCES[name]
    # Below each datasheet peak; on the A100 80GB below the read-only kernel's figure rounds 2-4 used.
    assert C.A100_80GB_HBM_COPY_GBS < C.A100_80GB_HBM_ACHIEVED_GBS < C.A100_80GB_HBM_GBS
    assert C.A100_40GB_HBM_COPY_GBS < C.A100_40GB_HBM_GBS and C.V100_HBM_COPY_GBS < C.V100_HBM_GBS
    # The earlier rounds' column keeps the earlier figures.
    assert bench.ROUND4_GPUS["A100 80GB"].bandwidth_gbs == C.A100_80GB_HBM_ACHIEVED_GBS
    assert bench.ROUND4_GPUS["V100 16GB"].bandwidth_gbs == C.V100_HBM_ACHIEVED_GBS


def test_rows_measured_under_conditions_the_trace_does_not_represent_are_counted_apart() -> None:
    # Round 6: a row whose run did something the trace does not represent (phase 2 binned to 64 tokens, cuDNN's
    # fused attention) stays in the table and the all-rows counts, and is left out of the comparable counts.
    recs = [_rec("bert-large", "A100 80GB", 1.10), {**_rec("bert-large", "A100 80GB", 0.60), "unmodelled": "binned"},
            _rec("resnet50", "A100 80GB", 1.30), {**_rec("resnet50", "V100 16GB", 1.0), "unmodelled": ""}]
    summ = bench.summary(recs)
    assert summ["rows_within"] == 2 and summ["a100_h100_pairs_within"] == []
    assert summ["comparable_rows"] == 3 and summ["comparable_rows_within"] == 2
    assert summ["comparable_a100_h100_pairs"] == 2
    assert summ["comparable_a100_h100_pairs_within"] == ["bert-large on A100 80GB"]
    assert summ["comparable_pairs_within"] == ["bert-large on A100 80GB", "resnet50 on V100 16GB"]
    lines = bench.table(recs, summ)
    body = [line for line in lines if line.startswith("| ") and not line.startswith("| model")]
    assert [line.split(" | ")[-2] for line in body] == ["none known", "binned", "none known", "none known"]
    assert "2 of 3 within; A100/H100 pairs with every such row within: 1 of 2 (bert-large on A100 80GB)" in lines[-1]


def test_every_binned_or_fused_attention_bert_row_says_so_and_the_padded_unfused_runs_are_in_the_table() -> None:
    # The PyTorch BERT tables (pytorch:21.11) read phase 2 binned to 64 tokens; PaddlePaddle's current table ran
    # cuDNN fused attention (and phase 2 binned); its initial release (@cfdbf4ed, PaddlePaddle 22.08) ran padded
    # HDF5 data with the encoder unfused: those rows are what the trace represents.
    bert = [r for r in bench.ROWS if r.model == "bert-large"]
    for r in bert:
        pytorch_21_11 = "PyTorch/" in r.source and r.gpu != "A100 40GB"
        paddle_now = "PaddlePaddle/" in r.source and bench.PADDLE_V1 not in r.source
        assert ("binned" in r.unmodelled) == ((pytorch_21_11 and r.seq == 512) or (paddle_now and r.seq == 512)), r
        assert ("fused multi-head attention" in r.unmodelled) == paddle_now, r
    v1 = {(r.gpus, r.seq): r for r in bert if bench.PADDLE_V1 in r.source}
    assert {k: v.measured * k[0] for k, v in v1.items()} == {(1, 128): 529.0, (1, 512): 103.0, (8, 128): 4200.0,
                                                             (8, 512): 823.0}
    assert all(not r.fused and not r.unmodelled and r.grad_bytes == 4 for r in v1.values())
    assert {(r.seq, r.batch, r.accumulation) for r in v1.values()} == {(128, 256, 32), (512, 32, 128)}
    # PyTorch BERT before LDDL (@78ec6802, pytorch:20.06, DGX A100 40GB): padded HDF5 data, FP16 gradients.
    old = {(r.gpus, r.seq): r for r in bert if bench.PYTORCH_2006 in r.source}
    assert {k: v.measured * k[0] for k, v in old.items()} == {(1, 128): 415.0, (1, 512): 78.0, (8, 128): 3231.0,
                                                              (8, 512): 620.0}
    assert all(r.gpu == "A100 40GB" and not r.unmodelled and r.grad_bytes == 2 for r in old.values())


def test_each_pytorch_row_says_how_its_run_computes_in_mixed_precision() -> None:
    # Round 7: the ConvNets run under torch.cuda.amp autocast (training.py @729963dd); the BERT runs hold an FP16
    # model (model.half() at pytorch:21.11, apex O2 at 20.06), as Megatron-LM's --fp16 GPT runs do (Float16Module,
    # round 10); other frameworks get neither rewrite.
    for row in bench.ROWS:
        if "PyTorch/Classification/ConvNets" in row.source:
            assert row.precision == bench.AUTOCAST, row.source
        elif "PyTorch/LanguageModeling/BERT" in row.source or bench.MEGATRON_SC21 in row.source \
                or row.source.startswith(bench.KORTHIKANTI):  # round 11: Megatron, "mixed precision" (§6):
            # Float16Module for --fp16 and --bf16 alike (Megatron-LM @de7dc40f training.py lines 242-244)
            assert row.precision == bench.HALF, row.source
        else:
            assert row.precision == "", row.source
    rec = {**_rec("resnet50", "A100 80GB", 1.1), "precision": bench.AUTOCAST}
    line = next(x for x in bench.table([rec], bench.summary([rec])) if x.startswith("| resnet50"))
    assert line.split("|")[4].strip() == f"no (eager); {bench.AUTOCAST}"
