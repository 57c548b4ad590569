"""The result of a search (`SearchReport`): JSON for tools, a text table for people."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from adopter.wham.engine import StrategyResult
from adopter.wham.evaluate import Evaluation
from adopter.wham.hardware import DesignSpace, area_mm2, smallest_design, tdp_w


@dataclass(frozen=True, slots=True)
class Reference:
    """A reference design evaluated on the same workload (single device or replicated pipeline)."""

    name: str
    evaluation: Evaluation
    pipeline: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """JSON-able form."""
        out = {"name": self.name, **self.evaluation.to_json()}
        if self.pipeline is not None:
            out["pipeline"] = self.pipeline
        return out


@dataclass(frozen=True, slots=True)
class SearchReport:
    """Everything a search produced; `error` is set (and the rest mostly empty) when it could not run."""

    request: dict[str, Any]
    error: str | None = None
    workload: dict[str, Any] | None = None
    best: Evaluation | None = None
    result: StrategyResult | None = None
    references: tuple[Reference, ...] = ()
    pareto: tuple[Evaluation, ...] = ()
    pipeline: dict[str, Any] | None = None
    tensor_parallel: dict[str, Any] | None = None
    seconds: float = 0.0
    notes: tuple[str, ...] = field(default_factory=tuple)
    comparisons: tuple[StrategyResult, ...] = ()
    models: tuple[dict[str, Any], ...] = ()  # a set of models: per model, the common design beside its own best

    @property
    def ok(self) -> bool:
        """Whether the search ran and found a feasible design."""
        return self.error is None

    def to_json(self) -> dict[str, Any]:
        """The report as plain JSON data (stable keys; see docs/wham.md)."""
        return {
            "version": 1,
            "request": self.request,
            "error": self.error,
            "workload": self.workload,
            "best": self.best.to_json() if self.best else None,
            "search": self.result.to_json() if self.result else None,
            "references": [r.to_json() for r in self.references],
            "pareto": [e.to_json() for e in self.pareto],
            "pipeline": self.pipeline,
            "tensor_parallel": self.tensor_parallel,
            "seconds": self.seconds,
            "notes": list(self.notes),
            "comparisons": [c.to_json() for c in self.comparisons],
            "objective": objective_line(self.request),
            "models": list(self.models),
        }


def pareto_front(evals: list[Evaluation]) -> tuple[Evaluation, ...]:
    """Designs not dominated in (higher throughput, lower TDP), among those within the area/TDP limits."""
    pts = sorted((e for e in evals if not any(v.startswith(("area", "TDP")) for v in e.violations)),
                 key=lambda e: (e.tdp_w, -e.throughput))
    front: list[Evaluation] = []
    best = -1.0
    for e in pts:
        if e.throughput > best:
            front.append(e)
            best = e.throughput
    return tuple(front)


def objective_line(request: dict[str, Any]) -> str:
    """What the search maximises, in words, from the request's JSON."""
    objective = request.get("objective", "throughput")
    base = "throughput (samples/s)" if objective == "throughput" else \
        f"throughput per W of TDP (samples/s/W, at ≥ {request.get('min_throughput', 0):g} samples/s)"
    model = str(request.get("model", ""))
    if "," not in model:
        return base
    if request.get("aggregate") == "worst":
        return f"the worst model's fraction of its own best {base}"
    return f"the geometric mean over the models of {base}"


def infeasible_advice(request: dict[str, Any], space: DesignSpace | None = None) -> str:
    """What to change when no design met the limits, naming the real bound: the grid's smallest design's area
    and TDP (no design is smaller), so a limit under them is answered with that figure, not "raise --budget"."""
    small = smallest_design(space or DesignSpace())
    area, tdp = area_mm2(small), tdp_w(small)
    limit_a, limit_t = float(request.get("area_mm2", 0.0)), float(request.get("tdp_w", 0.0))
    short = []
    if limit_a < area:
        short.append(f"--area-mm2 {limit_a:g} is under {area:.1f} mm²")
    if limit_t < tdp:
        short.append(f"--tdp-w {limit_t:g} is under {tdp:.1f} W")
    if short:
        return (f"{' and '.join(short)}, the smallest design of the grid ({small.label()}: {area:.1f} mm², "
                f"{tdp:.1f} W); no design fits, whatever the budget: raise the limit to at least that")
    if request.get("objective") == "perf-per-tdp" and float(request.get("min_throughput", 0.0)) > 0:
        return (f"no evaluated design reached --min-throughput {float(request['min_throughput']):g} samples/s "
                "within the limits: lower it, raise --area-mm2/--tdp-w, or raise --budget")
    return (f"the smallest design ({area:.1f} mm², {tdp:.1f} W) fits the limits, but none evaluated did: "
            "raise --budget, --area-mm2 or --tdp-w")


def _fmt(v: float) -> str:
    """Six significant digits: enough to tell apart designs within 0.01 % of each other."""
    return f"{v:.6g}"


def summary_table(report: SearchReport) -> str:
    """A readable multi-line summary: workload, best design, comparison with the references."""
    if report.error:
        return f"error: {report.error}"
    lines = [f"objective {objective_line(report.request)}, area ≤ {report.request.get('area_mm2', 0):g} mm², "
             f"TDP ≤ {report.request.get('tdp_w', 0):g} W"]
    if report.workload and report.models:
        lines.append(f"workload  {len(report.models)} models: " + ", ".join(
            f"{m['model']} ({m['batch']}×{m['seq']})" for m in report.models))
    elif report.workload:
        w = report.workload
        lines.append(f"workload  {w['model']}  batch {w['batch']}  seq {w['seq']}  "
                     f"{w['params'] / 1e6:.1f} M params  {w['flops'] / 1e12:.3g} TFLOP/step  {w['ops']} ops")
    r = report.result
    if r is not None:
        bounded = f"; {r.bounded} designs bounded analytically" if r.bounded else ""
        lines.append(f"search    {r.strategy}: {r.evaluations} designs evaluated, best after {r.evals_to_best} "
                     f"({r.seconds:.3f} s, stopped: {r.stopped}{bounded})")
    for c in report.comparisons:
        best = _fmt(c.best.objective) if c.best and c.best.objective is not None else "none feasible"
        lines.append(f"compare   {c.strategy}: best {best} after {c.evals_to_best} of {c.evaluations} designs "
                     f"({c.seconds:.3f} s)")
    b = report.best
    if b is None:
        lines.append(f"no feasible design found: {infeasible_advice(report.request)}")
        return "\n".join(lines)
    d = b.design
    lines.append(f"best      {d.label()}  @ {d.clock_mhz:g} MHz, {d.bandwidth_gbs:g} GB/s"
                 + (f"  objective {_fmt(b.objective)}" if b.objective is not None else ""))
    header = f"{'design':<14}{'samples/s':>13}{'step ms':>12}{'Perf/TDP':>13}{'area mm²':>10}{'TDP W':>8}" \
             f"{'TC util':>9}{'VC util':>9}"
    lines += ["", header, "-" * len(header)]
    rows: list[tuple[str, Evaluation]] = [("found", b)] + [(ref.name, ref.evaluation) for ref in report.references]
    for name, e in rows:
        lines.append(f"{name:<14}{_fmt(e.throughput):>13}{e.step_s * 1e3:>12.6g}{_fmt(e.perf_per_tdp):>13}"
                     f"{e.area_mm2:>10.1f}{e.tdp_w:>8.1f}{e.tensor_util:>9.1%}{e.vector_util:>9.1%}")
    if report.models:
        lines += ["", _models_table(report)]
    if b.critical:
        total = sum(t for _, t in b.critical) or 1.0
        lines.append("")
        lines.append("critical path: " + ", ".join(f"{r} {t / total:.0%}" for r, t in b.critical))
        for seg, op, t in b.critical_ops[:5]:
            lines.append(f"  {t * 1e3:8.3f} ms  {seg}: {op}")
    if report.pipeline:
        p = report.pipeline
        lines.append("")
        lines.append(f"pipeline  {p['stages']} stages × {p['microbatches']} micro-batches: replicated design "
                     f"{_fmt(p['global']['throughput'])} samples/s, Perf/TDP {_fmt(p['global']['perf_per_tdp'])}; "
                     f"heterogeneous bound {_fmt(p['heterogeneous']['throughput'])} samples/s")
        if p.get("reference"):
            row = p["reference"]
            lines.append(f"          {row['name']} replicated: {_fmt(row['throughput'])} samples/s, "
                         f"Perf/TDP {_fmt(row['perf_per_tdp'])}")
    if report.tensor_parallel:
        tp = report.tensor_parallel
        lines.append(f"tensor parallel {tp['degree']}-way over {tp['link_gbs']:g} GB/s links: "
                     f"all-reduce {tp['allreduce_s'] * 1e3:.3f} ms per step")
    for n in report.notes:
        lines.append(f"note: {n}")
    if r is not None:
        lines.append(f"took      {report.seconds:.3f} s in all: the {r.strategy} search {r.seconds:.3f} s, the rest "
                     "tracing/loading graphs, per-model searches, references and comparisons")
    return "\n".join(lines)


def _models_table(report: SearchReport) -> str:
    """Per model of a set: the common design beside the model's own best and the references, in the unit of
    the search's objective (samples/s, or samples/s per W under `perf-per-tdp`). The ratio is the JSON's
    `common_vs_own`, so the table and the JSON never disagree."""
    refs = [ref.name for ref in report.references]
    per_tdp = report.request.get("objective") == "perf-per-tdp"
    key, unit = ("perf_per_tdp", "Perf/TDP (samples/s/W)") if per_tdp else ("throughput", "samples/s")
    header = f"{'model':<18}{'common':>12}{'own best':>12}{'common/own':>11}" + "".join(f"{n:>13}" for n in refs)
    out = [f"{unit} per model", header, "-" * len(header)]
    for m in report.models:
        common = (m.get("common") or {}).get(key)
        own = (m.get("own_best") or {}).get(key)
        ratio_v = m.get("common_vs_own")
        ratio = f"{ratio_v:.1%}" if ratio_v is not None else "—"
        cells = "".join(f"{_fmt(m['references'][n][key]):>13}" for n in refs)
        out.append(f"{m['model'][:17]:<18}{_fmt(common) if common else '—':>12}{_fmt(own) if own else '—':>12}"
                   f"{ratio:>11}{cells}")
    return "\n".join(out)
