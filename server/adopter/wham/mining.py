"""`search(request)`: the entry point the CLI and the language server call. Never raises for bad input."""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from typing import Any

from adopter.executors import ExecutorError
from adopter.wham.engine import StrategyResult, run_strategy
from adopter.wham.evaluate import Evaluation, Evaluator
from adopter.wham.extras import TRACING, MissingDependency, require
from adopter.wham.graph import GraphError, Workload
from adopter.wham.hardware import REFERENCE_DESIGNS, Constraints, DesignSpace
from adopter.wham.models import WorkloadError, WorkloadSpec, load_workload
from adopter.wham.parallel import evaluate_pipeline, partition, pipeline_step_s, shard_workload
from adopter.wham.report import Reference, SearchReport, pareto_front
from adopter.wham.request import SearchRequest, validate
from adopter.wham.strategies import make_strategy

Progress = Callable[[float, str], None]
Cancelled = Callable[[], bool]


def search(request: SearchRequest, *, progress: Progress | None = None,
           cancelled: Cancelled | None = None) -> SearchReport:
    """Run the search `request` describes; errors (bad parameters, failed traces) come back in `.error`."""
    start = time.perf_counter()
    errors = validate(request)
    if errors:
        return SearchReport(request.to_json(), error="; ".join(errors))
    try:
        require("the accelerator search (tracing the model)", TRACING)
        for name in (request.strategy, *request.compare):
            require(f"--strategy {name}", make_strategy(name, request.top_k).requires)
    except MissingDependency as exc:
        return SearchReport(request.to_json(), error=str(exc))
    try:
        if request.is_set:
            from adopter.wham.multi import search_set

            return search_set(request, progress or (lambda f, m: None), cancelled, start)
        return _search(request, progress, cancelled, start)
    except (WorkloadError, GraphError, ValueError, ExecutorError) as exc:
        return SearchReport(request.to_json(), error=str(exc), seconds=time.perf_counter() - start)
    except Exception as exc:  # the server must survive a bug: report it instead of dying
        tb = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return SearchReport(request.to_json(), error=f"internal error: {tb}", seconds=time.perf_counter() - start)


def _search(req: SearchRequest, progress: Progress | None, cancelled: Cancelled | None, start: float) -> SearchReport:
    report = progress or (lambda f, m: None)
    m = req.resolved_microbatches
    batch, micro = req.resolved_batch, req.resolved_batch // m
    report(0.0, f"tracing {req.model}")
    work = load_workload(WorkloadSpec(req.model, micro, req.resolved_seq, req.model_path),
                         timeout_s=req.trace_timeout_s)
    notes: list[str] = []
    tp_info: dict[str, Any] | None = None
    if req.tensor_parallel > 1:
        work = shard_workload(work, req.tensor_parallel)
        if not any(op.kind == "comm" for b in work.blocks for op in b.ops):
            notes.append("tensor parallelism found no attention block to split; the model runs unsplit")
    constraints = Constraints(req.area_mm2, req.tdp_w, req.min_throughput)
    space = DesignSpace()
    summary = work.to_json()
    summary["batch"] = batch
    if req.pipeline > 1:
        return _pipeline(req, work, space, constraints, summary, report, cancelled, start, notes)

    evaluator = Evaluator(work, req.objective, constraints, link_gbs=req.link_gbs, samples=batch)
    report(0.05, f"searching with {req.strategy}")
    result = run_strategy(make_strategy(req.strategy, req.top_k), evaluator, space, budget=req.budget,
                          seed=req.seed, top_k=req.top_k,
                          progress=lambda f, msg: report(0.05 + 0.9 * f, msg), cancelled=cancelled)
    comparisons = []
    for k, name in enumerate(req.compare):
        if cancelled is not None and cancelled():
            break
        report(0.95, f"comparing with {name} ({k + 1}/{len(req.compare)})")
        other = Evaluator(work, req.objective, constraints, link_gbs=req.link_gbs, samples=batch)
        comparisons.append(run_strategy(make_strategy(name, req.top_k), other, space, budget=req.budget,
                                        seed=req.seed, top_k=req.top_k, cancelled=cancelled))
    refs = _references(work, req, constraints, batch)
    if req.tensor_parallel > 1 and result.best is not None:
        tp_info = _tp_info(evaluator, result.best, req)
    return SearchReport(
        request=req.to_json(), workload=summary, best=result.best, result=result, references=refs,
        pareto=pareto_front(list(evaluator.cache.values())), tensor_parallel=tp_info,
        seconds=time.perf_counter() - start, notes=tuple(notes), comparisons=tuple(comparisons),
    )


def _references(work: Workload, req: SearchRequest, constraints: Constraints, batch: int) -> tuple[Reference, ...]:
    out = []
    for name, make in REFERENCE_DESIGNS.items():
        ev = Evaluator(work, req.objective, constraints, link_gbs=req.link_gbs, samples=batch)
        out.append(Reference(name, ev.evaluate(make())))
    return tuple(out)


def _tp_info(evaluator: Evaluator, best: Evaluation, req: SearchRequest) -> dict[str, Any]:
    from adopter.wham.cost import op_cost

    f = best.design.clock_mhz * 1e6
    seconds = 0.0
    for s in evaluator.segments or ():
        block = evaluator.workload.blocks[evaluator.workload.segments[s].block]
        seconds += sum(op_cost(op, best.design, req.link_gbs).cycles for op in block.ops if op.kind == "comm") / f
    return {"degree": req.tensor_parallel, "link_gbs": req.link_gbs, "allreduce_s": seconds,
            "step_s": best.step_s, "throughput": best.throughput}


# --- pipeline -------------------------------------------------------------------------------------------

def stage_search(args: tuple[Any, ...]) -> StrategyResult:
    """One stage's search (a top-level function so process pools and Ray can run it)."""
    work, segs, objective, constraints, strategy, budget, seed, top_k, link_gbs, samples = args
    ev = Evaluator(work, objective, constraints, segments=segs, link_gbs=link_gbs, samples=samples)
    return run_strategy(make_strategy(strategy, top_k), ev, DesignSpace(), budget=budget, seed=seed, top_k=top_k)


def _run_stages(req: SearchRequest, tasks: list[tuple[Any, ...]], report: Progress) -> list[StrategyResult]:
    from adopter.executors import run_tasks

    return run_tasks(stage_search, tasks, executor=req.executor, workers=req.workers,
                     ray_address=req.ray_address, progress=report)


def _pipeline(req: SearchRequest, work: Workload, space: DesignSpace, constraints: Constraints,
              summary: dict[str, Any], report: Progress, cancelled: Cancelled | None, start: float,
              notes: list[str]) -> SearchReport:
    S, m = req.pipeline, req.resolved_microbatches
    batch, micro = req.resolved_batch, req.resolved_batch // m
    if S > len(work.segments):
        raise ValueError(f"--pipeline {S}: this model has {len(work.segments)} segments; allowed 1 to "
                         f"{len(work.segments)}")
    ref_design = REFERENCE_DESIGNS["TPUv2-like"]()
    probe = Evaluator(work, "throughput", constraints, link_gbs=req.link_gbs)
    f = ref_design.clock_mhz * 1e6
    times = probe.block_times(ref_design)
    costs = [(times[s.block].fb + times[s.block].opt) / f for s in work.segments]
    stages = partition(costs, S)
    # Per-stage constraint from the global minimum throughput: the slowest stage bounds the pipeline.
    stage_min = req.min_throughput * micro * (m + S - 1) / batch if req.min_throughput else 0.0
    stage_constraints = Constraints(constraints.area_mm2, constraints.tdp_w, stage_min)
    # Stages with the same blocks have the same search: run each distinct one once.
    key_of = [tuple(work.segments[s].block for s in st) for st in stages]
    distinct = list(dict.fromkeys(key_of))
    tasks = [(work, stages[key_of.index(k)], req.objective, stage_constraints, req.strategy, req.budget,
              req.seed, req.top_k, req.link_gbs, micro) for k in distinct]
    report(0.05, f"searching {len(distinct)} distinct stages of {S}")
    if cancelled is not None and cancelled():
        raise ValueError("search cancelled")
    results = _run_stages(req, tasks, report)
    per_stage = [results[distinct.index(k)] for k in key_of]
    stage_evs = [Evaluator(work, req.objective, stage_constraints, segments=st, link_gbs=req.link_gbs,
                           samples=micro) for st in stages]
    candidates = {e.design.key(): e.design for r in results for e in r.top}
    t0 = time.perf_counter()
    points = [evaluate_pipeline(d, stage_evs, m, batch, req.objective, req.min_throughput)
              for d in candidates.values()]
    select_s = time.perf_counter() - t0
    feasible = [p for p in points if p.objective is not None]
    best = max(feasible, key=lambda p: p.objective or 0.0) if feasible else None
    # Heterogeneous bound: every stage runs its own fastest candidate (an upper bound on any replicated
    # design drawn from the same candidates, since it may pick per stage).
    hetero_fb = [min(p.stage_fb_s[i] for p in points) for i in range(S)] if points else [float("inf")]
    hetero_opt = [min(p.stage_opt_s[i] for p in points) for i in range(S)] if points else [float("inf")]
    h_step = pipeline_step_s(hetero_fb, hetero_opt, m)
    ref_point = evaluate_pipeline(ref_design, stage_evs, m, batch, req.objective, 0.0)
    pipe: dict[str, Any] = {
        "stages": S, "microbatches": m, "micro_batch": micro,
        "partition": [[work.segments[s].name for s in st] for st in stages],
        "distinct_stage_searches": len(distinct),
        "per_stage": [r.to_json(with_trace=False) for r in per_stage],
        "candidates": len(points), "selection_s": select_s,
        "global": best.to_json() if best else None,
        "heterogeneous": {"step_s": h_step, "throughput": batch / h_step if h_step > 0 else 0.0},
        "reference": {"name": "TPUv2-like", **ref_point.to_json()},
        "evaluations": sum(r.evaluations for r in results) + len(points),
    }
    if best is None:
        pipe["global"] = None
        return SearchReport(req.to_json(), workload=summary, pipeline=pipe, seconds=time.perf_counter() - start,
                            error=None, notes=(*notes, "no design meets the limits on every stage"))
    # The chosen design's single-device view for the summary table: whole model, one device.
    whole = Evaluator(work, req.objective, constraints, link_gbs=req.link_gbs, samples=micro)
    best_ev = whole.evaluate(best.design)
    refs = _references(work, req, constraints, micro)
    return SearchReport(req.to_json(), workload=summary, best=best_ev, result=per_stage[0], references=refs,
                        pipeline=pipe, seconds=time.perf_counter() - start,
                        notes=(*notes, "best/references rows: the whole model on one device at the micro-batch"))
