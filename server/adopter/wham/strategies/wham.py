"""WHAM's critical-path heuristic: start from the designs the workload's analytical bound ranks best, grow the
resource that dominates the critical path, shrink slack, prune over-budget, dominated and bound-excluded
candidates, keep the top-k, stop after `patience` rounds without gain."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from adopter.wham.cost import BANDWIDTH, SRAM, TENSOR, VECTOR
from adopter.wham.evaluate import Evaluation
from adopter.wham.hardware import FLOAT_PARAMS, PARAMS, Design, DesignSpace
from adopter.wham.strategies.base import Probe, SearchStrategy

if TYPE_CHECKING:
    from adopter.wham.bound import GridBounds

SLACK_SHARE = 0.05  # a resource below this share of the critical path is treated as slack


class WhamStrategy(SearchStrategy):
    """Critical-path-driven local search with a top-k beam (Adnan et al., 2024), started and pruned by an
    analytical bound of the workload's step time on every design (`adopter.wham.bound`).

    With the bound: the first designs evaluated are the `top_k` best by the bound's estimate (the midpoint
    of the step-time bounds: the workload's longest dependency chain and per-pool work at every design's
    op latencies, and their sum), every later candidate is evaluated best estimate first, one more design
    (the best objective bound not seen yet) joins each round, and a candidate whose objective bound cannot
    enter the top-k is dropped unevaluated (the bound is an upper bound on the objective, so this never
    loses a better design). When the best remaining bound cannot enter the top-k the search stops: the
    top-k is then the grid's (given the dominance rule's premise that more of a resource never slows a
    design down). Without the bound: seeds from the grid (its
    smallest design, midpoint, and square arrays grown to the budget), evaluated in order.
    """

    name = "wham"
    requires = ("numpy",)  # the analytical bound that seeds and prunes the search

    def __init__(self, top_k: int = 4, patience: int = 3) -> None:
        if top_k < 1 or patience < 1:
            raise ValueError(f"WhamStrategy top_k={top_k}, patience={patience}: both must be ≥ 1")
        self.top_k = top_k
        self.patience = patience

    def start(self, space: DesignSpace, seed: int, probe: Probe) -> None:
        """Rank the grid by the analytical bound and queue its best designs (the seed breaks no ties)."""
        self.space = space
        self.probe = probe
        self.pending: list[tuple[float, int, float, Design]] = []  # (−estimate, order, bound, design)
        self.order = itertools.count()
        self.seen: set[tuple[float, ...]] = set()
        self.results: list[Evaluation] = []
        self.expanded: set[tuple[float, ...]] = set()
        self.best = float("-inf")
        self.stale = 0
        self.polished: set[tuple[float, ...]] = set()
        self.exhausted = False  # the ranking has nothing left that could enter the top-k
        self.bound: GridBounds | None = probe.bound(space) if probe.bound is not None else None
        self.ranked: Iterator[tuple[int, ...]] = self.bound.ranking() if self.bound is not None else iter(())
        if self.bound is not None:
            for idx in itertools.islice(self.bound.ranking("estimate"), self.top_k):
                self._push(space.design(idx))
            return
        sizes = [len(space.values(p)) for p in PARAMS]
        mid = {p: n // 2 for p, n in zip(PARAMS, sizes)}
        # Seeds: the grid's smallest design and its midpoint, and one square-array design per array size
        # with its tensor cores grown as far as the budget allows (area/TDP are analytical: free).
        self._push(space.design(tuple(0 for _ in sizes)))
        self._push(space.design(tuple(mid[p] for p in PARAMS)))
        for i in range(min(len(space.pe_x), len(space.pe_y))):
            d = space.design({**mid, "n_tc": 0, "pe_x": i, "pe_y": i})
            g = self._grow_max(d, "n_tc")
            self._push(g if g is not None else d)

    # -- proposals --------------------------------------------------------------------------------
    def _upper(self, d: Design) -> tuple[float, float]:
        """The objective's upper bound and estimate at `d` (+inf, 0 without the bound: FIFO order)."""
        return self.bound.objective_at(d) if self.bound is not None else (float("inf"), 0.0)

    def _threshold(self) -> float:
        """The objective a new design must beat to enter the top-k (−inf while the top-k is not full)."""
        beam = self._beam()
        return (beam[-1].objective or float("-inf")) if len(beam) >= self.top_k else float("-inf")

    def _push(self, d: Design) -> bool:
        key = d.key()
        if key in self.seen or not self.space.contains(d):
            return False
        self.seen.add(key)
        if self.probe.violations(d) or self._dominated(d):
            return False
        upper, estimate = self._upper(d)
        if upper <= self._threshold():
            return False
        heapq.heappush(self.pending, (-estimate, next(self.order), upper, d))
        return True

    def _push_ranked(self) -> bool:
        """Queue the best-ranked design not seen yet; False when none left can enter the top-k."""
        assert self.bound is not None
        for idx in self.ranked:
            d = self.space.design(idx)
            if self.bound.objective_at(d)[0] <= self._threshold():
                self.exhausted = True  # ranked by bound: no later design can do better
                return False
            if self._push(d):
                return True
        self.exhausted = True
        return False

    def _dominated(self, d: Design) -> bool:
        """A design with no more of any resource than an evaluated design below the k-th best (same PE
        shape, so the systolic fill/drain is the same) cannot enter the top-k."""
        if len(self.results) < self.top_k:
            return False
        kth = self._beam()[-1].objective or float("-inf")
        for e in self.results:
            o = e.design
            if e.objective is None or e.objective >= kth or (o.pe_x, o.pe_y) != (d.pe_x, d.pe_y):
                continue
            if d.n_tc <= o.n_tc and d.n_vc <= o.n_vc and d.lanes <= o.lanes and d.sram_mib <= o.sram_mib \
                    and d.bandwidth_gbs <= o.bandwidth_gbs:
                return True
        return False

    def _beam(self) -> list[Evaluation]:
        feasible = [e for e in self.results if e.objective is not None]
        feasible.sort(key=lambda e: (-(e.objective or 0.0), e.area_mm2))
        return feasible[: self.top_k]

    def _step(self, d: Design, name: str, factor: float) -> Design | None:
        vals = self.space.values(name)
        cur = float(getattr(d, name))
        target = cur * factor
        cands = [v for v in vals if (v > cur if factor > 1 else v < cur)]
        if not cands:
            return None
        v = min(cands, key=lambda x: abs(x - target))
        change: dict[str, Any] = {name: float(v) if name in FLOAT_PARAMS else int(v)}
        return replace(d, **change)

    def _grow_max(self, d: Design, name: str) -> Design | None:
        """`d` with `name` raised to the largest grid value that keeps it within area and TDP."""
        best: Design | None = None
        cur = float(getattr(d, name))
        for v in self.space.values(name):
            if v <= cur:
                continue
            change: dict[str, Any] = {name: float(v) if name in FLOAT_PARAMS else int(v)}
            g = replace(d, **change)
            if self.probe.violations(g):
                break
            best = g
        return best

    def _moves(self, e: Evaluation) -> list[Design]:
        """Neighbours of an evaluated design: grow its dominant resource, reshape, shrink slack."""
        d = e.design
        share = dict(e.critical)
        total = sum(share.values()) or 1.0
        ranked = sorted(share, key=lambda r: -share[r])
        grow: dict[str, list[tuple[str, float]]] = {
            TENSOR: [("n_tc", 2), ("pe_x", 2), ("pe_y", 2)],
            VECTOR: [("lanes", 2), ("n_vc", 2)],
            SRAM: [("sram_mib", 2)],
            BANDWIDTH: [("bandwidth_gbs", 2), ("sram_mib", 2)],
        }
        slack = [r for r in (TENSOR, VECTOR, SRAM, BANDWIDTH) if share.get(r, 0.0) / total < SLACK_SHARE]
        shrink: dict[str, list[tuple[str, float]]] = {
            TENSOR: [("n_tc", 0.5)], VECTOR: [("n_vc", 0.5), ("lanes", 0.5)], SRAM: [("sram_mib", 0.5)],
            BANDWIDTH: [("bandwidth_gbs", 0.5)],
        }
        out: list[Design] = []
        for r in ranked[:2]:
            for name, f in grow.get(r, []):
                g = self._step(d, name, f)
                if g is None:
                    continue
                out.append(g)
                big = self._grow_max(d, name)
                if big is not None:
                    out.append(big)
                # Over budget? Pay for the growth with a slack resource, then grow as far as it allows.
                for s in slack:
                    for sname, sf in shrink[s]:
                        gs = self._step(g, sname, sf)
                        if gs is not None:
                            out.append(gs)
                            big = self._grow_max(gs, name)
                            if big is not None:
                                out.append(big)
            if r == TENSOR:  # reshape: same MACs, different array aspect or more, smaller cores
                for a, b in (("pe_x", "pe_y"), ("pe_y", "pe_x"), ("n_tc", "pe_x"), ("n_tc", "pe_y"),
                             ("pe_x", "n_tc"), ("pe_y", "n_tc")):
                    g = self._step(d, a, 2)
                    g = self._step(g, b, 0.5) if g is not None else None
                    if g is not None:
                        out.append(g)
        for s in slack:
            for sname, sf in shrink[s]:
                g = self._step(d, sname, sf)
                if g is not None:
                    out.append(g)
        return out

    def _polish(self, e: Evaluation) -> list[Design]:
        """Every one-step neighbour of `e` and every one-for-one trade (grow one resource, shrink another)."""
        out: list[Design] = []
        for a in PARAMS:
            for fa in (2.0, 0.5):
                g = self._step(e.design, a, fa)
                if g is None:
                    continue
                out.append(g)
                for b in PARAMS:
                    if b != a:
                        gb = self._step(g, b, 0.5 if fa > 1 else 2.0)
                        if gb is not None:
                            out.append(gb)
        return out

    def ask(self) -> Design | None:
        """The next candidate (best bound first); when none is queued, expand the beam (one round)."""
        while True:
            while self.pending:
                _, _, upper, d = heapq.heappop(self.pending)
                if upper > self._threshold():  # the top-k may have risen since it was queued
                    return d
            if not self._round():
                return None

    def _round(self) -> bool:
        """Queue one round of candidates; False when the search has converged."""
        beam = [e for e in self._beam() if e.design.key() not in self.expanded]
        if self.bound is not None and self.exhausted and not beam:
            return False  # nothing unevaluated on the grid can enter the top-k
        if not beam or self.stale >= self.patience:
            # Converged: before stopping, try the best design's whole neighbourhood once.
            top = self._beam()
            if top and top[0].design.key() not in self.polished:
                self.polished.add(top[0].design.key())
                moves = self._polish(top[0])
                if self.bound is not None:
                    self.bound.prefetch(moves)
                for m in moves:
                    self._push(m)
                self.stale = max(0, self.patience - 1)
                return True
            return False
        for e in beam:
            self.expanded.add(e.design.key())
            moves = self._moves(e)
            if self.bound is not None:
                self.bound.prefetch(moves)  # one batch instead of one bound computation per move
            for m in moves:
                self._push(m)
        if self.bound is not None and not self.exhausted:
            self._push_ranked()  # one more design from the global ranking each round
        leader = self._beam()[0].objective if self._beam() else None
        if leader is not None and leader > self.best * (1 + 1e-9):
            self.best = leader
            self.stale = 0
        else:
            self.stale += 1
        return True

    def tell(self, design: Design, evaluation: Evaluation) -> None:
        """Record the result; the beam is recomputed from all results."""
        self.results.append(evaluation)
