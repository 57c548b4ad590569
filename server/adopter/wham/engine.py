"""The search loop: owns the budget, the shared evaluation counter and cache, progress and cancellation."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from adopter.wham.evaluate import Evaluation
from adopter.wham.hardware import DesignSpace
from adopter.wham.strategies.base import Probe, SearchStrategy

if TYPE_CHECKING:
    from adopter.wham.bound import GridBounds
    from adopter.wham.hardware import Design


class Scorer(Protocol):
    """What the loop needs of an evaluator: `Evaluator` (one workload) or `multi.SetEvaluator` (a set)."""

    evaluations: int
    bounded: int

    def cost_only(self, d: Design) -> tuple[float, float, tuple[str, ...]]: ...
    def bounds(self, space: DesignSpace) -> GridBounds | None: ...
    def evaluate(self, d: Design) -> Evaluation: ...


# A strategy that keeps proposing designs it has already seen is stuck; stop it after this many.
MAX_REPEATS = 200

Progress = Callable[[float, str], None]
Cancelled = Callable[[], bool]


@dataclass(frozen=True, slots=True)
class StrategyResult:
    """Outcome of one strategy run: best design, when it was found, the convergence trace, the top-k."""

    strategy: str
    best: Evaluation | None
    evaluations: int
    evals_to_best: int
    seconds: float
    seconds_to_best: float
    trace: tuple[tuple[int, float, float | None], ...]  # (evaluation n, wall s, best objective so far)
    top: tuple[Evaluation, ...]
    stopped: str  # "budget" | "converged" | "cancelled" | "stuck"
    bounded: int = 0  # designs given an analytical bound (Probe.bound), which are not evaluations
    # CPU seconds of this process (time.process_time), beside the wall seconds: on a shared machine the
    # wall clock also counts other processes' turns, the CPU time does not.
    cpu_seconds: float = 0.0
    cpu_seconds_to_best: float = 0.0

    def to_json(self, *, with_trace: bool = True) -> dict[str, Any]:
        """JSON-able form."""
        out: dict[str, Any] = {
            "strategy": self.strategy, "best": self.best.to_json() if self.best else None,
            "evaluations": self.evaluations, "evals_to_best": self.evals_to_best, "seconds": self.seconds,
            "seconds_to_best": self.seconds_to_best, "stopped": self.stopped,
            "top": [e.to_json() for e in self.top], "bounded": self.bounded,
            "cpu_seconds": self.cpu_seconds, "cpu_seconds_to_best": self.cpu_seconds_to_best,
        }
        if with_trace:
            out["trace"] = [{"n": n, "seconds": s, "best": b} for n, s, b in self.trace]
        return out


def run_strategy(
    strategy: SearchStrategy,
    evaluator: Scorer,
    space: DesignSpace,
    *,
    budget: int,
    seed: int = 0,
    top_k: int = 4,
    progress: Progress | None = None,
    cancelled: Cancelled | None = None,
) -> StrategyResult:
    """Run `strategy` until `budget` distinct designs are evaluated, it converges, or it is cancelled."""
    from adopter.wham.extras import require

    require(f"--strategy {strategy.name}", strategy.requires)
    start, cpu_start = time.perf_counter(), time.process_time()
    base, bounded = evaluator.evaluations, evaluator.bounded
    strategy.start(space, seed, Probe(lambda d: evaluator.cost_only(d)[2], bound=evaluator.bounds))
    best: Evaluation | None = None
    evals_to_best, t_best, cpu_best = 0, 0.0, 0.0
    trace: list[tuple[int, float, float | None]] = []
    mine: dict[tuple[float, ...], Evaluation] = {}
    repeats = 0
    stopped = "budget"
    while evaluator.evaluations - base < budget:
        if cancelled is not None and cancelled():
            stopped = "cancelled"
            break
        design = strategy.ask()
        if design is None:
            stopped = "converged"
            break
        before = evaluator.evaluations
        ev = evaluator.evaluate(design)
        strategy.tell(design, ev)
        key = design.key()
        if key in mine:
            repeats += 1
            if repeats >= MAX_REPEATS:
                stopped = "stuck"
                break
            continue
        mine[key] = ev
        repeats = 0
        n = evaluator.evaluations - base if evaluator.evaluations > before else len(mine)
        if ev.objective is not None and (best is None or best.objective is None or ev.objective > best.objective):
            best, evals_to_best, t_best = ev, n, time.perf_counter() - start
            cpu_best = time.process_time() - cpu_start
        trace.append((n, time.perf_counter() - start, best.objective if best else None))
        if progress is not None and n % max(1, budget // 50) == 0:
            progress(min(1.0, n / budget), f"{strategy.name}: {n}/{budget} designs")
    feasible = sorted((e for e in mine.values() if e.objective is not None),
                      key=lambda e: (-(e.objective or 0.0), e.area_mm2))
    return StrategyResult(
        strategy=strategy.name, best=best, evaluations=len(mine), evals_to_best=evals_to_best,
        seconds=time.perf_counter() - start, seconds_to_best=t_best, trace=tuple(trace),
        top=tuple(feasible[:top_k]), stopped=stopped, bounded=evaluator.bounded - bounded,
        cpu_seconds=time.process_time() - cpu_start, cpu_seconds_to_best=cpu_best,
    )
