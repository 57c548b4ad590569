"""Search strategies behind one interface (`SearchStrategy`): WHAM's critical-path heuristic and baselines."""

from __future__ import annotations

from adopter.wham.strategies.base import Probe, SearchStrategy
from adopter.wham.strategies.registry import STRATEGIES, make_strategy

__all__ = ["STRATEGIES", "Probe", "SearchStrategy", "make_strategy"]
