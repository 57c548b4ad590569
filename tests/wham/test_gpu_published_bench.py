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
