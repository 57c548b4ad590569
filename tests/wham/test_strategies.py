"""Conformance suite run over every strategy: bounds, determinism, infeasible points, beats random."""

from __future__ import annotations

import os
import statistics

import pytest

from adopter.wham.engine import run_strategy
from adopter.wham.evaluate import Constraints, Evaluator
from adopter.wham.hardware import DesignSpace, area_mm2, tpuv2_like
from adopter.wham.strategies import STRATEGIES, make_strategy
from adopter.wham.strategies.wham import WhamStrategy

from .synthetic import toy_workload

WORK = toy_workload(layers=2)
SPACE = DesignSpace()
BUDGET = 20
ALL = sorted(STRATEGIES)


# Optuna's GPSampler costs ~1 s per proposal once past its 10 random start-up trials: the conformance
# tests give it at most 12 proposals (2 model-based), and its beats-random check runs only with
# ADOPTER_SLOW_TESTS=1 (it takes minutes).
GP_BUDGET = 12
SLOW = os.environ.get("ADOPTER_SLOW_TESTS") == "1"


def run(name: str, seed: int = 0, budget: int = BUDGET, area: float = 606.7, tdp: float = 400.0,
        objective: str = "throughput", min_thr: float = 0.0, *, full_gp: bool = False):
    if name == "gp" and not full_gp:
        budget = min(budget, GP_BUDGET)
    ev = Evaluator(WORK, objective, Constraints(area, tdp, min_thr))
    return run_strategy(make_strategy(name), ev, SPACE, budget=budget, seed=seed), ev


@pytest.mark.parametrize("name", ALL)
def test_stays_in_bounds_and_budget(name: str) -> None:
    result, ev = run(name)
    assert 1 <= result.evaluations <= BUDGET and ev.evaluations == result.evaluations
    assert name == "wham" or result.evaluations == (GP_BUDGET if name == "gp" else BUDGET) or \
        result.stopped == "converged"
    assert all(SPACE.contains(e.design) for e in ev.cache.values())
    assert [n for n, _, _ in result.trace] == list(range(1, result.evaluations + 1))
    assert result.best is not None and result.best.feasible
    assert result.best.objective == max(e.objective for e in ev.cache.values() if e.objective is not None)
    assert 1 <= result.evals_to_best <= result.evaluations


@pytest.mark.parametrize("name", ALL)
def test_deterministic_for_a_seed(name: str) -> None:
    a, ev_a = run(name, seed=3, budget=12)
    b, ev_b = run(name, seed=3, budget=12)
    assert list(ev_a.cache) == list(ev_b.cache)
    assert [t[2] for t in a.trace] == [t[2] for t in b.trace]


@pytest.mark.parametrize("name", ALL)
def test_infeasible_points_never_win(name: str) -> None:
    # An area limit only small designs meet: whatever is proposed, the best must be within it.
    limit = 40.0
    result, ev = run(name, budget=15, area=limit)
    if result.best is not None:
        assert result.best.area_mm2 <= limit
    assert all(e.objective is None for e in ev.cache.values() if e.area_mm2 > limit)


@pytest.mark.parametrize("name", ALL)
def test_impossible_limits_give_no_best(name: str) -> None:
    result, _ = run(name, budget=10, area=0.1)
    assert result.best is None and result.top == ()


@pytest.mark.parametrize("name", ALL)
def test_cancellation_stops_the_search(name: str) -> None:
    ev = Evaluator(WORK, "throughput", Constraints(606.7, 400.0))
    calls: list[int] = []
    result = run_strategy(make_strategy(name), ev, SPACE, budget=BUDGET,
                          cancelled=lambda: len(calls) > 3 or calls.append(1) is not None)
    assert result.stopped == "cancelled" and result.evaluations <= 4


# NSGA-II is left out: at budgets this small it needs more generations than it gets and is no better than
# random (measured: mean of 4 seeds at 40 evaluations 46.8 k vs random 47.6 k samples/s). The benchmark
# compares it at the full budget.
@pytest.mark.parametrize("name", [n for n in ALL if n not in ("random", "exhaustive", "nsga2")])
def test_beats_random_on_a_toy_model(name: str) -> None:
    """At equal budget, the model-guided strategies find better designs than random search (2 seeds)."""
    if name == "gp" and not SLOW:
        pytest.skip("GP at budget 40 takes minutes; set ADOPTER_SLOW_TESTS=1")
    area = area_mm2(tpuv2_like())
    mine = statistics.mean(run(name, seed=s, budget=40, area=area, full_gp=True)[0].best.objective
                           for s in range(2))
    rand = statistics.mean(run("random", seed=s, budget=40, area=area)[0].best.objective for s in range(2))
    assert mine > rand


def test_perf_per_tdp_with_minimum_throughput() -> None:
    result, _ev = run("wham", objective="perf-per-tdp", min_thr=1.0)
    assert result.best is not None and result.best.throughput >= 1.0
    assert result.best.objective == pytest.approx(result.best.throughput / result.best.tdp_w)


def test_wham_converges_before_the_budget() -> None:
    result, _ = run("wham", budget=5000)
    assert result.stopped == "converged" and result.evaluations < 5000


def test_exhaustive_finds_the_reduced_grid_optimum_and_wham_gets_close() -> None:
    exh, _ = run("exhaustive", budget=100_000)
    assert exh.stopped == "converged"
    wham, _ = run("wham", budget=500)
    assert wham.best.objective >= 0.9 * exh.best.objective


def test_unknown_strategy_and_bad_parameters() -> None:
    with pytest.raises(ValueError, match="--strategy 'nope'"):
        make_strategy("nope")
    with pytest.raises(ValueError, match="top_k"):
        WhamStrategy(top_k=0)
