"""The WHAM paper's baselines, on the same grid, cost model and evaluation counter as every strategy.

`confuciux` (Kao et al., "ConfuciuX: Autonomous Hardware Resource Assignment for DNN Accelerators using
Reinforcement Learning", MICRO 2020): a REINFORCE policy proposes designs, rewarded by the objective
(a penalty when a limit is broken, as ConfuciuX's constraint-violation reward); once the policy stops
finding better designs, a genetic algorithm fine-tunes the best ones (ConfuciuX's second stage). Our
policy is one softmax per template parameter over its grid values (ConfuciuX's is an RNN emitting one
action per layer; our template has one design for the whole model, so there is one action per parameter).

`spotlight` (Sakhuja et al., "Spotlight: A Domain-Aware Bayesian Optimization Framework for DNN
Accelerator Design", HPCA 2023): Bayesian optimisation whose surrogate sees domain-aware features of a
design (peak compute, buffer, bandwidth, machine balance, area and TDP, not raw parameter indices), a
Gaussian process with expected improvement maximised over random and local candidates. Spotlight also
co-searches the software mapping; our cost model has one mapping per op, so only the hardware half is here.

Neither sees WHAM's analytical bound: they search as their papers do, with evaluations only.
"""

from __future__ import annotations

import math
import random
from typing import Any

from adopter.wham.evaluate import Evaluation
from adopter.wham.hardware import PARAMS, Design, DesignSpace, area_mm2, tdp_w
from adopter.wham.strategies.base import Probe, SearchStrategy

# REINFORCE: learning rate and the reward baseline's moving-average factor (Williams 1992's estimator with
# a baseline, as ConfuciuX uses); the RL stage hands over to the GA after this many proposals without a
# better design, or this many repeats in a row (the policy has collapsed onto designs it has seen).
RL_LEARNING_RATE = 0.5
RL_BASELINE_DECAY = 0.9
RL_PATIENCE = 40
RL_MAX_REPEATS = 8
RL_FREE_RESAMPLES = 50  # draws per proposal until one is within the area/TDP limits
# GA stage: population, elite kept, mutation probability per parameter (ConfuciuX's fine-tuning GA).
GA_POPULATION = 10
GA_ELITE = 2
GA_MUTATION = 0.2
# Spotlight: random designs before the GP, candidates scored by EI per step, GP training set cap.
BO_STARTUP = 10
BO_CANDIDATES = 400
BO_MAX_TRAIN = 120


def _reward(e: Evaluation) -> float:
    """log objective when feasible; below any feasible value otherwise, more so the more limits broken."""
    if e.objective is not None and e.objective > 0:
        return math.log(e.objective)
    return -60.0 - 10.0 * len(e.violations)


class ConfuciuXStrategy(SearchStrategy):
    """REINFORCE policy over the grid, then genetic fine-tuning of its best designs."""

    name = "confuciux"

    def start(self, space: DesignSpace, seed: int, probe: Probe) -> None:
        """A uniform policy, an empty history, the RL stage first."""
        self.space = space
        self.probe = probe
        self.rng = random.Random(seed)
        self.logits = [[0.0] * len(space.values(p)) for p in PARAMS]
        self.baseline: float | None = None
        self.stage = "rl"
        self.seen: dict[tuple[int, ...], float] = {}
        self.best = -math.inf
        self.since_best = 0
        self.repeats = 0
        self.population: list[tuple[float, tuple[int, ...]]] = []
        self.offspring: list[tuple[int, ...]] = []
        self.children: list[tuple[float, tuple[int, ...]]] = []
        self.last: tuple[int, ...] | None = None

    def _probs(self, i: int) -> list[float]:
        row = self.logits[i]
        top = max(row)
        w = [math.exp(v - top) for v in row]
        s = sum(w)
        return [x / s for x in w]

    def _sample(self) -> tuple[int, ...]:
        return tuple(self.rng.choices(range(len(row)), weights=self._probs(i))[0]
                     for i, row in enumerate(self.logits))

    def ask(self) -> Design | None:
        """The policy's sample (RL stage) or the next child of the GA."""
        if self.stage == "rl":
            # A sample over the area/TDP limits (the analytical check every strategy may make for free) is
            # drawn again: the policy samples within the limits, as ConfuciuX's constrained environment.
            pick = self._sample()
            for _ in range(RL_FREE_RESAMPLES - 1):
                if not self.probe.violations(self.space.design(pick)):
                    break
                pick = self._sample()
        else:
            if not self.offspring:
                self._breed()
            pick = self.offspring.pop()
        self.last = pick
        return self.space.design(pick)

    def tell(self, design: Design, evaluation: Evaluation) -> None:
        """Policy-gradient step (RL stage) or selection (GA stage)."""
        idx = self.last if self.last is not None else self.space.indices(design)
        r = _reward(evaluation)
        repeat = idx in self.seen
        self.seen[idx] = r
        self.repeats = self.repeats + 1 if repeat else 0
        if r > self.best:
            self.best, self.since_best = r, 0
        else:
            self.since_best += 1
        if self.stage == "rl":
            self._reinforce(idx, r)
            if self.since_best >= RL_PATIENCE or self.repeats >= RL_MAX_REPEATS:
                self.stage = "ga"
                ranked = sorted(((v, k) for k, v in self.seen.items()), reverse=True)
                self.population = ranked[:GA_POPULATION]
        else:
            self.children.append((r, idx))
            if len(self.children) >= GA_POPULATION:
                merged = sorted(set(self.population) | set(self.children), reverse=True)
                self.population = merged[:GA_POPULATION]
                self.children = []

    def _reinforce(self, idx: tuple[int, ...], r: float) -> None:
        """∇ log π(a) · (r − baseline) for each parameter's softmax (REINFORCE with a baseline)."""
        if self.baseline is None:
            self.baseline = r
        advantage = r - self.baseline
        self.baseline = RL_BASELINE_DECAY * self.baseline + (1 - RL_BASELINE_DECAY) * r
        scale = RL_LEARNING_RATE * max(-1.0, min(1.0, advantage))  # clipped: rewards span tens of nats
        for i, a in enumerate(idx):
            probs = self._probs(i)
            for j in range(len(probs)):
                self.logits[i][j] += scale * ((1.0 if j == a else 0.0) - probs[j])

    def _breed(self) -> None:
        """One generation: elites kept, the rest by tournament, uniform crossover and mutation; children
        not seen before (a repeat would cost nothing and teach nothing)."""
        pop = self.population or [(0.0, self._sample())]
        out: list[tuple[int, ...]] = []
        tries = 0
        while len(out) < GA_POPULATION - GA_ELITE and tries < 50 * GA_POPULATION:
            tries += 1
            a = max(self.rng.sample(pop, min(2, len(pop))))[1]
            b = max(self.rng.sample(pop, min(2, len(pop))))[1]
            child = [x if self.rng.random() < 0.5 else y for x, y in zip(a, b)]
            for i, p in enumerate(PARAMS):
                if self.rng.random() < GA_MUTATION:
                    n = len(self.space.values(p))
                    child[i] = max(0, min(n - 1, child[i] + self.rng.choice((-1, 1))))
            t = tuple(child)
            if t not in self.seen and t not in out and not self.probe.violations(self.space.design(t)):
                out.append(t)
        if not out:  # the neighbourhood is exhausted: a fresh random point keeps the search moving
            out.append(tuple(self.rng.randrange(len(self.space.values(p))) for p in PARAMS))
        self.offspring = out


def _features(d: Design) -> list[float]:
    """Spotlight-style domain features of a design: log peak compute, vector lanes, buffer, bandwidth,
    machine balance (peak FLOP/s per byte/s), array shape, core count, area and TDP."""
    return [math.log2(d.macs), math.log2(d.lanes_total), math.log2(d.sram_mib), math.log2(d.bandwidth_gbs),
            math.log2(d.peak_flops / (d.bandwidth_gbs * 1e9)), math.log2(d.pe_x / d.pe_y), math.log2(d.n_tc),
            math.log2(area_mm2(d)), math.log2(tdp_w(d))]


class SpotlightStrategy(SearchStrategy):
    """Gaussian-process Bayesian optimisation on domain-aware features, expected improvement."""

    name = "spotlight"
    requires: tuple[str, ...] = ("numpy",)

    def start(self, space: DesignSpace, seed: int, probe: Probe) -> None:
        """An empty history; the first designs are random."""
        self.space = space
        self.probe = probe
        self.rng = random.Random(seed)
        self.xs: list[list[float]] = []
        self.ys: list[float] = []
        self.seen: set[tuple[int, ...]] = set()
        self.best_idx: tuple[int, ...] | None = None
        self.best_y = -math.inf

    def _random_idx(self) -> tuple[int, ...]:
        """A random grid point within the area/TDP limits (Spotlight's feasibility is analytical too)."""
        idx = tuple(self.rng.randrange(len(self.space.values(p))) for p in PARAMS)
        for _ in range(20):
            if not self.probe.violations(self.space.design(idx)):
                break
            idx = tuple(self.rng.randrange(len(self.space.values(p))) for p in PARAMS)
        return idx

    def _neighbour(self, idx: tuple[int, ...]) -> tuple[int, ...]:
        out = list(idx)
        for _ in range(self.rng.randint(1, 3)):
            i = self.rng.randrange(len(PARAMS))
            out[i] = max(0, min(len(self.space.values(PARAMS[i])) - 1, out[i] + self.rng.choice((-1, 1))))
        return tuple(out)

    def ask(self) -> Design | None:
        """A random design while the GP has too few points; then the candidate with the best EI."""
        if len(self.ys) < BO_STARTUP:
            return self.space.design(self._random_idx())
        import numpy as np

        cands: list[tuple[int, ...]] = []
        for k in range(BO_CANDIDATES):
            c = self._neighbour(self.best_idx) if self.best_idx is not None and k % 2 else self._random_idx()
            if c not in self.seen and not self.probe.violations(self.space.design(c)):
                cands.append(c)
        if not cands:
            return self.space.design(self._random_idx())
        x = np.asarray(self.xs, dtype=np.float64)
        y = np.asarray(self.ys, dtype=np.float64)
        keep = np.argsort(-y)[: BO_MAX_TRAIN // 2].tolist() + list(range(max(0, len(y) - BO_MAX_TRAIN // 2),
                                                                             len(y)))
        keep = sorted(set(keep))
        x, y = x[keep], y[keep]
        mu_x, sd_x = x.mean(axis=0), x.std(axis=0) + 1e-9
        mu_y, sd_y = y.mean(), y.std() + 1e-9
        xn, yn = (x - mu_x) / sd_x, (y - mu_y) / sd_y
        cx = (np.asarray([_features(self.space.design(c)) for c in cands]) - mu_x) / sd_x
        mean, std = _gp_posterior(xn, yn, cx)
        best = (max(self.ys) - mu_y) / sd_y
        ei = _expected_improvement(mean, std, best)
        return self.space.design(cands[int(np.argmax(ei))])

    def tell(self, design: Design, evaluation: Evaluation) -> None:
        """Add the design's features and reward to the GP's data (a design that missed a limit only the
        evaluation knows, the minimum throughput, enters at the worst feasible value seen, so the penalty's
        scale does not swamp the GP)."""
        idx = self.space.indices(design)
        self.seen.add(idx)
        r = _reward(evaluation)
        self.xs.append(_features(design))
        self.ys.append(r)
        feasible = [y for y in self.ys if y > -50.0]
        if feasible:
            floor = min(feasible)
            self.ys = [y if y > -50.0 else floor for y in self.ys]
        if r > self.best_y:
            self.best_y, self.best_idx = r, idx


def _gp_posterior(x: Any, y: Any, cx: Any) -> tuple[Any, Any]:
    """GP posterior mean and standard deviation at `cx`: squared-exponential kernel, unit signal variance,
    the length scale picked from {0.5, 1, 2} by marginal likelihood, noise 1e-3 (inputs standardised)."""
    import numpy as np

    def kernel(a: Any, b: Any, ls: float) -> Any:
        d2 = ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
        return np.exp(-0.5 * d2 / ls**2)

    best: tuple[float, float, Any, Any] | None = None
    for ls in (0.5, 1.0, 2.0):
        k = kernel(x, x, ls) + 1e-3 * np.eye(len(x))
        try:
            chol = np.linalg.cholesky(k)
        except np.linalg.LinAlgError:
            continue
        alpha = np.linalg.solve(chol.T, np.linalg.solve(chol, y))
        lml = -0.5 * float(y @ alpha) - float(np.log(np.diag(chol)).sum())
        if best is None or lml > best[0]:
            best = (lml, ls, chol, alpha)
    if best is None:
        return np.zeros(len(cx)), np.ones(len(cx))
    _, ls, chol, alpha = best
    ks = kernel(cx, x, ls)
    mean = ks @ alpha
    v = np.linalg.solve(chol, ks.T)
    var = np.maximum(1.0 - (v * v).sum(0), 1e-12)
    return mean, np.sqrt(var)


def _expected_improvement(mean: Any, std: Any, best: float) -> Any:
    import numpy as np

    z = (mean - best) / std
    cdf = 0.5 * (1.0 + np.vectorize(math.erf)(z / math.sqrt(2.0)))
    pdf = np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    return (mean - best) * cdf + std * pdf
