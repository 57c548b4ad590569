"""Strategy names for the CLI and the server."""

from __future__ import annotations

from collections.abc import Callable

from adopter.wham.strategies.base import SearchStrategy
from adopter.wham.strategies.baselines import ConfuciuXStrategy, SpotlightStrategy
from adopter.wham.strategies.bayes import GPStrategy, NSGA2Strategy, TPEStrategy
from adopter.wham.strategies.simple import ExhaustiveStrategy, RandomStrategy
from adopter.wham.strategies.wham import WhamStrategy

STRATEGIES: dict[str, Callable[[int], SearchStrategy]] = {
    "wham": lambda top_k: WhamStrategy(top_k=top_k),
    "random": lambda top_k: RandomStrategy(),
    "nsga2": lambda top_k: NSGA2Strategy(),
    "tpe": lambda top_k: TPEStrategy(),
    "gp": lambda top_k: GPStrategy(),
    "exhaustive": lambda top_k: ExhaustiveStrategy(),
    "confuciux": lambda top_k: ConfuciuXStrategy(),
    "spotlight": lambda top_k: SpotlightStrategy(),
}


def make_strategy(name: str, top_k: int = 4) -> SearchStrategy:
    """A fresh strategy by name; ValueError naming the allowed ones otherwise."""
    if name not in STRATEGIES:
        raise ValueError(f"--strategy {name!r}: allowed {', '.join(STRATEGIES)}")
    return STRATEGIES[name](top_k)
