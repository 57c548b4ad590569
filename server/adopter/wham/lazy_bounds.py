"""WHAM's analytical bound computed only where a search reads it: exact values, a fraction of the work.

`bound.grid_bounds` computes every design's step-time bounds (one grid-sized array per op of a block:
≈ 0.15 s CPU for a transformer block on the 1.25 M-design grid). A search reads only the head of the
ranking and the bounds of the few hundred designs it proposes. `LazyGridBounds` gives the same values
(`bound.points_bounds`: bit-identical to the whole grid's) for just those designs, and finds the head of
the ranking with a *relaxation* that costs a few grid-sized operations:

  relaxed lower step time = Σ over blocks and parts of the op latencies along one fixed dependency
  chain, each op's latency cut to the part that depends on the tensor-core axes (n_tc, pe_x, pe_y: a
  GEMM's systolic cycles) plus the part that depends on the others (its fused vector work; a vector op's
  max(lane cycles, streamed bytes); an all-reduce), dropping a GEMM's off-chip traffic term;
  relaxed upper step time = the same two parts summed over every op.

A chain's latency sum is at most the longest chain, so the relaxed bounds are below the exact ones and
the relaxed objective (samples / relaxed step time, per watt for Perf/TDP, on the same area/TDP limits)
is above the exact objective bound and estimate (raised by 1e-9 relative against rounding). The two
parts are sums over 441 and 2 835 parameter combinations: their outer sum is the whole grid's relaxed
step time at the cost of one array operation. The ranking then takes the best designs by the relaxed
key in growing chunks, computes their exact keys, and yields, in the exact full sort's order (key down,
area up, grid index up), every design whose exact key is at least the chunk's cut: a design outside the
chunks has an exact key at most its relaxed key, below the cut, so none can come before.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from adopter.wham.bound import (
    GridBounds,
    _Grid,
    _throughput,
    g_shape,
    grid_bounds,
    op_cycles_grid,
    points_bounds,
    vector_cycles_grid,
)
from adopter.wham.cost import gemm_fold_cycles
from adopter.wham.graph import Block, Op, Workload
from adopter.wham.hardware import PARAMS, Constraints, Design, DesignSpace, area_mm2, tdp_w
from adopter.wham.plan import plan_block

RELAX_MARGIN = 1e-9  # relative: far above the rounding of ~100 float additions (≈ 1e-14)
FIRST_CHUNK = 256  # the first chunk's cut usually lets the search's first designs out (gpt2-xl: 4 of 261)


class LazyGridBounds(GridBounds):
    """`GridBounds` of one workload (`counts`: block → repetitions) whose values are computed on demand:
    `objective_at`, `at` and `ranking` for the designs read, the grid-sized arrays only when asked for."""

    def __init__(self, workload: Workload, counts: Mapping[int, int], space: DesignSpace, link_gbs: float, *,
                 samples: int, objective: str, constraints: Constraints) -> None:
        self.space = space
        self._work = workload
        self._counts = dict(counts)
        self._link = float(link_gbs)
        self._samples = samples
        self._objective = objective
        self._constraints = constraints
        self._dense: tuple[Any, ...] | None = None
        self._exact: dict[int, tuple[float, float, float, float]] = {}  # flat → lower, upper, obj up, est
        self._relaxed: dict[str, Any] = {}
        self._shape = g_shape(space)
        self._index = {p: {float(v): i for i, v in enumerate(space.values(p))} for p in PARAMS}

    # -- values --------------------------------------------------------------------------------------
    def arrays(self) -> tuple[Any, ...]:
        """The whole grid's arrays (`bound.grid_bounds`), computed on first use."""
        if self._dense is None:
            self._dense = grid_bounds(self._work, self._counts, self.space, self._link, samples=self._samples,
                                      objective=self._objective, constraints=self._constraints).arrays()
        return self._dense

    def _compute(self, flat: Any) -> None:
        """Exact bounds of the designs at flat indices `flat` not computed yet."""
        need = np.asarray([f for f in np.asarray(flat, dtype=np.intp).tolist() if f not in self._exact],
                          dtype=np.intp)
        if not need.size:
            return
        lower, upper, _, _, up, est = points_bounds(
            self._work, self._counts, self.space, self._link, need, samples=self._samples,
            objective=self._objective, constraints=self._constraints)
        for f, row in zip(need.tolist(), zip(lower.tolist(), upper.tolist(), up.tolist(), est.tolist())):
            self._exact[f] = row

    def _flat(self, d: Design) -> int:
        """The flat grid index of `d` (the nearest grid value of each parameter, as `DesignSpace.indices`)."""
        flat = 0
        for p, n in zip(PARAMS, self._shape):
            i = self._index[p].get(float(getattr(d, p)))
            if i is None:
                return int(np.ravel_multi_index(self.space.indices(d), self._shape))
            flat = flat * n + i
        return flat

    def prefetch(self, designs: list[Design]) -> None:
        """Compute the bounds of the grid designs among `designs` in one batch."""
        on_grid = [self._flat(d) for d in designs if self.space.contains(d)]
        if on_grid:
            self._compute(on_grid)

    def at(self, d: Design) -> tuple[float, float]:
        """(lower, upper) step-time bounds of a grid design."""
        f = self._flat(d)
        self._compute([f])
        lower, upper, _, _ = self._exact[f]
        return lower, upper

    def objective_at(self, d: Design) -> tuple[float, float]:
        """(upper bound, estimate) of the objective at a grid design (−inf: certainly infeasible)."""
        f = self._flat(d)
        self._compute([f])
        _, _, up, est = self._exact[f]
        return up, est

    # -- ranking -------------------------------------------------------------------------------------
    def ranking(self, by: str = "upper") -> Iterator[tuple[int, ...]]:
        """`GridBounds.ranking`'s order exactly (objective bound or estimate down, area up, grid index up),
        from the relaxed key and exact keys of the designs it ranks above the cut."""
        if by not in ("upper", "estimate"):
            raise ValueError(f"ranking by {by!r}: allowed upper, estimate")
        relaxed = self.relaxed(by)
        area = _area_tdp(self.space)[0].ravel()
        slot = 2 if by == "upper" else 3
        left = int(np.count_nonzero(relaxed > -np.inf))  # designs not yet in a chunk
        prev = np.inf  # every design not yet in a chunk has a relaxed key below this
        pool = np.empty(0, dtype=np.intp)
        pool_key = np.empty(0, dtype=np.float64)
        chunk = FIRST_CHUNK
        while left or pool.size:
            if left > chunk:
                vals = relaxed if prev == np.inf else np.where(relaxed < prev, relaxed, -np.inf)
                cut = _kth_largest(vals, chunk)
                head = np.flatnonzero(vals >= cut)
            elif left:
                head, cut = np.flatnonzero((relaxed < prev) & (relaxed > -np.inf)), -np.inf
            else:
                head, cut = np.empty(0, dtype=np.intp), -np.inf
            left -= head.size
            prev = cut
            self._compute(head)
            key = np.asarray([self._exact[f][slot] for f in head.tolist()], dtype=np.float64)
            pool = np.concatenate((pool, head[key > -np.inf]))
            pool_key = np.concatenate((pool_key, key[key > -np.inf]))
            out = pool_key >= cut
            ready, ready_key = pool[out], pool_key[out]
            pool, pool_key = pool[~out], pool_key[~out]
            for flat in ready[np.lexsort((ready, area[ready], -ready_key))].tolist():
                yield tuple(int(i) for i in np.unravel_index(flat, self._shape))
            chunk *= 4

    def relaxed(self, by: str) -> Any:
        """The relaxed objective (`by` = "upper" or "estimate") of every design, flat: at least the exact
        one everywhere, −inf where the design is certainly infeasible."""
        hit = self._relaxed.get(by)
        if hit is not None:
            return hit
        ct, cvm, ut, uvm = (np.float64(0.0),) * 4
        for b, n in self._counts.items():
            bt, bvm, but, buvm = block_relaxation(self._work.blocks[b], self.space, self._link)
            ct, cvm, ut, uvm = ct + bt * n, cvm + bvm * n, ut + but * n, uvm + buvm * n
        f = self.space.clock_mhz * 1e6
        lower = (ct + cvm) / f
        step = lower if by == "upper" else (lower + (ut + uvm) / f) / 2
        thr = _throughput(self._samples, step) * (1 + RELAX_MARGIN)
        ok = _within_limits(self.space, self._constraints.area_mm2, self._constraints.tdp_w)
        if self._objective == "perf-per-tdp":
            ok = ok & (_throughput(self._samples, lower) * (1 + RELAX_MARGIN) >= self._constraints.min_throughput)
            thr = thr / _area_tdp(self.space)[1]
        hit = np.where(ok, thr, -np.inf).ravel()
        self._relaxed[by] = hit
        return hit


def _kth_largest(vals: Any, k: int) -> float:
    """The k-th largest of `vals` (1 ≤ k ≤ its size), exactly. A whole-array partition copies the grid;
    instead, partition only the values at or above a threshold taken from a strided sample (about 4k of
    them), and the whole array only when fewer than k are at or above it."""
    stride = max(1, vals.size // (64 * k))
    sample = vals[::stride]
    m = max(1, 4 * k // stride)  # sample values above the threshold: ≈ 4k of the whole array
    if stride > 1 and m < sample.size:
        threshold = np.partition(sample, sample.size - m)[sample.size - m]
        top = vals[vals >= threshold]
        if top.size >= k:
            return float(np.partition(top, top.size - k)[top.size - k])
    return float(np.partition(vals, vals.size - k)[vals.size - k])


_AREA_TDP: dict[DesignSpace, tuple[Any, Any]] = {}


def _area_tdp(space: DesignSpace) -> tuple[Any, Any]:
    """Every design's area and TDP (grid-shaped; the same for every stage of a search: kept)."""
    hit = _AREA_TDP.get(space)
    if hit is None:
        g = _Grid(space)
        d = Design(**{p: g.axes[p] for p in PARAMS}, clock_mhz=space.clock_mhz)
        hit = (np.ascontiguousarray(np.broadcast_to(area_mm2(d), g.shape)),
               np.ascontiguousarray(np.broadcast_to(tdp_w(d), g.shape)))
        _AREA_TDP.clear()
        _AREA_TDP[space] = hit
    return hit


_LIMITS: dict[tuple[DesignSpace, float, float], Any] = {}


def _within_limits(space: DesignSpace, area_cap: float, tdp_cap: float) -> Any:
    """Which designs meet the area and TDP limits (grid-shaped; the same for every stage: kept)."""
    key = (space, area_cap, tdp_cap)
    hit = _LIMITS.get(key)
    if hit is None:
        area, tdp = _area_tdp(space)
        hit = (area <= area_cap * (1 + 1e-9)) & (tdp <= tdp_cap * (1 + 1e-9))
        _LIMITS.clear()
        _LIMITS[key] = hit
    return hit


_RELAXATIONS: dict[tuple[int, DesignSpace, float], tuple[Block, tuple[Any, Any, Any, Any]]] = {}


def block_relaxation(block: Block, space: DesignSpace, link_gbs: float) -> tuple[Any, Any, Any, Any]:
    """(chain tensor part, chain other part, all-ops tensor part, all-ops other part) of one block, cycles:
    arrays over the tensor-core axes and over the other axes of the grid (kept per block object)."""
    key = (id(block), space, float(link_gbs))
    hit = _RELAXATIONS.get(key)
    if hit is not None and hit[0] is block:
        return hit[1]
    g = _Grid(space)
    mid = tuple(len(space.values(p)) // 2 for p in PARAMS)
    ct: Any = np.float64(0.0)
    cvm: Any = np.float64(0.0)
    ut: Any = np.float64(0.0)
    uvm: Any = np.float64(0.0)
    for ids, deps in plan_block(block).parts:
        parts = [_split(block.ops[i], g, link_gbs) for i in ids]
        for t, vm in parts:
            ut, uvm = ut + t, uvm + vm
        # The chain: the longest at the grid's middle design (any chain gives a valid bound).
        weight = [float(np.broadcast_to(t + vm, g.shape)[mid]) for t, vm in parts]
        best: list[float] = []
        prev: list[int] = []
        for j in range(len(ids)):
            p = max(deps[j], key=lambda d: best[d], default=-1)
            best.append(weight[j] + (best[p] if p >= 0 else 0.0))
            prev.append(p)
        j = max(range(len(ids)), key=lambda i: best[i], default=-1)
        while j >= 0:
            ct, cvm = ct + parts[j][0], cvm + parts[j][1]
            j = prev[j]
    out = (ct, cvm, ut, uvm)
    if len(_RELAXATIONS) > 16:
        _RELAXATIONS.clear()
    _RELAXATIONS[key] = (block, out)
    return out


def _split(op: Op, g: _Grid, link_gbs: float) -> tuple[Any, Any]:
    """A lower bound on `op`'s latency as (tensor-core-axes part, other-axes part); their sum ≤ latency."""
    if op.is_gemm:
        m, n, k, b = max(1, op.m), max(1, op.n), max(1, op.k), max(1, op.batch)
        tiles = b * np.ceil(m / g.axes["pe_x"]) * np.ceil(n / g.axes["pe_y"])
        cores = np.minimum(g.axes["n_tc"], tiles)
        tensor = np.ceil(tiles / cores) * gemm_fold_cycles(k, g.axes["pe_x"], g.axes["pe_y"])
        other = vector_cycles_grid(op.vector, g.lanes_total) if op.vector else np.float64(0.0)
        return tensor, np.asarray(other, dtype=np.float64)
    cycles, _, _ = op_cycles_grid(op, g, link_gbs)  # vector op or all-reduce: no tensor-core axis
    return np.float64(0.0), np.asarray(cycles, dtype=np.float64)
