"""The text and HTML reports agree with the JSON, and infeasibility advice names the real bound."""

from __future__ import annotations

import re

import pytest

from adopter.wham import render_html, summary_table
from adopter.wham.evaluate import Evaluator
from adopter.wham.hardware import (
    Constraints,
    DesignSpace,
    area_mm2,
    nvdla_like,
    smallest_design,
    tdp_w,
    tpuv2_like,
)
from adopter.wham.report import Reference, SearchReport, infeasible_advice

from .synthetic import toy_workload


def _set_report(objective: str) -> SearchReport:
    """A two-model set report whose rows are built as `multi.search_set` builds them: the common design is
    TPUv2-like, each model's own best NVDLA-like, so the samples/s ratio and the Perf/TDP ratio differ."""
    works = [toy_workload(layers=2, tokens=512, hidden=256), toy_workload(layers=1, tokens=2048, hidden=512)]
    limits = Constraints(1e5, 1e5)
    common_d, own_d = tpuv2_like(), nvdla_like()
    rows = []
    refs = []
    for i, w in enumerate(works):
        ev = Evaluator(w, objective, limits)
        common, own = ev.evaluate(common_d), ev.evaluate(own_d)
        assert common.objective is not None and own.objective is not None
        rows.append({"model": f"m{i}", "batch": 8, "seq": 64, "workload": {}, "own_best": own.to_json(),
                     "common": common.to_json(), "common_vs_own": common.objective / own.objective,
                     "references": {"TPUv2-like": common.to_json()}})
        refs.append(Reference("TPUv2-like", common))
    request = {"model": "m0,m1", "objective": objective, "area_mm2": 1e5, "tdp_w": 1e5}
    return SearchReport(request=request, workload={"model": "m0,m1"}, best=refs[0].evaluation,
                        references=(refs[0],), models=tuple(rows))


@pytest.mark.parametrize("objective", ["throughput", "perf-per-tdp"])
def test_set_table_ratios_are_the_jsons(objective: str) -> None:
    report = _set_report(objective)
    data = report.to_json()
    text = summary_table(report)
    table = text[text.index("per model"):]
    for m in data["models"]:
        line = next(ln for ln in table.splitlines() if ln.startswith(m["model"] + " "))
        assert f"{m['common_vs_own']:.1%}" in line, (line, m["common_vs_own"])
        thr = m["common"]["throughput"] / m["own_best"]["throughput"]
        ppt = m["common"]["perf_per_tdp"] / m["own_best"]["perf_per_tdp"]
        assert abs(thr - ppt) > 0.01  # the two ratios differ, so a table from the wrong one fails
        shown = float(re.findall(r"([\d.]+)%", line)[0]) / 100
        assert shown == pytest.approx(ppt if objective == "perf-per-tdp" else thr, abs=1e-3)
    page = render_html(data)
    for m in data["models"]:
        assert f"{m['common_vs_own']:.1%}" in page
    assert ("Perf/TDP (samples/s/W) per model" in text) == (objective == "perf-per-tdp")


def test_infeasible_advice_names_the_smallest_design() -> None:
    small = smallest_design(DesignSpace())
    area, tdp = area_mm2(small), tdp_w(small)
    # no design in the grid is smaller in area or TDP than the smallest design
    for d in (tpuv2_like(), nvdla_like(), DesignSpace().design((1, 0, 2, 0, 1, 0, 1))):
        assert area_mm2(d) >= area and tdp_w(d) >= tdp
    msg = infeasible_advice({"area_mm2": 0.25, "tdp_w": 400.0, "objective": "throughput"})
    assert f"{area:.1f} mm²" in msg and "--area-mm2 0.25" in msg and "--budget" not in msg
    msg = infeasible_advice({"area_mm2": 600.0, "tdp_w": 1.0, "objective": "throughput"})
    assert f"{tdp:.1f} W" in msg and "--tdp-w 1" in msg and "--budget" not in msg
    msg = infeasible_advice({"area_mm2": 600.0, "tdp_w": 400.0, "objective": "perf-per-tdp",
                             "min_throughput": 1e9})
    assert "--min-throughput" in msg
    assert "--budget" in infeasible_advice({"area_mm2": 600.0, "tdp_w": 400.0, "objective": "throughput"})
    empty = SearchReport(request={"area_mm2": 0.25, "tdp_w": 400.0, "objective": "throughput"})
    assert f"{area:.1f} mm²" in summary_table(empty)
