"""Baselines without a model of the objective: uniform random sampling and exhaustive enumeration."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator

from adopter.wham.evaluate import Evaluation
from adopter.wham.hardware import PARAMS, Design, DesignSpace
from adopter.wham.strategies.base import Probe, SearchStrategy


class RandomStrategy(SearchStrategy):
    """Uniform random grid points (infeasible ones included, as a plain random search would)."""

    name = "random"

    def start(self, space: DesignSpace, seed: int, probe: Probe) -> None:
        """Seed the generator."""
        self.space = space
        self.rng = random.Random(seed)

    def ask(self) -> Design | None:
        """A uniformly random grid point."""
        return self.space.design(tuple(self.rng.randrange(len(self.space.values(p))) for p in PARAMS))

    def tell(self, design: Design, evaluation: Evaluation) -> None:
        """Random search ignores results."""


class ExhaustiveStrategy(SearchStrategy):
    """Every point of the reduced grid (every other power of two), skipping ones over the area/TDP budget."""

    name = "exhaustive"

    def start(self, space: DesignSpace, seed: int, probe: Probe) -> None:
        """Enumerate the reduced grid in a fixed order (the seed does not matter)."""
        self.space = space.reduced()
        self.probe = probe
        ranges = [range(len(self.space.values(p))) for p in PARAMS]
        self.points: Iterator[tuple[int, ...]] = itertools.product(*ranges)

    def ask(self) -> Design | None:
        """The next feasible grid point, or None when the grid is done."""
        for idx in self.points:
            d = self.space.design(idx)
            if not self.probe.violations(d):
                return d
        return None

    def tell(self, design: Design, evaluation: Evaluation) -> None:
        """Enumeration ignores results."""
