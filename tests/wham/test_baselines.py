"""The paper's baselines behave as their papers describe: ConfuciuX's RL stage hands over to a GA, Spotlight
fits a GP to domain features and proposes by expected improvement."""

from __future__ import annotations

import math

import pytest

from adopter.wham.engine import run_strategy
from adopter.wham.evaluate import Evaluator
from adopter.wham.hardware import Constraints, DesignSpace, area_mm2, tpuv2_like
from adopter.wham.strategies import make_strategy
from adopter.wham.strategies.baselines import (
    ConfuciuXStrategy,
    SpotlightStrategy,
    _expected_improvement,
    _features,
    _gp_posterior,
)

from .synthetic import toy_workload

WORK = toy_workload(layers=2)


def test_confuciux_learns_then_fine_tunes_with_a_ga() -> None:
    strategy = make_strategy("confuciux")
    assert isinstance(strategy, ConfuciuXStrategy)
    ev = Evaluator(WORK, "throughput", Constraints(area_mm2(tpuv2_like()), 400.0))
    result = run_strategy(strategy, ev, DesignSpace(), budget=150, seed=1)
    assert strategy.stage == "ga"  # the policy stopped improving and the GA took over
    assert result.best is not None and result.evaluations == 150
    # the policy moved away from uniform: some parameter's distribution is no longer flat
    assert any(max(strategy._probs(i)) > 1.5 / len(row) for i, row in enumerate(strategy.logits))


def test_spotlight_gp_interpolates_and_prefers_improvement() -> None:
    np = pytest.importorskip("numpy")
    x = np.asarray([[0.0], [1.0], [2.0]])
    y = np.asarray([0.0, 1.0, 0.0])
    mean, std = _gp_posterior(x, y, np.asarray([[1.0], [5.0]]))
    assert mean[0] == pytest.approx(1.0, abs=0.05) and std[0] < 0.1  # at a data point: its value, sure
    assert std[1] > 0.5  # far away: uncertain
    ei = _expected_improvement(mean, std, 1.0)
    assert ei[1] > ei[0]  # uncertainty far from the data is worth more than re-sampling the best point
    assert all(math.isfinite(f) for f in _features(tpuv2_like()))


def test_spotlight_proposes_within_the_limits_after_its_start_up() -> None:
    strategy = make_strategy("spotlight")
    assert isinstance(strategy, SpotlightStrategy)
    limits = Constraints(area_mm2(tpuv2_like()), 400.0)
    ev = Evaluator(WORK, "throughput", limits)
    result = run_strategy(strategy, ev, DesignSpace(), budget=30, seed=0)
    assert result.best is not None
    assert all(not e.violations for e in list(ev.cache.values())[10:])
