"""Smoke test of the training-gains harness (bench/gains.py) on one small model, plus its report helpers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench"
sys.path.insert(0, str(BENCH))

from gains.report import geomean, replace_section, svg_chart, table  # noqa: E402
from tf435 import unusable_reason  # noqa: E402


def test_geomean_ignores_missing_values() -> None:
    assert geomean([]) is None
    assert geomean([2.0, 8.0]) == pytest.approx(4.0)
    assert geomean([2.0, 0.0, 8.0]) == pytest.approx(4.0)


def test_replace_section_touches_only_its_section() -> None:
    doc = "# Benchmarks\n\nintro\n\n## Detection\n\nkeep me\n\n## Training gains\n\nold\n\n## Later\n\nkeep too\n"
    new = replace_section(doc, "Training gains", "new body")
    assert "old" not in new
    assert "keep me" in new and "keep too" in new
    assert new.index("## Training gains") < new.index("new body") < new.index("## Later")
    assert replace_section("# B\n", "Training gains", "x").endswith("## Training gains\n\nx\n")


def _fake_results() -> dict[str, object]:
    row = {"title": "M", "layers_note": "1 of 2", "prepared": {"rules_fixed": {"f01": 1}, "not_fixed": [], "changed": True},
           "speed": {"loss_check": {"equal": True, "max_rel_diff": {"model": 0.0, "full": 1e-6}, "tolerance": 1e-4},
                     "speed": {"median_s": {"original": 1.0}, "speedup": {"model": 0.9, "full": 1.5}}},
           "memory": {v: {"rss_train_kib": kib, "profiler": {"peak_bytes": kib * 1024}}
                      for v, kib in (("original", 1000), ("model", 900), ("full", 800))}}
    return {"options": {"device": "cpu"}, "machine": {"summary": "test cpu"}, "models": {"m": row}}


def test_table_reports_slowdowns_and_memory() -> None:
    md = table(_fake_results())
    assert "SLOWER (10.0%)" in md
    assert "-20.0%" in md and "0.900×" in md and "1.500×" in md
    svg = svg_chart(_fake_results())
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>") and "1.50×" in svg


@pytest.mark.torch
@pytest.mark.corpus
@pytest.mark.slow
def test_quick_run_on_albert(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    if (reason := unusable_reason()) is not None:
        pytest.skip(reason)
    out = tmp_path / "gains.json"
    proc = subprocess.run([sys.executable, str(BENCH / "gains.py"), "--quick", "--per-rule", "--models", "albert-base-v2",
                           "--out", str(out), "--workdir", str(tmp_path / "work")],
                          capture_output=True, text=True, timeout=1800, cwd=REPO, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ALBERT-base-v2" in proc.stdout and "geomean" in proc.stdout
    results = json.loads(out.read_text())
    assert results["script"]["rules_fixed"].get("f17-fused-adam") == 1
    row = results["models"]["albert-base-v2"]
    assert row["prepared"]["error"] is None and row["prepared"]["changed"], row["prepared"]
    assert row["prepared"]["rules_fixed"], row["prepared"]
    check = row["speed"]["loss_check"]
    assert check["equal"], check
    assert len(check["losses"]["original"]) == 2
    speed = row["speed"]["speed"]
    assert speed["steps"] == 3
    for variant in ("original", "model", "full"):
        assert len(speed["times_s"][variant]) == 3
        assert speed["median_s"][variant] > 0
        mem = row["memory"][variant]
        assert "error" not in mem, mem
        assert mem["rss_train_kib"] > 0
        assert mem["profiler"].get("peak_bytes", 0) > 0, mem["profiler"]
    # --per-rule: one more variant per fixed rule, each loss-checked and timed in the same rotation.
    rules = set(row["prepared"]["rules_fixed"])
    assert {v[5:] for v in speed["speedup"] if v.startswith("rule:")} == rules
    assert all(check["max_rel_diff"][f"rule:{r}"] <= check["tolerance"] for r in rules)
    assert "Rules one at a time" in proc.stdout
