"""One common design for a set of models: the aggregate, its bound, validation, and the end-to-end search."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from adopter.wham import SearchRequest, render_html, search, summary_table
from adopter.wham.engine import run_strategy
from adopter.wham.evaluate import Constraints, Evaluator
from adopter.wham.hardware import PARAMS, DesignSpace, tpuv2_like
from adopter.wham.multi import SetEvaluator, aggregate
from adopter.wham.strategies import make_strategy

from .synthetic import toy_workload

pytest.importorskip("numpy")

WORKS = [toy_workload(layers=2, tokens=512, hidden=256), toy_workload(layers=3, tokens=64, hidden=1024),
         toy_workload(layers=1, tokens=4096, hidden=128)]
LIMITS = Constraints(150.0, 120.0)
SPACE = DesignSpace().reduced()


def set_evaluator(how: str, own: list[float] | None = None) -> SetEvaluator:
    evs = [Evaluator(w, "throughput", LIMITS) for w in WORKS]
    return SetEvaluator(evs, [f"m{i}" for i in range(len(WORKS))], how, own or [1.0] * len(WORKS))


def test_aggregates() -> None:
    assert aggregate([2.0, 8.0], "geomean") == pytest.approx(4.0)
    assert aggregate([0.5, 0.9], "worst") == 0.5
    assert aggregate([0.0, 3.0], "geomean") == 0.0


def test_set_evaluation_aggregates_per_model_objectives() -> None:
    d = tpuv2_like()
    per = [Evaluator(w, "throughput", LIMITS).evaluate(d).objective for w in WORKS]
    geo = set_evaluator("geomean").evaluate(d)
    assert geo.objective == pytest.approx(math.prod(per) ** (1 / len(per)))
    own = [2 * p for p in per[:2]] + [per[2]]  # the third model is at its own best, the others at half
    worst = set_evaluator("worst", own).evaluate(d)
    assert worst.objective == pytest.approx(0.5)
    ev = set_evaluator("geomean")
    ev.evaluate(d)
    ev.evaluate(d)
    assert ev.evaluations == 1  # one design counts once, however many models


@pytest.mark.parametrize("how", ["geomean", "worst"])
def test_set_bound_is_an_upper_bound_on_the_aggregate(how: str) -> None:
    own = [1000.0, 500.0, 2000.0]
    ev = set_evaluator(how, own)
    bounds = ev.bounds(SPACE)
    assert bounds is not None and ev.bounded == SPACE.size()
    rng = random.Random(0)
    checked = 0
    for _ in range(60):
        d = SPACE.design(tuple(rng.randrange(len(SPACE.values(p))) for p in PARAMS))
        e = ev.evaluate(d)
        upper, _ = bounds.objective_at(d)
        if e.objective is not None:
            assert e.objective <= upper * (1 + 1e-9)
            checked += 1
        if upper == -math.inf:  # the bound calls it infeasible only when it is
            assert e.objective is None
    assert checked > 5


def test_wham_on_a_set_reaches_the_exhaustive_optimum_of_the_aggregate() -> None:
    # the exhaustive strategy enumerates the reduced grid of the space it is given: SPACE itself
    exhaustive = run_strategy(make_strategy("exhaustive"), set_evaluator("geomean"), DesignSpace(), budget=100_000)
    wham = run_strategy(make_strategy("wham"), set_evaluator("geomean"), SPACE, budget=200)
    assert exhaustive.best is not None and wham.best is not None
    assert wham.best.objective == pytest.approx(exhaustive.best.objective, rel=1e-9)
    assert wham.evaluations < exhaustive.evaluations / 10  # pruned by the set's bound


@pytest.mark.parametrize(("model", "extra", "needle"), [
    ("bert-base,nope", {}, "'nope': unknown model"),
    (",", {}, "empty list"),
    ("bert-base,,gpt2", {}, "empty entry"),
    ("gpt2,gpt2", {}, "'gpt2': listed twice"),
    ("bert-base,gpt2", {"aggregate": "best"}, "--aggregate 'best'"),
    ("bert-base,gpt2", {"pipeline": 2}, "not supported with a set"),
    ("bert-base@0,gpt2", {}, "bert-base@ batch"),
])
def test_bad_sets_are_errors_naming_the_model(model: str, extra: dict, needle: str) -> None:
    report = search(SearchRequest(model=model, **extra))
    assert report.error is not None and needle in report.error
    assert report.best is None and not report.models


torch_only = pytest.mark.torch


@torch_only
def test_set_search_reports_every_model(cache_env: Path) -> None:
    pytest.importorskip("torch")
    req = SearchRequest(model="tiny-transformer,tiny-mlp@8x32", budget=40, executor="serial")
    report = search(req)
    assert report.error is None and report.best is not None
    data = json.loads(json.dumps(report.to_json()))
    assert [m["model"] for m in data["models"]] == ["tiny-transformer", "tiny-mlp"]
    assert data["models"][1]["batch"] == 8 and data["models"][1]["seq"] == 32
    for m in data["models"]:
        assert m["common"]["throughput"] > 0 and m["own_best"]["throughput"] > 0
        assert set(m["references"]) == {"TPUv2-like", "TPUv3-like", "NVDLA-like"}
    assert "geometric mean" in data["objective"]
    text = summary_table(report)
    assert "samples/s per model" in text and "tiny-mlp" in text and text.startswith("objective the geometric")
    page = render_html(data)
    assert "Per model" in page and "tiny-transformer" in page
    worst = search(SearchRequest(model="tiny-transformer,tiny-mlp", budget=40, executor="serial",
                                 aggregate="worst"))
    assert worst.best is not None and worst.best.objective is not None and 0 < worst.best.objective <= 1 + 1e-9


@torch_only
def test_a_model_that_fails_to_trace_is_named_and_exits_2(cache_env: Path, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    (tmp_path / "broken.py").write_text(textwrap.dedent("""
        def make(batch, seq):
            raise RuntimeError("no weights here")
    """))
    proc = subprocess.run([sys.executable, "-m", "adopter", "wham", "--model", "tiny-mlp,broken:make",
                           "--model-path", str(tmp_path), "--executor", "serial", "--budget", "5",
                           "--json", str(tmp_path / "out.json")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert "broken:make" in proc.stderr and "no weights here" in proc.stderr
    data = json.loads((tmp_path / "out.json").read_text())
    assert data["error"] and data["best"] is None and data["models"] == []


