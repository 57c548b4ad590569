"""The `search()` entry point, the report (JSON, text, HTML), pipeline/tensor parallel and the CLI."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from adopter.executors import ExecutorError, run_tasks
from adopter.wham import SearchRequest, render_html, search, summary_table
from adopter.wham.parallel import partition, pipeline_step_s, shard_block
from adopter.wham.request import validate

from .synthetic import toy_workload

TINY = {"model": "tiny-transformer", "batch": 4, "seq": 32, "budget": 30}


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"budget": 0}, "--budget=0: must be an integer in [1, 100000]"),
    ({"pipeline": 65}, "--pipeline=65: must be an integer in [1, 64]"),
    ({"area_mm2": -3.0}, "--area-mm2=-3.0: must be a number in (0, 100000]"),
    ({"tdp_w": float("nan")}, "--tdp-w=nan"),
    ({"objective": "speed"}, "--objective 'speed': allowed throughput, perf-per-tdp"),
    ({"strategy": "anneal"}, "--strategy 'anneal': allowed wham, random"),
    ({"model": "resnet9000"}, "--model 'resnet9000'"),
    ({"executor": "mpi"}, "--executor 'mpi': allowed process, serial, ray"),
    ({"pipeline": 2, "batch": 6, "microbatches": 4}, "--microbatches 4: must divide the batch (6)"),
    ({"tensor_parallel": 0}, "--tensor-parallel=0"),
    ({"compare": ("wham", "sa")}, "--compare 'sa': allowed wham"),
])
def test_bad_parameters_name_the_parameter_and_range(kwargs: dict, needle: str) -> None:
    report = search(SearchRequest(**kwargs))
    assert report.error is not None and needle in report.error
    assert report.to_json()["error"] == report.error
    assert "Error" in render_html(report.to_json())


def test_valid_request_validates() -> None:
    assert validate(SearchRequest()) == []


def test_partition_balances_stages() -> None:
    assert partition([1, 1, 1, 1], 2) == ((0, 1), (2, 3))
    assert partition([4, 1, 1, 1, 1], 2) == ((0,), (1, 2, 3, 4))
    parts = partition([1.0] * 10, 3)
    assert [len(p) for p in parts] in ([3, 3, 4], [3, 4, 3], [4, 3, 3]) and sum(parts, ()) == tuple(range(10))
    with pytest.raises(ValueError):
        partition([1.0], 2)


def test_pipeline_step_formula() -> None:
    # slowest stage 2 s × (m + S − 1 = 4 + 3 − 1) + slowest optimizer 0.5
    assert pipeline_step_s([1.0, 2.0, 1.5], [0.1, 0.5, 0.2], 4) == pytest.approx(2.0 * 6 + 0.5)


def test_tensor_parallel_split_and_allreduce() -> None:
    work = toy_workload(layers=1)
    block = work.blocks[0]
    # the toy layer has no softmax-named vector op fused away? it has one: it is split
    split = shard_block(block, 4)
    comm = [op for op in split.ops if op.kind == "comm"]
    assert len(comm) == 2 and all(op.m == 4 for op in comm)  # one norm → one fwd + one bwd all-reduce
    gemm_before = sum(op.flops for op in block.ops if op.is_gemm)
    gemm_after = sum(op.flops for op in split.ops if op.is_gemm)
    assert gemm_after == pytest.approx(gemm_before / 4)
    assert shard_block(block, 1) is block


def test_executor_errors_and_serial() -> None:
    assert run_tasks(abs, [-1, -2], executor="serial") == [1, 2]
    with pytest.raises(ExecutorError, match="allowed process, serial, ray"):
        run_tasks(abs, [-1, -2], executor="mpi")


def test_ray_missing_gives_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with pytest.raises(ExecutorError, match="pip install"):
        run_tasks(abs, [-1, -2], executor="ray")


@pytest.mark.torch
def test_end_to_end_search_report(cache_env: Path) -> None:
    pytest.importorskip("torch")
    seen: list[float] = []
    report = search(SearchRequest(**TINY), progress=lambda f, m: seen.append(f))
    assert report.error is None and report.best is not None and seen
    data = report.to_json()
    json.dumps(data)  # plain data
    assert data["best"]["design"]["n_tc"] >= 1 and data["search"]["trace"]
    assert {r["name"] for r in data["references"]} >= {"TPUv2-like", "NVDLA-like"}
    assert data["pareto"] and all(p["throughput"] > 0 for p in data["pareto"])
    tdps = [p["tdp_w"] for p in data["pareto"]]
    thr = [p["throughput"] for p in data["pareto"]]
    assert tdps == sorted(tdps) and thr == sorted(thr)  # a front: more power buys more throughput
    text = summary_table(report)
    assert "TPUv2-like" in text and "critical path" in text
    page = render_html(data)
    assert page.count("<svg") >= 2 and "http" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")


@pytest.mark.torch
def test_cancel_and_trace_errors(cache_env: Path) -> None:
    pytest.importorskip("torch")
    report = search(SearchRequest(**TINY), cancelled=lambda: True)
    assert report.error is None and report.result is not None and report.result.stopped == "cancelled"
    bad = search(SearchRequest(model="nosuchmod:build", budget=5))
    assert bad.error is not None and "nosuchmod" in bad.error


@pytest.mark.torch
@pytest.mark.parametrize("executor", ["serial", "process"])
def test_pipeline_search(cache_env: Path, executor: str) -> None:
    pytest.importorskip("torch")
    report = search(SearchRequest(**{**TINY, "budget": 15}, pipeline=3, microbatches=2, executor=executor))
    assert report.error is None, report.error
    pipe = report.pipeline
    assert pipe is not None and pipe["stages"] == 3 and len(pipe["partition"]) == 3
    g = pipe["global"]
    assert g is not None and len(g["stage_fb_s"]) == 3
    # the per-stage-optimal bound is at least as good as any replicated design
    assert pipe["heterogeneous"]["throughput"] >= g["throughput"] * (1 - 1e-9)
    assert g["step_s"] == pytest.approx(pipeline_step_s(g["stage_fb_s"], g["stage_opt_s"], 2))
    assert "Pipeline" in render_html(report.to_json())
    too_deep = search(SearchRequest(**TINY, pipeline=64, microbatches=2))  # the graph traced above
    assert too_deep.error is not None and "--pipeline 64" in too_deep.error


@pytest.mark.torch
def test_tensor_parallel_search(cache_env: Path) -> None:
    pytest.importorskip("torch")
    one = search(SearchRequest(**{**TINY, "budget": 5}, strategy="random"))
    four = search(SearchRequest(**{**TINY, "budget": 5}, strategy="random", tensor_parallel=4, link_gbs=50.0))
    assert four.error is None and four.tensor_parallel is not None
    assert four.tensor_parallel["allreduce_s"] > 0
    assert four.workload["gemm_flops"] < one.workload["gemm_flops"]


@pytest.mark.torch
def test_cli(cache_env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    from adopter.cli import main

    out_html, out_json = tmp_path / "r.html", tmp_path / "r.json"
    rc = main(["wham", "--model", "tiny-transformer", "--batch", "4", "--seq", "32", "--budget", "20",
               "--compare", "random", "--html", str(out_html), "--json", str(out_json), "--quiet"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "samples/s" in out and "compare   random" in out
    page = out_html.read_text()
    assert "<svg" in page and page.count("<polyline") >= 2  # both convergence curves
    data = json.loads(out_json.read_text())
    assert data["best"] and data["comparisons"][0]["strategy"] == "random"
    assert main(["wham", "--model", "tiny-transformer", "--tdp-w", "0"]) == 2
    assert "--tdp-w=0.0: must be a number in (0, 100000]" in capsys.readouterr().err


@pytest.mark.torch
def test_ray_executor_runs_the_stage_searches_on_a_local_instance(cache_env: Path) -> None:
    pytest.importorskip("torch")
    import ray

    request = {**TINY, "budget": 10, "pipeline": 2, "microbatches": 2}
    here = search(SearchRequest(**request, executor="serial"))
    assert not ray.is_initialized()
    try:
        on_ray = search(SearchRequest(**request, executor="ray", workers=2))
        # No address: the executor started a local instance of `workers` CPUs and shut it down.
        assert not ray.is_initialized()
    finally:
        if ray.is_initialized():
            ray.shutdown()
    assert on_ray.error is None and on_ray.pipeline is not None and on_ray.pipeline["global"] is not None

    def outcome(report: Any) -> list[tuple[Any, ...]]:
        return [(s["best"]["design"], s["best"]["objective"], s["evaluations"], s["evals_to_best"])
                for s in report.pipeline["per_stage"]]

    # The per-stage searches on Ray return what the same searches return in-process.
    assert outcome(on_ray) == outcome(here)
    assert on_ray.pipeline["global"]["design"] == here.pipeline["global"]["design"]
