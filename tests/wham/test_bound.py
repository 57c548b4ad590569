"""The analytical bound (`adopter.wham.bound`) and how the WHAM strategy uses it."""

from __future__ import annotations

import copy
import math
import random

import numpy as np
import pytest

from adopter.wham.bound import _Grid, op_cycles_grid
from adopter.wham.cost import op_cost
from adopter.wham.engine import StrategyResult, run_strategy
from adopter.wham.evaluate import Constraints, Evaluator
from adopter.wham.graph import Workload, build_workload
from adopter.wham.hardware import PARAMS, Design, DesignSpace, area_mm2, tdp_w
from adopter.wham.parallel import shard_workload
from adopter.wham.plan import plan_block
from adopter.wham.strategies import make_strategy
from adopter.wham.strategies.base import Probe
from adopter.wham.strategies.wham import WhamStrategy

from .synthetic import gemm, toy_workload, vec

SPACE = DesignSpace()
WORK = toy_workload(layers=2)
# Tensor parallelism adds all-reduce ops on the link pool.
SHARDED = shard_workload(toy_workload(layers=1), 4)


def random_points(n: int, seed: int = 0) -> list[tuple[int, ...]]:
    rng = random.Random(seed)
    return [tuple(rng.randrange(len(SPACE.values(p))) for p in PARAMS) for _ in range(n)]


def evaluator(work: Workload, objective: str = "throughput", limits: Constraints | None = None) -> Evaluator:
    return Evaluator(work, objective, limits or Constraints(606.7, 400.0), link_gbs=50.0)


@pytest.mark.parametrize("work", [WORK, SHARDED], ids=["toy", "tensor-parallel"])
def test_op_latencies_are_the_cost_models(work: Workload) -> None:
    g = _Grid(SPACE)
    for idx in random_points(25):
        d = SPACE.design(idx)
        for block in work.blocks:
            for op in block.ops:
                cycles, cores, _pool = op_cycles_grid(op, g, 50.0)
                expected = op_cost(op, d, 50.0)
                assert np.broadcast_to(cycles, g.shape)[idx] == expected.cycles, op.name
                assert np.broadcast_to(cores, g.shape)[idx] == expected.cores, op.name


@pytest.mark.parametrize("work", [WORK, SHARDED], ids=["toy", "tensor-parallel"])
def test_bounds_bracket_the_scheduled_step_time(work: Workload) -> None:
    ev = evaluator(work)
    bounds = ev.bounds(SPACE)
    assert bounds is not None and bounds.size == SPACE.size() and ev.bounded == SPACE.size()
    assert ev.evaluations == 0  # bounding is not evaluating
    tight = 0
    for idx in random_points(60, seed=1):
        d = SPACE.design(idx)
        e = ev.evaluate(d)
        lower, upper = bounds.at(d)
        assert lower <= e.step_s * (1 + 1e-12) and e.step_s <= upper * (1 + 1e-12)
        tight += e.step_s <= 1.25 * lower
        assert bounds.area_mm2[idx] == pytest.approx(area_mm2(d), rel=1e-12)
        assert bounds.tdp_w[idx] == pytest.approx(tdp_w(d), rel=1e-12)
    assert tight >= 50  # a bound that is mostly far below the step time would rank designs badly
    assert ev.bounds(SPACE) is bounds and ev.bounded == SPACE.size()  # computed once per space


def test_objective_bound_marks_certainly_infeasible_designs() -> None:
    limits = Constraints(100.0, 60.0, min_throughput=500.0)
    ev = evaluator(WORK, "perf-per-tdp", limits)
    bounds = ev.bounds(SPACE)
    assert bounds is not None
    ub = bounds.objective_upper
    over = (bounds.area_mm2 > 100.0) | (bounds.tdp_w > 60.0)
    assert np.all(np.isneginf(ub[over]))
    thr_upper = WORK.batch / bounds.lower_s
    assert np.all(np.isneginf(ub[thr_upper < 500.0]))
    for idx in random_points(40, seed=2):
        e = ev.evaluate(SPACE.design(idx))
        if e.objective is not None:
            assert e.objective <= ub[idx] * (1 + 1e-12)
        elif not math.isinf(ub[idx]):
            assert e.violations  # the bound may let an infeasible design through, never the reverse


def test_ranking_is_by_objective_bound() -> None:
    bounds = evaluator(WORK).bounds(SPACE.reduced())
    assert bounds is not None
    for by, key in (("upper", bounds.objective_upper), ("estimate", bounds.objective_estimate)):
        ranking = list(bounds.ranking(by))
        values = [key[i] for i in ranking]
        assert values == sorted(values, reverse=True) and len(set(ranking)) == len(ranking)
        assert len(ranking) == int(np.count_nonzero(bounds.objective_upper > -np.inf))
        # The chunked partial sort gives exactly the full sort's order (objective down, area up, then index).
        flat = np.lexsort((bounds.area_mm2.ravel(), -key.ravel()))[: len(ranking)]
        assert [np.ravel_multi_index(i, key.shape) for i in ranking] == flat.tolist()
    # The estimate lies between what the two step-time bounds give.
    ok = np.isfinite(bounds.objective_upper)
    assert np.all(bounds.objective_estimate[ok] <= bounds.objective_upper[ok])
    assert np.all(bounds.objective_estimate[ok] >= WORK.batch / bounds.upper_s[ok] * (1 - 1e-12))


@pytest.fixture(scope="module")
def exhaustive() -> StrategyResult:
    """Every design of the reduced grid within the limits evaluated (the exhaustive strategy enumerates the
    reduced grid of the space it is given): the optimum the tests compare with."""
    return run_strategy(make_strategy("exhaustive"), evaluator(WORK), SPACE, budget=100_000)


def test_wham_evaluates_the_best_bound_first_and_lands_near_the_optimum(exhaustive: StrategyResult) -> None:
    space = SPACE.reduced()
    ev = evaluator(WORK)
    result = run_strategy(make_strategy("wham"), ev, space, budget=200)
    bounds = ev.bounds(space)
    assert bounds is not None and result.bounded == space.size()
    first = next(iter(ev.cache.values()))
    assert space.indices(first.design) == next(bounds.ranking("estimate"))
    assert exhaustive.best is not None and result.best is not None
    assert result.best.objective == pytest.approx(exhaustive.best.objective, rel=1e-9)
    # The first evaluation is already within 1 % of the grid's optimum.
    assert result.trace[0][2] >= 0.99 * exhaustive.best.objective


def test_wham_prunes_only_designs_that_cannot_enter_the_top_k() -> None:
    ev = evaluator(WORK)
    strategy = WhamStrategy(top_k=4)
    result = run_strategy(strategy, ev, SPACE, budget=1000)
    assert result.stopped == "converged"
    kth = sorted((e.objective for e in ev.cache.values() if e.objective is not None), reverse=True)[3]
    bounds = ev.bounds(SPACE)
    assert bounds is not None
    # Every design that was proposed but not evaluated had a bound no better than the final k-th best,
    # or was over the limits or dominated (strictly fewer resources than an evaluated design).
    evaluated = set(ev.cache)
    for key in strategy.seen - evaluated:
        d = Design(*(int(v) for v in key[:5]), *key[5:])
        if ev.cost_only(d)[2] or strategy._dominated(d):
            continue
        assert bounds.objective_at(d)[0] <= kth * (1 + 1e-12)


def test_wham_without_the_bound_still_searches(exhaustive: StrategyResult) -> None:
    class NoBound(WhamStrategy):
        """WHAM as it runs where the bound is unavailable (numpy missing)."""

        def start(self, space: DesignSpace, seed: int, probe: Probe) -> None:
            super().start(space, seed, Probe(probe.violations))

    ev = evaluator(WORK)
    result = run_strategy(NoBound(), ev, SPACE, budget=200)  # the grid has a bandwidth axis: 6.4x larger
    assert result.best is not None and result.bounded == 0 and ev.bounded == 0
    assert exhaustive.best is not None and result.best.objective >= 0.9 * exhaustive.best.objective


def test_block_plan_orders_ops_after_what_they_read() -> None:
    # The add reads both GEMMs and is the first's only consumer: it fuses into the first GEMM, which then
    # depends on the second, later op.
    raw = {"ops": [gemm("mm", 64, 64, 64, [], "l"), gemm("mm", 64, 64, 64, [], "l"), vec("add", 4096, [0, 1], "l")],
           "params": 0}
    block = build_workload(raw, model="t", batch=1, seq=1).blocks[0]
    assert len(block.ops) == 2 and block.ops[0].deps == (1,)
    ids, deps = plan_block(block).parts[0]
    assert ids == (1, 0) and deps == ((), (0,))


def test_block_cache_gives_the_uncached_bounds_and_is_never_written() -> None:
    from adopter.wham import bound

    space = SPACE.reduced()
    g = _Grid(space)
    block = WORK.blocks[0]
    bound._BLOCK_CACHE.clear()
    fresh = bound.block_bounds(block, g, 50.0)
    cached = bound._cached_block_bounds(block, space, g, 50.0, {})
    again = bound._cached_block_bounds(block, space, g, 50.0, {})
    assert again[0] is cached[0]  # the second call is a hit
    for a, b in zip(fresh, cached):
        assert np.array_equal(a, b)
        assert not isinstance(b, np.ndarray) or not b.flags.writeable
    # A different block object (even with equal content) is keyed apart: ids are only reused once freed,
    # and the entry holds its block.
    other = copy.deepcopy(block)
    assert bound._cached_block_bounds(other, space, g, 50.0, {})[0] is not cached[0]
    # Bounds through the evaluator are the same with the cache cold or warm.
    bound._BLOCK_CACHE.clear()
    cold = evaluator(WORK).bounds(space)
    warm = evaluator(WORK).bounds(space)
    assert cold is not None and warm is not None
    assert np.array_equal(cold.lower_s, warm.lower_s) and np.array_equal(cold.upper_s, warm.upper_s)


def test_strategy_result_reports_cpu_seconds() -> None:
    result = run_strategy(make_strategy("random"), evaluator(WORK), SPACE.reduced(), budget=5)
    assert 0.0 <= result.cpu_seconds_to_best <= result.cpu_seconds
    out = result.to_json(with_trace=False)
    assert out["cpu_seconds"] == result.cpu_seconds and "cpu_seconds_to_best" in out
