"""Optuna-backed baselines: NSGA-II (genetic, for ConfuciuX's GA stage), TPE and GP (Bayesian, for Spotlight).

Each parameter is searched as its index into the grid (ordered, so the models see powers of two as a
line). Constraints (area, TDP, minimum throughput) go to Optuna's `constraints_func`.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from adopter.wham.evaluate import Evaluation
from adopter.wham.hardware import PARAMS, Design, DesignSpace
from adopter.wham.strategies.base import Probe, SearchStrategy


class OptunaStrategy(SearchStrategy):
    """Proposes designs with an Optuna sampler through the ask/tell interface."""

    name = "optuna"
    requires: tuple[str, ...] = ("optuna",)

    def _sampler(self, seed: int) -> Any:
        raise NotImplementedError

    def start(self, space: DesignSpace, seed: int, probe: Probe) -> None:
        """A fresh study with this strategy's sampler, seeded."""
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
        self.space = space
        self.dists: dict[str, optuna.distributions.BaseDistribution] = {
            p: optuna.distributions.IntDistribution(0, len(space.values(p)) - 1) for p in PARAMS}
        self.study = optuna.create_study(direction="maximize", sampler=self._sampler(seed))
        self.trial: Any = None

    def ask(self) -> Design | None:
        """The sampler's next proposal."""
        self.trial = self.study.ask(self.dists)
        return self.space.design({p: int(self.trial.params[p]) for p in PARAMS})

    def tell(self, design: Design, evaluation: Evaluation) -> None:
        """Report the objective (log-scaled, as samplers model it better) and the constraint slack."""
        if self.trial is None:
            return
        # Constraint values ≤ 0 mean feasible (Optuna ≥ 5: Trial.set_constraint; before: constraints_func).
        constraint = [float(len(evaluation.violations))]
        if hasattr(self.trial, "set_constraint"):
            self.trial.set_constraint("violations", constraint[0])
        else:
            self.trial.set_user_attr("constraints", constraint)
        value = evaluation.objective if evaluation.objective is not None else \
            (evaluation.throughput if evaluation.throughput > 0 else 1e-12)
        self.study.tell(self.trial, math.log(max(value, 1e-30)))
        self.trial = None


def _constraints(trial: Any) -> list[float]:
    return list(trial.user_attrs.get("constraints", [0.0]))


def _constraint_kwargs() -> dict[str, Any]:
    """`constraints_func` only for Optuna < 5 (5 reads constraints set on the trial)."""
    import optuna

    return {} if hasattr(optuna.trial.Trial, "set_constraint") else {"constraints_func": _constraints}


class TPEStrategy(OptunaStrategy):
    """Tree-structured Parzen estimator (Bayesian optimisation)."""

    name = "tpe"

    def _sampler(self, seed: int) -> Any:
        import optuna

        return optuna.samplers.TPESampler(seed=seed, **_constraint_kwargs(), n_startup_trials=10)


class GPStrategy(OptunaStrategy):
    """Gaussian-process Bayesian optimisation (needs scipy and torch, as Optuna's GPSampler does)."""

    name = "gp"
    requires = ("optuna", "scipy", "torch")

    def _sampler(self, seed: int) -> Any:
        import optuna

        return optuna.samplers.GPSampler(seed=seed, **_constraint_kwargs(), n_startup_trials=10)


class NSGA2Strategy(OptunaStrategy):
    """NSGA-II genetic algorithm (population 10: budgets here are a few hundred designs, and a smaller
    population gives more generations; measured on the toy workload, 20 was no better than random at 80)."""

    name = "nsga2"

    def _sampler(self, seed: int) -> Any:
        import optuna

        return optuna.samplers.NSGAIISampler(seed=seed, **_constraint_kwargs(), population_size=10)
