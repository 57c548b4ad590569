"""`LazyGridBounds`: the whole grid's bounds, ranking and search results, computed only where read."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from adopter.wham.bound import GridBounds, grid_bounds, points_bounds
from adopter.wham.engine import run_strategy
from adopter.wham.evaluate import Constraints, Evaluator
from adopter.wham.graph import Workload
from adopter.wham.hardware import PARAMS, DesignSpace
from adopter.wham.lazy_bounds import LazyGridBounds
from adopter.wham.parallel import shard_workload
from adopter.wham.strategies import make_strategy
from adopter.wham.strategies.base import Probe
from adopter.wham.strategies.wham import WhamStrategy

from .synthetic import toy_workload

SPACE = DesignSpace()
WORK = toy_workload(layers=2)
SHARDED = shard_workload(toy_workload(layers=1), 4)
CASES = [
    ("throughput", Constraints(606.7, 400.0)),
    ("perf-per-tdp", Constraints(300.0, 150.0, min_throughput=50.0)),
]


def counts(work: Workload) -> dict[int, int]:
    return {b: 1 + b % 3 for b in range(len(work.blocks))}  # repeated blocks, as pipeline stages have


def pair(work: Workload, space: DesignSpace, objective: str, limits: Constraints) -> tuple[GridBounds, LazyGridBounds]:
    kw = {"samples": 8, "objective": objective, "constraints": limits}
    return (grid_bounds(work, counts(work), space, 50.0, **kw),  # type: ignore[arg-type]
            LazyGridBounds(work, counts(work), space, 50.0, **kw))  # type: ignore[arg-type]


@pytest.mark.parametrize("work", [WORK, SHARDED], ids=["toy", "tensor-parallel"])
@pytest.mark.parametrize("objective,limits", CASES, ids=["throughput", "perf-per-tdp"])
def test_points_are_bit_identical_to_the_whole_grid(work: Workload, objective: str, limits: Constraints) -> None:
    dense, _ = pair(work, SPACE, objective, limits)
    flat = np.random.default_rng(0).choice(SPACE.size(), 3000, replace=False)
    got = points_bounds(work, counts(work), SPACE, 50.0, flat, samples=8, objective=objective, constraints=limits)
    for whole, points in zip(dense.arrays(), got):
        assert np.array_equal(np.asarray(whole).ravel()[flat], points)


@pytest.mark.parametrize("objective,limits", CASES, ids=["throughput", "perf-per-tdp"])
def test_the_relaxation_is_above_the_exact_keys_everywhere(objective: str, limits: Constraints) -> None:
    dense, lazy = pair(WORK, SPACE, objective, limits)
    for by, exact in (("upper", dense.objective_upper), ("estimate", dense.objective_estimate)):
        relaxed = lazy.relaxed(by)
        assert np.all(relaxed >= exact.ravel())
        # Not vacuous: the relaxation is finite where the design may be feasible, and mostly close.
        ok = exact.ravel() > -np.inf
        assert np.all(np.isfinite(relaxed[ok]))
        assert np.median(exact.ravel()[ok] / relaxed[ok]) > 0.5


@pytest.mark.parametrize("work", [WORK, SHARDED], ids=["toy", "tensor-parallel"])
@pytest.mark.parametrize("objective,limits", CASES, ids=["throughput", "perf-per-tdp"])
def test_ranking_is_the_whole_grids(work: Workload, objective: str, limits: Constraints) -> None:
    space = SPACE.reduced()
    dense, lazy = pair(work, space, objective, limits)
    for by in ("upper", "estimate"):
        assert list(lazy.ranking(by)) == list(dense.ranking(by)), by
    # On the full grid, the head a search reads (the lazy one computes a small fraction of the grid).
    dense, lazy = pair(work, SPACE, objective, limits)
    for by in ("upper", "estimate"):
        assert list(itertools.islice(lazy.ranking(by), 3000)) == list(itertools.islice(dense.ranking(by), 3000))
    assert len(lazy._exact) < SPACE.size() // 10


def test_values_at_designs_and_the_arrays_on_demand() -> None:
    dense, lazy = pair(WORK, SPACE, *CASES[1])
    rng = random.Random(3)
    designs = [SPACE.design(tuple(rng.randrange(len(SPACE.values(p))) for p in PARAMS)) for _ in range(50)]
    lazy.prefetch(designs[:25])
    for d in designs:
        assert lazy.objective_at(d) == dense.objective_at(d) and lazy.at(d) == dense.at(d)
    assert lazy.size == SPACE.size()
    for a, b in zip(lazy.arrays(), dense.arrays()):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("objective,limits", CASES, ids=["throughput", "perf-per-tdp"])
def test_wham_finds_the_same_designs_with_the_whole_grids_bound(objective: str, limits: Constraints) -> None:
    class Dense(WhamStrategy):
        """WHAM reading the whole grid's bounds (as before the lazy bound)."""

        def start(self, space: DesignSpace, seed: int, probe: Probe) -> None:
            def whole(s: DesignSpace) -> GridBounds:
                b = probe.bound(s) if probe.bound is not None else None
                assert isinstance(b, LazyGridBounds)
                return GridBounds(s, *b.arrays())
            super().start(space, seed, Probe(probe.violations, whole))

    runs = []
    for strategy in (Dense(), make_strategy("wham")):
        ev = Evaluator(WORK, objective, limits, link_gbs=50.0)
        r = run_strategy(strategy, ev, SPACE, budget=300)
        runs.append((r.best.design if r.best else None, r.best.objective if r.best else None,
                     [e.design for e in r.top], r.evaluations, list(ev.cache)))
    assert runs[0] == runs[1]


def test_kth_largest_is_exact_with_ties_and_infinities() -> None:
    from adopter.wham.lazy_bounds import _kth_largest

    rng = np.random.default_rng(5)
    for n, k in ((10, 3), (1000, 1), (200_000, 64), (200_000, 256), (50_000, 50_000)):
        vals = np.round(rng.random(n) * 50) / 50  # many ties
        vals[rng.random(n) < 0.3] = -np.inf
        assert _kth_largest(vals, k) == np.sort(vals)[-k]
    skewed = np.full(100_000, -np.inf)
    skewed[-10:] = 1.0  # the sample misses them: the whole array is partitioned
    assert _kth_largest(skewed, 5) == 1.0 and _kth_largest(skewed, 20) == -np.inf
