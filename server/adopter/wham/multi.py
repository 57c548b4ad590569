"""One common design for a set of models (WHAM's "mining an accelerator for a set of DNNs").

The set's objective aggregates the per-model objectives of one design: their geometric mean
(`geomean`, default), or the worst model's fraction of its own single-model best (`worst`). The search
runs in three steps:

1. per model, in parallel (`run_tasks`: a process pool, or Ray): trace the model, bound every design of
   the grid analytically (`bound.py`) and search its own best design — the reference for `worst` and for
   the report;
2. the common search: any strategy over `SetEvaluator`, which evaluates a design on every model (each
   evaluation is milliseconds, so it runs in-process) and aggregates. Its analytical bound aggregates the
   per-model bounds the same way; both aggregates are monotone in every model's objective, so the
   aggregate of per-model upper bounds is an upper bound on the aggregate: WHAM prunes a design only when
   it cannot win the aggregate;
3. the report: per model, the common design's throughput beside that model's own best and the reference
   designs.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from adopter.wham.engine import StrategyResult, run_strategy
from adopter.wham.evaluate import Evaluation, Evaluator
from adopter.wham.hardware import REFERENCE_DESIGNS, Constraints, Design, DesignSpace
from adopter.wham.models import WorkloadError, WorkloadSpec, load_workload
from adopter.wham.report import Reference, SearchReport, pareto_front
from adopter.wham.request import SearchRequest
from adopter.wham.strategies import make_strategy

if TYPE_CHECKING:
    from adopter.wham.bound import GridBounds

Progress = Callable[[float, str], None]
Cancelled = Callable[[], bool]


def aggregate(values: Sequence[float], how: str) -> float:
    """geomean of `values`, or their minimum (`worst`; the values are then fractions of each own best)."""
    if not values:
        return 0.0
    if how == "worst":
        return min(values)
    if any(v <= 0 for v in values):
        return 0.0
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _geo(values: list[float]) -> float:
    return aggregate(values, "geomean")


@dataclass
class SetEvaluator:
    """Evaluates a design on every model of a set and aggregates (the `Evaluator` interface the engine and
    strategies use). `own_best[i]` is model i's own best objective (needed by `worst`). One design counts
    once, however many models it is evaluated on."""

    evaluators: list[Evaluator]
    names: list[str]
    how: str
    own_best: list[float]
    evaluations: int = 0
    bounded: int = 0
    cache: dict[tuple[float, ...], Evaluation] = field(default_factory=dict)
    per_model: dict[tuple[float, ...], tuple[Evaluation, ...]] = field(default_factory=dict)
    _bounds: dict[DesignSpace, GridBounds] = field(default_factory=dict)

    def cost_only(self, d: Design) -> tuple[float, float, tuple[str, ...]]:
        """Area, TDP and their violations (the same for every model)."""
        return self.evaluators[0].cost_only(d)

    def _combine(self, objectives: Sequence[float | None]) -> float | None:
        if any(o is None for o in objectives):
            return None
        vals = [float(o) for o in objectives if o is not None]
        if self.how == "worst":
            vals = [v / b if b > 0 else 0.0 for v, b in zip(vals, self.own_best)]
        return aggregate(vals, self.how)

    def evaluate(self, d: Design) -> Evaluation:
        """Evaluate `d` on every model (cached; counted once) and aggregate."""
        key = d.key()
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        per = tuple(ev.evaluate(d) for ev in self.evaluators)
        self.per_model[key] = per
        out = self.combine(d, per)
        self.cache[key] = out
        self.evaluations += 1
        return out

    def combine(self, d: Design, per: Sequence[Evaluation]) -> Evaluation:
        """The set's evaluation of `d` from its per-model evaluations."""
        objective = self._combine([e.objective for e in per])
        crit: dict[str, float] = defaultdict(float)
        if self.how == "worst" and objective is not None:
            ratios = [(e.objective or 0.0) / b if b > 0 else 0.0 for e, b in zip(per, self.own_best)]
            worst = ratios.index(min(ratios))
            for r, t in per[worst].critical:
                crit[r] += t / per[worst].step_s if per[worst].step_s > 0 else 0.0
        else:
            # The geometric mean moves with each model's relative speed-up: weigh each critical path by
            # 1 / that model's step time.
            for e in per:
                for r, t in e.critical:
                    crit[r] += t / e.step_s if e.step_s > 0 else 0.0
        ops = sorted(((f"{n}: {s}", o, t) for n, e in zip(self.names, per) for s, o, t in e.critical_ops[:3]),
                     key=lambda x: -x[2])
        violations = tuple(dict.fromkeys(
            v if v.startswith(("area", "TDP")) else f"{n}: {v}" for n, e in zip(self.names, per)
            for v in e.violations))
        return Evaluation(
            design=d, step_s=_geo([e.step_s for e in per]), fb_s=_geo([e.fb_s for e in per]),
            opt_s=_geo([e.opt_s for e in per]), throughput=_geo([e.throughput for e in per]),
            area_mm2=per[0].area_mm2, tdp_w=per[0].tdp_w,
            tensor_util=sum(e.tensor_util for e in per) / len(per),
            vector_util=sum(e.vector_util for e in per) / len(per),
            critical=tuple(sorted(crit.items(), key=lambda kv: -kv[1])), critical_ops=tuple(ops[:10]),
            violations=violations, objective=objective if not violations else None,
        )

    def bounds(self, space: DesignSpace) -> GridBounds | None:
        """The aggregate of the per-model bounds."""
        hit = self._bounds.get(space)
        if hit is not None:
            return hit
        per = [ev.bounds(space) for ev in self.evaluators]  # raises naming numpy when it is missing
        import numpy as np

        from adopter.wham.bound import GridBounds

        gb = [b for b in per if b is not None]

        def agg(arrays: list[Any], scale: bool) -> Any:
            stack = np.stack([np.asarray(a, dtype=np.float64) for a in arrays])
            if self.how == "worst" and scale:
                own = np.asarray(self.own_best, dtype=np.float64).reshape((-1,) + (1,) * (stack.ndim - 1))
                return np.min(np.where(stack > -np.inf, stack / np.where(own > 0, own, 1.0), -np.inf), axis=0)
            with np.errstate(divide="ignore", invalid="ignore"):
                logs = np.where(stack > 0, np.log(np.where(stack > 0, stack, 1.0)), -np.inf)
            return np.exp(np.mean(logs, axis=0))

        hit = GridBounds(space, agg([b.lower_s for b in gb], False), agg([b.upper_s for b in gb], False),
                         gb[0].area_mm2, gb[0].tdp_w, agg([b.objective_upper for b in gb], True),
                         agg([b.objective_estimate for b in gb], True))
        self._bounds[space] = hit
        self.bounded += hit.size
        return hit


@dataclass(frozen=True, slots=True)
class ModelOutcome:
    """What one model's task returns: its workload summary and own search, or the error naming it."""

    name: str
    batch: int
    seq: int
    workload: Any = None  # graph.Workload
    result: StrategyResult | None = None
    bounds: Any = None  # GridBounds of the full grid, when the strategy computed it
    error: str | None = None


def model_task(args: tuple[Any, ...]) -> ModelOutcome:
    """Trace one model of the set and search its own best design (top level: process pools and Ray run it)."""
    name, batch, seq, path, timeout, objective, constraints, strategy, budget, seed, top_k, link_gbs = args
    try:
        work = load_workload(WorkloadSpec(name, batch, seq, path), timeout_s=timeout)
    except (WorkloadError, ValueError) as exc:
        return ModelOutcome(name, batch, seq, error=str(exc))
    ev = Evaluator(work, objective, constraints, link_gbs=link_gbs, samples=batch)
    space = DesignSpace()
    result = run_strategy(make_strategy(strategy, top_k), ev, space, budget=budget, seed=seed, top_k=top_k)
    bounds = ev._bounds.get(space)
    if bounds is not None:  # the set's aggregate reads the whole grid: compute it here, in the model's task
        from adopter.wham.bound import GridBounds

        bounds = GridBounds(space, *bounds.arrays())
    return ModelOutcome(name, batch, seq, work, result, bounds)


def search_set(req: SearchRequest, report: Progress, cancelled: Cancelled | None, start: float) -> SearchReport:
    """Search one common design for every model of `req.model` (comma-separated)."""
    from adopter.executors import run_tasks

    constraints = Constraints(req.area_mm2, req.tdp_w, req.min_throughput)
    # On Ray the folder of the user's `module:factory` goes to every worker as its working directory
    # (runtime_env): the tasks then import from "." there, which a worker on another machine has too.
    ship = req.model_path if req.executor == "ray" and req.model_path else None
    tasks = []
    for name, b, s in req.model_entries:
        one = req.for_model(name, b, s)
        tasks.append((name, one.resolved_batch, one.resolved_seq, "." if ship else req.model_path,
                      req.trace_timeout_s, req.objective, constraints, req.strategy, req.budget, req.seed,
                      req.top_k, req.link_gbs))
    report(0.0, f"tracing and searching {len(tasks)} models one by one")
    outcomes = run_tasks(model_task, tasks, executor=req.executor, workers=req.workers,
                         ray_address=req.ray_address, working_dir=ship,
                         progress=lambda f, m: report(0.5 * f, "per-model searches"))
    failed = [o for o in outcomes if o.error]
    if failed:
        raise ValueError("; ".join(f"model {o.name}: {o.error}" for o in failed))
    if cancelled is not None and cancelled():
        raise ValueError("search cancelled")
    names = [o.name for o in outcomes]
    own = [o.result.best.objective if o.result and o.result.best and o.result.best.objective else 0.0
           for o in outcomes]
    if req.aggregate == "worst" and not all(own):
        missing = [n for n, v in zip(names, own) if not v]
        raise ValueError(f"--aggregate worst: no feasible design for {', '.join(missing)} on its own, so its "
                         "fraction of its own best is undefined; raise --area-mm2/--tdp-w or use geomean")
    space = DesignSpace()

    def set_evaluator() -> SetEvaluator:
        evs = []
        for o in outcomes:
            ev = Evaluator(o.workload, req.objective, constraints, link_gbs=req.link_gbs, samples=o.batch)
            if o.bounds is not None:
                ev._bounds[space] = o.bounds  # computed by the model's own task
            evs.append(ev)
        return SetEvaluator(evs, names, req.aggregate, own)

    main = set_evaluator()
    report(0.5, f"common design: {req.strategy} over {len(names)} models")
    result = run_strategy(make_strategy(req.strategy, req.top_k), main, space, budget=req.budget, seed=req.seed,
                          top_k=req.top_k, progress=lambda f, m: report(0.5 + 0.4 * f, m), cancelled=cancelled)
    comparisons = []
    for name in req.compare:
        if cancelled is not None and cancelled():
            break
        comparisons.append(run_strategy(make_strategy(name, req.top_k), set_evaluator(), space, budget=req.budget,
                                        seed=req.seed, top_k=req.top_k, cancelled=cancelled))
    probe = set_evaluator()  # references and per-model rows: not counted as the search's evaluations
    refs = tuple(Reference(n, probe.evaluate(make())) for n, make in REFERENCE_DESIGNS.items())
    per_model: list[dict[str, Any]] = []
    best = result.best
    for i, o in enumerate(outcomes):
        row: dict[str, Any] = {"model": o.name, "batch": o.batch, "seq": o.seq, "workload": o.workload.to_json(),
                               "own_best": o.result.best.to_json() if o.result and o.result.best else None,
                               "own_search": o.result.to_json(with_trace=False) if o.result else None}
        row["workload"]["batch"] = o.batch
        if best is not None:
            common = probe.evaluators[i].evaluate(best.design)
            row["common"] = common.to_json()
            row["common_vs_own"] = (common.objective / own[i]) if common.objective and own[i] else None
        row["references"] = {ref.name: probe.per_model[ref.evaluation.design.key()][i].to_json() for ref in refs}
        per_model.append(row)
    return SearchReport(
        request=req.to_json(), workload={"model": req.model, "models": names, "aggregate": req.aggregate},
        best=best, result=result, references=refs, pareto=pareto_front(list(main.cache.values())),
        seconds=time.perf_counter() - start, comparisons=tuple(comparisons), models=tuple(per_model),
        notes=(f"the found/reference rows give the geometric mean over the {len(names)} models of samples/s "
               "and step time, and the mean utilisation",),
    )
