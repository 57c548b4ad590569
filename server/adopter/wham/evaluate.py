"""Evaluate a design on a workload: per-block schedules → step time, throughput, Perf/TDP, feasibility.

`Evaluator` owns the evaluation counter and cache that every strategy shares, so budgets compare fairly:
a design counts once, however often it is proposed.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from adopter.wham.constants import LINK_GBS
from adopter.wham.cost import POOL, OpCost, op_cost
from adopter.wham.graph import Block, Workload
from adopter.wham.hardware import Constraints, Design, DesignSpace, area_mm2, tdp_w
from adopter.wham.plan import BlockPlan, plan_block
from adopter.wham.schedule import list_schedule

if TYPE_CHECKING:
    from adopter.wham.bound import GridBounds

OBJECTIVES = ("throughput", "perf-per-tdp")


@dataclass(frozen=True, slots=True)
class Evaluation:
    """A design's predicted performance and costs on one workload (or pipeline stage)."""

    design: Design
    step_s: float  # time of one step (or one stage's work for one micro-batch + its optimizer share)
    fb_s: float  # forward + backward part of step_s
    opt_s: float  # optimizer part of step_s
    throughput: float  # samples per second
    area_mm2: float
    tdp_w: float
    tensor_util: float
    vector_util: float
    critical: tuple[tuple[str, float], ...]  # resource -> seconds on the critical paths
    critical_ops: tuple[tuple[str, str, float], ...]  # (segment, op, seconds), longest first
    violations: tuple[str, ...]
    objective: float | None  # None when infeasible

    @property
    def feasible(self) -> bool:
        """Whether the design meets every constraint."""
        return not self.violations

    @property
    def perf_per_tdp(self) -> float:
        """Throughput per watt of TDP."""
        return self.throughput / self.tdp_w if self.tdp_w > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "design": self.design.to_json(), "label": self.design.label(), "step_s": self.step_s,
            "throughput": self.throughput, "perf_per_tdp": self.perf_per_tdp, "area_mm2": self.area_mm2,
            "tdp_w": self.tdp_w, "tensor_util": self.tensor_util, "vector_util": self.vector_util,
            "critical": dict(self.critical),
            "critical_ops": [{"segment": s, "op": o, "seconds": t} for s, o, t in self.critical_ops],
            "violations": list(self.violations), "objective": self.objective, "feasible": self.feasible,
        }


@dataclass(frozen=True, slots=True)
class BlockTime:
    """Cycles of one block on one design: forward+backward and optimizer, with critical-path detail."""

    fb: float
    opt: float
    critical: tuple[tuple[str, float], ...]
    critical_ops: tuple[tuple[str, float], ...]
    busy_tensor: float  # core-cycles the tensor cores were busy
    busy_vector: float


def block_time(block: Block, plan: BlockPlan, d: Design, link_gbs: float) -> BlockTime:
    """Schedule one block on `d`."""
    costs: list[OpCost] = [op_cost(op, d, link_gbs) for op in block.ops]
    capacity = (d.n_tc, d.n_vc, 1)
    times = []
    crit: dict[str, float] = defaultdict(float)
    crit_ops: dict[str, float] = defaultdict(float)
    for ids, deps in plan.parts:
        sched = list_schedule(deps, [costs[i] for i in ids], [POOL[block.ops[i].kind] for i in ids], capacity)
        times.append(sched.makespan)
        for j in sched.critical:
            c = costs[ids[j]]
            crit[c.bound] += c.cycles
            crit_ops[block.ops[ids[j]].name] += c.cycles
    busy_t = sum(block.ops[i].flops / 2.0 / (d.pe_x * d.pe_y) for i in range(len(costs)) if block.ops[i].is_gemm)
    busy_v = sum(costs[i].compute_cycles * costs[i].cores for i in range(len(costs))
                 if block.ops[i].kind == "vector")
    return BlockTime(times[0], times[1], tuple(crit.items()), tuple(crit_ops.items()), busy_t, busy_v)


@dataclass
class Evaluator:
    """Evaluates designs on a workload (optionally a sub-sequence of its segments) with a shared counter.

    `samples` is the number of samples one pass over the segments processes (the batch, or the
    micro-batch for a pipeline stage); throughput = samples / time.
    """

    workload: Workload
    objective: str
    constraints: Constraints
    segments: tuple[int, ...] | None = None  # indices into workload.segments; None = all
    link_gbs: float = LINK_GBS
    samples: int | None = None
    evaluations: int = 0
    cache: dict[tuple[float, ...], Evaluation] = field(default_factory=dict)
    history: list[tuple[int, float, float | None]] = field(default_factory=list)  # (n, wall s, objective)
    started: float = field(default_factory=time.perf_counter)
    bounded: int = 0  # designs given an analytical bound (`bounds`): not evaluations
    _plans: dict[int, BlockPlan] = field(default_factory=dict)
    _bounds: dict[DesignSpace, GridBounds] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective {self.objective!r}: allowed {', '.join(OBJECTIVES)}")
        seq = self.segments if self.segments is not None else tuple(range(len(self.workload.segments)))
        self.segments = seq
        self._counts: dict[int, int] = defaultdict(int)
        self._names: dict[int, str] = {}
        for s in seq:
            seg = self.workload.segments[s]
            self._counts[seg.block] += 1
            self._names.setdefault(seg.block, seg.name)
        for b, count in self._counts.items():
            self._plans[b] = plan_block(self.workload.blocks[b])
            if count > 1:
                self._names[b] += f" (×{count})"

    def cost_only(self, d: Design) -> tuple[float, float, tuple[str, ...]]:
        """Area, TDP and area/TDP violations: cheap, and not counted as an evaluation."""
        area, tdp = area_mm2(d), tdp_w(d)
        v = []
        if area > self.constraints.area_mm2 * (1 + 1e-9):
            v.append(f"area {area:.1f} mm² > {self.constraints.area_mm2:g}")
        if tdp > self.constraints.tdp_w * (1 + 1e-9):
            v.append(f"TDP {tdp:.1f} W > {self.constraints.tdp_w:g}")
        return area, tdp, tuple(v)

    def bounds(self, space: DesignSpace) -> GridBounds | None:
        """Analytical lower/upper bounds on the step time of every design of `space` (`bound.py`: the
        per-op latency formulas without the scheduler). Not an evaluation: it adds the grid's size to
        `bounded`, once per space. Raises `extras.MissingDependency` without numpy (never a silent skip)."""
        hit = self._bounds.get(space)
        if hit is not None:
            return hit
        from adopter.wham.extras import require

        require("the analytical bound", ("numpy",))
        from adopter.wham.lazy_bounds import LazyGridBounds
        samples = self.samples if self.samples is not None else self.workload.batch
        hit = LazyGridBounds(self.workload, self._counts, space, self.link_gbs, samples=samples,
                             objective=self.objective, constraints=self.constraints)
        self._bounds[space] = hit
        self.bounded += hit.size
        return hit

    def block_times(self, d: Design) -> dict[int, BlockTime]:
        """Per-unique-block times on `d` (not counted)."""
        return {b: block_time(self.workload.blocks[b], plan, d, self.link_gbs) for b, plan in self._plans.items()}

    def block_times_for(self, d: Design, block: int) -> BlockTime:
        """One block's time on `d` (not counted)."""
        plan = self._plans.get(block) or plan_block(self.workload.blocks[block])
        return block_time(self.workload.blocks[block], plan, d, self.link_gbs)

    def evaluate(self, d: Design) -> Evaluation:
        """Evaluate `d` (cached; each distinct design counts once toward the budget)."""
        key = d.key()
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        ev = self._evaluate(d)
        self.cache[key] = ev
        self.evaluations += 1
        self.history.append((self.evaluations, time.perf_counter() - self.started, ev.objective))
        return ev

    def _evaluate(self, d: Design) -> Evaluation:
        area, tdp, violations = self.cost_only(d)
        times = self.block_times(d)
        f = d.clock_mhz * 1e6
        fb = sum(times[b].fb * n for b, n in self._counts.items()) / f
        opt = sum(times[b].opt * n for b, n in self._counts.items()) / f
        step = fb + opt
        samples = self.samples if self.samples is not None else self.workload.batch
        thr = samples / step if step > 0 else math.inf
        crit: dict[str, float] = defaultdict(float)
        ops: dict[tuple[str, str], float] = defaultdict(float)
        busy_t = busy_v = 0.0
        for b, n in self._counts.items():
            bt = times[b]
            for r, c in bt.critical:
                crit[r] += c * n / f
            for o, c in bt.critical_ops:
                ops[(self._names[b], o)] += c * n / f
            busy_t += bt.busy_tensor * n
            busy_v += bt.busy_vector * n
        t_util = busy_t / (step * f * d.n_tc) if step > 0 else 0.0
        v_util = busy_v / (step * f * d.n_vc) if step > 0 else 0.0
        viol = list(violations)
        if self.objective == "perf-per-tdp" and thr < self.constraints.min_throughput:
            viol.append(f"throughput {thr:.4g}/s < {self.constraints.min_throughput:g}")
        value = thr if self.objective == "throughput" else thr / tdp
        top = sorted(ops.items(), key=lambda kv: -kv[1])[:10]
        return Evaluation(
            design=d, step_s=step, fb_s=fb, opt_s=opt, throughput=thr, area_mm2=area, tdp_w=tdp,
            tensor_util=min(1.0, t_util), vector_util=min(1.0, v_util),
            critical=tuple(sorted(crit.items(), key=lambda kv: -kv[1])),
            critical_ops=tuple((s, o, t) for (s, o), t in top), violations=tuple(viol),
            objective=None if viol else value,
        )

    def best(self) -> Evaluation | None:
        """The best feasible evaluation so far."""
        feasible = [e for e in self.cache.values() if e.objective is not None]
        return max(feasible, key=lambda e: (e.objective, -e.area_mm2)) if feasible else None


def score(ev: Evaluation) -> float:
    """The value a strategy maximises: the objective, or a penalty below any feasible value."""
    if ev.objective is not None:
        return ev.objective
    return -1.0 - len(ev.violations)


def peak_bound_s(work_flops: float, work_bytes: float, d: Design) -> float:
    """The physical lower bound on a step: FLOPs at peak MAC rate, or bytes at full bandwidth."""
    return max(work_flops / d.peak_flops, work_bytes / (d.bandwidth_gbs * 1e9))


def segments_flops(workload: Workload, segments: Sequence[int]) -> float:
    """GEMM FLOPs of a segment subset."""
    return sum(op.flops for s in segments for op in workload.blocks[workload.segments[s].block].ops
               if op.is_gemm)
