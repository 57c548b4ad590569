"""The strategy interface: strategies only propose designs; the engine owns the loop, budget and cache."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from adopter.wham.evaluate import Evaluation
from adopter.wham.hardware import Design, DesignSpace

if TYPE_CHECKING:
    from adopter.wham.bound import GridBounds


@dataclass(frozen=True, slots=True)
class Probe:
    """What a strategy may ask without an evaluation: a design's area/TDP violations, and the analytical
    step-time bounds of a whole grid (`adopter.wham.bound`; the engine reports how many designs were
    bounded, apart from evaluations). `bound` is None when unavailable (numpy missing)."""

    violations: Callable[[Design], tuple[str, ...]]
    bound: Callable[[DesignSpace], GridBounds | None] | None = None


class SearchStrategy(ABC):
    """A design-space search strategy.

    Lifecycle (who calls what, when) — the engine (`adopter.wham.engine.run_strategy`):
      1. calls `start(space, seed, probe)` once; the strategy resets all state from `seed`, so the same
         seed gives the same sequence of proposals;
      2. loops: `ask()` returns the next design to evaluate, or None when the strategy has converged;
         the engine evaluates it (each distinct design counts once toward the budget; a repeat is
         answered from the cache) and calls `tell(design, evaluation)` before the next `ask()`;
      3. stops when the budget is spent, the strategy returns None, or the user cancels.
    Strategies never evaluate designs themselves; `probe.violations` (area/TDP, analytical) is free, and
    `probe.bound` (per-op latency formulas, no scheduler) is counted apart as designs bounded.
    Infeasible designs are told like any other, with `evaluation.objective is None`.
    """

    name: str = "base"
    # Modules the strategy cannot do its job without; the engine refuses to run it when one is missing
    # (`adopter.wham.extras`), so a missing optional dependency never gives a quietly worse search.
    requires: tuple[str, ...] = ()

    @abstractmethod
    def start(self, space: DesignSpace, seed: int, probe: Probe) -> None:
        """Reset for a new search over `space`."""

    @abstractmethod
    def ask(self) -> Design | None:
        """The next design to evaluate, or None when done."""

    @abstractmethod
    def tell(self, design: Design, evaluation: Evaluation) -> None:
        """The result of evaluating a design returned by `ask`."""
