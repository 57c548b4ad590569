"""WHAM's analytical bound: lower and upper bounds on the step time of every design of a grid at once.

The bound uses the per-op latency formulas of `cost.py` (systolic GEMM with SRAM-blocked traffic,
vector lanes, roofline, ring all-reduce) but never runs the scheduler. For each block part
(forward+backward, optimizer) and each design:

  lower = max(longest dependency chain of op latencies,
              Σ tensor-core cycles·cores / n_tc,  Σ vector-core cycles·cores / n_vc,  Σ link cycles)
  upper = Σ op latencies

The list scheduler respects every dependency and never holds more cores than a pool has, so its makespan
is at least `lower`; it never leaves every pool idle while an op is ready, so the makespan is at most
`upper` (tests check both on random designs). `samples / lower` is therefore an upper bound on a design's
throughput: a design whose bound is below a design already evaluated cannot beat it.

Computing the bound is not an evaluation (no scheduling, no critical path, no per-design report): the
engine counts it separately (`StrategyResult.bounded`) and the benchmark reports it beside evaluations.
It is vectorised with numpy over the whole grid: one array axis per template parameter; or over chosen
designs only (`points_bounds`, bit-identical values), which `lazy_bounds.LazyGridBounds` uses so that a
search pays only for the designs it reads.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from adopter.wham.constants import VECTOR_CYCLES, VECTOR_CYCLES_DEFAULT
from adopter.wham.cost import allreduce_cycles, gemm_fold_cycles, gemm_traffic_bytes
from adopter.wham.graph import Block, Op, VectorWork, Workload
from adopter.wham.hardware import PARAMS, Constraints, Design, DesignSpace, area_mm2, tdp_w
from adopter.wham.plan import plan_block


class GridBounds:
    """Bounds for every point of `space`'s grid; arrays are indexed by grid indices in `PARAMS` order.

    `objective_upper` bounds the objective from above (samples / lower step time, per watt of TDP for
    Perf/TDP); it is −inf where the design is certainly infeasible: over the area or TDP limit, or (for
    Perf/TDP) unable to reach the minimum throughput even at its bound. `objective_estimate` is the
    objective at the midpoint of the two step-time bounds (−inf where `objective_upper` is): no bound,
    but the better guide to which designs to evaluate first. `lazy_bounds.LazyGridBounds` gives the same
    values, computed only for the designs a search reads.
    """

    def __init__(self, space: DesignSpace, lower_s: Any, upper_s: Any, area_mm2: Any, tdp_w: Any,
                 objective_upper: Any, objective_estimate: Any) -> None:
        self.space = space
        self._arrays = (lower_s, upper_s, area_mm2, tdp_w, objective_upper, objective_estimate)

    def arrays(self) -> tuple[Any, ...]:
        """(lower_s, upper_s, area_mm2, tdp_w, objective_upper, objective_estimate), grid-shaped."""
        return self._arrays

    @property
    def lower_s(self) -> Any:
        """Lower bound on the step time, seconds (np.ndarray)."""
        return self.arrays()[0]

    @property
    def upper_s(self) -> Any:
        """Upper bound on the step time, seconds (np.ndarray)."""
        return self.arrays()[1]

    @property
    def area_mm2(self) -> Any:
        """Area of every design (np.ndarray)."""
        return self.arrays()[2]

    @property
    def tdp_w(self) -> Any:
        """TDP of every design (np.ndarray)."""
        return self.arrays()[3]

    @property
    def objective_upper(self) -> Any:
        """Upper bound on the objective, −inf where certainly infeasible (np.ndarray)."""
        return self.arrays()[4]

    @property
    def objective_estimate(self) -> Any:
        """The objective at the step-time bounds' midpoint, −inf where certainly infeasible (np.ndarray)."""
        return self.arrays()[5]

    def prefetch(self, designs: list[Design]) -> None:
        """Compute the bounds of `designs` ahead of `objective_at` (every value is at hand here: nothing)."""

    @property
    def size(self) -> int:
        """Number of designs bounded."""
        return self.space.size()

    def at(self, d: Design) -> tuple[float, float]:
        """(lower, upper) step-time bounds of a grid design."""
        idx = self.space.indices(d)
        return float(self.lower_s[idx]), float(self.upper_s[idx])

    def objective_at(self, d: Design) -> tuple[float, float]:
        """(upper bound, estimate) of the objective at a grid design (−inf: certainly infeasible)."""
        idx = self.space.indices(d)
        return float(self.objective_upper[idx]), float(self.objective_estimate[idx])

    def ranking(self, by: str = "upper") -> Iterator[tuple[int, ...]]:
        """Grid indices of every design that may be feasible, best objective bound (`by="upper"`) or best
        estimate (`by="estimate"`) first, ties to the smaller area; lazily, as a search reads its head."""
        if by not in ("upper", "estimate"):
            raise ValueError(f"ranking by {by!r}: allowed upper, estimate")
        key = (self.objective_upper if by == "upper" else self.objective_estimate).ravel()
        area = self.area_mm2.ravel()
        shape = self.lower_s.shape
        # A search reads only the head of the ranking: sort it in growing chunks (argpartition finds each
        # chunk's cut in linear time) instead of sorting the whole grid. Every design keyed at the cut
        # joins its chunk, so the order is exactly the full sort's: objective down, then area up.
        rest = np.flatnonzero(key > -np.inf)
        chunk = 64
        while rest.size:
            if rest.size > chunk:
                cut = np.partition(-key[rest], chunk - 1)[chunk - 1]
                head, rest = rest[-key[rest] <= cut], rest[-key[rest] > cut]
            else:
                head, rest = rest, rest[:0]
            for flat in head[np.lexsort((area[head], -key[head]))].tolist():
                yield tuple(int(i) for i in np.unravel_index(flat, shape))
            chunk *= 4


_Memo = dict[tuple[Any, ...], tuple[Any, Any, int, Any, tuple[int, ...], tuple[int, ...]]]


class _Grid:
    """The template parameters as broadcastable arrays, one axis each (in `PARAMS` order); or, given
    `points` (one grid-index array per parameter), those designs only, as flat arrays of equal length.

    On points every value is computed with the same element-wise operations as on the whole grid, and
    sums are grouped by the shape they would have on the whole grid (`key`), so each design's bounds are
    bit-identical to the whole grid's.
    """

    def __init__(self, space: DesignSpace, points: tuple[Any, ...] | None = None) -> None:
        nd = len(PARAMS)
        self.axes: dict[str, Any] = {}
        self.dense_shape = tuple(len(space.values(p)) for p in PARAMS)
        self.points = points
        for i, p in enumerate(PARAMS):
            values = np.asarray(space.values(p), dtype=np.float64)
            if points is None:
                shape = [1] * nd
                shape[i] = len(values)
                self.axes[p] = values.reshape(shape)
            else:
                self.axes[p] = values[points[i]]
        self.shape = self.dense_shape if points is None else (int(np.size(points[0])),)
        self.lanes_total = self.axes["n_vc"] * self.axes["lanes"]
        self.sram = space.values("sram_mib")
        self.bytes_per_cycle = self.axes["bandwidth_gbs"] * 1e9 / (space.clock_mhz * 1e6)
        self.clock_mhz = space.clock_mhz
        self.probe = None if points is None else _Grid(_probe_space(space))

    def per_sram(self, values: list[float]) -> Any:
        """One value per SRAM size (`self.sram` order) as an array over the grid (or the points)."""
        arr = np.asarray(values, dtype=np.float64)
        if self.points is not None:
            return arr[self.points[PARAMS.index("sram_mib")]]
        shape = [1] * len(PARAMS)
        shape[PARAMS.index("sram_mib")] = -1
        return arr.reshape(shape)

    def key(self, probe_value: Any, value: Any) -> tuple[int, ...]:
        """The shape `value` has on the whole grid (what its sums are grouped by); `probe_value` is the
        same quantity on the probe grid (every axis of length 2), used when this grid holds points."""
        if self.probe is None:
            return tuple(np.shape(value))
        shape = np.shape(probe_value)
        return tuple(self.dense_shape[i] if n > 1 else 1 for i, n in enumerate(shape)) if shape else ()


def _probe_space(space: DesignSpace) -> DesignSpace:
    """A grid of two values per parameter: what an op's arrays broadcast over, at negligible cost."""
    two: dict[str, Any] = {p: (space.values(p)[0], space.values(p)[0] * 2) for p in PARAMS}
    return replace(space, **two)


def vector_cycles_grid(work: tuple[VectorWork, ...], lanes_total: Any) -> Any:
    """`cost.vector_cycles` for an array of lane counts (the same formula, element-wise)."""
    total: Any = 0.0
    for w in work:
        c = VECTOR_CYCLES.get(w.name.rstrip("_"), VECTOR_CYCLES_DEFAULT)
        total = total + np.ceil(w.elements / lanes_total) * c
        if w.rows:
            cols = max(1, w.elements // w.rows)
            if cols > 1:
                total = total + np.ceil(w.rows / lanes_total) * float(np.ceil(np.log2(cols)))
    return total


def op_cycles_grid(op: Op, g: _Grid, link_gbs: float) -> tuple[Any, Any, int]:
    """(latency cycles, cores held, pool) of `op` on every grid design: `cost.op_cost`, element-wise."""
    if op.kind == "comm":
        return np.float64(allreduce_cycles(op.bytes_in, op.m, link_gbs, g.clock_mhz)), np.float64(1.0), 2
    if op.is_gemm:
        m, n, k, b = max(1, op.m), max(1, op.n), max(1, op.k), max(1, op.batch)
        tiles = b * np.ceil(m / g.axes["pe_x"]) * np.ceil(n / g.axes["pe_y"])
        cores = np.minimum(g.axes["n_tc"], tiles)
        compute = np.ceil(tiles / cores) * gemm_fold_cycles(k, g.axes["pe_x"], g.axes["pe_y"])
        if op.vector:
            compute = compute + vector_cycles_grid(op.vector, g.lanes_total)
        memory = g.per_sram([gemm_traffic_bytes(op, s) for s in g.sram]) / g.bytes_per_cycle
        return np.maximum(compute, memory), cores, 0
    elements = max((w.elements for w in op.vector), default=1)
    cores = np.minimum(g.axes["n_vc"], np.maximum(1.0, np.ceil(elements / g.axes["lanes"])))
    compute = vector_cycles_grid(op.vector, cores * g.axes["lanes"])
    streamed = (op.bytes_in + op.bytes_out) / g.bytes_per_cycle
    return np.maximum(compute, streamed), cores, 1


def _cost_key(op: Op) -> tuple[Any, ...]:
    """What an op's latency depends on (not its name, phase or dependencies)."""
    return (op.kind, op.m, op.n, op.k, op.batch, op.bytes_in, op.bytes_out, op.vector)


def _part_bounds(ops: tuple[Op, ...], ids: tuple[int, ...], deps: tuple[tuple[int, ...], ...], g: _Grid,
                 link_gbs: float, memo: _Memo) -> tuple[Any, Any]:
    """(lower, upper) cycles of one block part: ops `ids` in topological order, `deps` local to it.

    The arrays are grid-sized (10 MB each on the default grid), so the loop allocates as little as it can:
    an op's finish time reuses the array of a predecessor no later op reads, and the sums are updated in
    place. Each array carries whether this call allocated it (`own`): the memo's arrays are shared and
    never written.
    """
    if not ids:
        return np.float64(0.0), np.float64(0.0)
    last_use: dict[int, int] = {}
    for j, ds in enumerate(deps):
        for d in ds:
            last_use[d] = j
    finish: dict[int, tuple[Any, bool]] = {}
    longest: Any = np.float64(0.0)
    # Sums are kept per array shape (most vector ops depend on two axes only) and added up at the end.
    upper: dict[tuple[int, ...], tuple[Any, bool]] = {}
    work: list[dict[tuple[int, ...], tuple[Any, bool]]] = [{}, {}, {}]
    for j, i in enumerate(ids):
        op = ops[i]
        key = _cost_key(op)
        if key not in memo:
            memo[key] = _op_entry(op, g, link_gbs)
        cycles, _, pool, share, ckey, skey = memo[key]
        ready: Any = None
        fresh = False  # whether `ready` is an array of our own that no later op reads (safe to update)
        for d in set(deps[j]):
            f, own = finish[d]
            free = own and last_use[d] == j  # ours, and read by no later op
            if last_use[d] == j:
                del finish[d]
            if ready is None:
                ready, fresh = f, free
            elif fresh and ready.shape == np.broadcast_shapes(ready.shape, f.shape):
                np.maximum(ready, f, out=ready)
            elif free and f.shape == np.broadcast_shapes(ready.shape, f.shape):
                np.maximum(f, ready, out=f)
                ready = f
            else:
                ready = np.maximum(ready, f)
                fresh = isinstance(ready, np.ndarray)
        if ready is None:
            end, own = cycles, False
        elif fresh and ready.shape == np.broadcast_shapes(ready.shape, np.shape(cycles)):
            end, own = ready, True
            end += cycles
        else:
            end = ready + cycles
            own = isinstance(end, np.ndarray)
        if j in last_use:
            finish[j] = (end, own)
        else:  # a sink: a path ends here (every other op's finish is below its successors')
            longest = np.maximum(longest, end)
        _accumulate(upper, cycles, ckey)
        _accumulate(work[pool], share, skey)
    w = [_total(p) for p in work]
    lower = np.maximum(np.maximum(longest, w[0]), np.maximum(w[1], w[2]))
    return lower, _total(upper)


def _op_arrays(op: Op, g: _Grid, link_gbs: float) -> tuple[Any, Any, int, Any]:
    """`op_cycles_grid` and the op's share of its pool's work (cycles · cores held / cores in the pool)."""
    cycles, cores, pool = op_cycles_grid(op, g, link_gbs)
    capacity = (g.axes["n_tc"], g.axes["n_vc"], 1.0)[pool]
    return cycles, cores, pool, cycles * cores / capacity


def _op_entry(op: Op, g: _Grid, link_gbs: float) -> tuple[Any, Any, int, Any, tuple[int, ...], tuple[int, ...]]:
    """`_op_arrays` with the whole-grid shapes its cycles and share are summed under (`_Grid.key`)."""
    cycles, cores, pool, share = _op_arrays(op, g, link_gbs)
    if g.probe is None:
        return cycles, cores, pool, share, g.key(None, cycles), g.key(None, share)
    pc, _, _, ps = _op_arrays(op, g.probe, link_gbs)
    return cycles, cores, pool, share, g.key(pc, cycles), g.key(ps, share)


def _accumulate(sums: dict[tuple[int, ...], tuple[Any, bool]], value: Any, shape: tuple[int, ...]) -> None:
    """Add `value` to the running sum of its (whole-grid) shape, in place once the sum is our own array."""
    if shape not in sums:
        sums[shape] = (value, False)
        return
    total, own = sums[shape]
    if own:
        total += value
    else:
        total = total + value
        sums[shape] = (total, isinstance(total, np.ndarray))


def _total(sums: dict[tuple[int, ...], tuple[Any, bool]]) -> Any:
    total: Any = np.float64(0.0)
    for v, _ in sums.values():
        total = total + v
    return total


def block_bounds(block: Block, g: _Grid, link_gbs: float,
                 memo: _Memo | None = None) -> tuple[Any, Any]:
    """(lower, upper) cycles of one block (forward+backward and optimizer scheduled separately)."""
    memo = {} if memo is None else memo
    lower: Any = np.float64(0.0)
    upper: Any = np.float64(0.0)
    for ids, deps in plan_block(block).parts:
        lo, hi = _part_bounds(block.ops, ids, deps, g, link_gbs, memo)
        lower, upper = lower + lo, upper + hi
    return lower, upper


# Per-block bounds of the last few (block, space, link) triples in this process. A pipeline's stage searches
# share blocks (every transformer layer is one `Block`), so each block's bounds are computed once, not once
# per stage holding it. The block object is kept with its entry: an id is only reused after it is freed.
_BLOCK_CACHE: OrderedDict[tuple[int, DesignSpace, float], tuple[Block, Any, Any]] = OrderedDict()
BLOCK_CACHE_SIZE = 8  # each entry holds two grid-sized arrays (10 MB each on the default grid)


def _cached_block_bounds(block: Block, space: DesignSpace, g: _Grid, link_gbs: float,
                         memo: _Memo) -> tuple[Any, Any]:
    key = (id(block), space, float(link_gbs))
    hit = _BLOCK_CACHE.get(key)
    if hit is not None and hit[0] is block:
        _BLOCK_CACHE.move_to_end(key)
        return hit[1], hit[2]
    lo, hi = block_bounds(block, g, link_gbs, memo)
    for a in (lo, hi):
        if isinstance(a, np.ndarray):
            a.flags.writeable = False  # shared by later searches: never updated in place
    _BLOCK_CACHE[key] = (block, lo, hi)
    while len(_BLOCK_CACHE) > BLOCK_CACHE_SIZE:
        _BLOCK_CACHE.popitem(last=False)
    return lo, hi


def grid_bounds(workload: Workload, counts: Mapping[int, int], space: DesignSpace, link_gbs: float, *,
                samples: int, objective: str, constraints: Constraints) -> GridBounds:
    """Bounds for every design of `space` on the blocks `counts` names (block → repetitions), `samples`
    samples per pass, under `objective` and `constraints` (as `Evaluator` uses them)."""
    g = _Grid(space)
    arrays = _bounds_on(g, workload, counts, link_gbs, samples, objective, constraints,
                        lambda block, memo: _cached_block_bounds(block, space, g, link_gbs, memo))
    return GridBounds(space, *arrays)


def points_bounds(workload: Workload, counts: Mapping[int, int], space: DesignSpace, link_gbs: float,
                  flat: Any, *, samples: int, objective: str, constraints: Constraints) -> tuple[Any, ...]:
    """`grid_bounds`' six arrays for the designs at flat grid indices `flat` only (1-D arrays, in `flat`'s
    order), each value bit-identical to the whole grid's at that design."""
    g = _Grid(space, np.unravel_index(np.asarray(flat, dtype=np.intp), g_shape(space)))
    return _bounds_on(g, workload, counts, link_gbs, samples, objective, constraints,
                      lambda block, memo: block_bounds(block, g, link_gbs, memo))


def g_shape(space: DesignSpace) -> tuple[int, ...]:
    """The grid's array shape (one axis per parameter, in `PARAMS` order)."""
    return tuple(len(space.values(p)) for p in PARAMS)


def _bounds_on(g: _Grid, workload: Workload, counts: Mapping[int, int], link_gbs: float, samples: int,
               objective: str, constraints: Constraints,
               blocks: Callable[[Block, _Memo], tuple[Any, Any]]) -> tuple[Any, ...]:
    lower: Any = np.zeros(g.shape)
    upper: Any = np.zeros(g.shape)
    memo: _Memo = {}
    for b, n in counts.items():
        lo, hi = blocks(workload.blocks[b], memo)
        lower = lower + lo * n
        upper = upper + hi * n
    f = g.clock_mhz * 1e6
    lower, upper = np.broadcast_to(lower / f, g.shape), np.broadcast_to(upper / f, g.shape)
    # area_mm2/tdp_w are plain arithmetic on the template's fields: given broadcastable arrays they return
    # every design's area and TDP with exactly the formulas single designs use.
    axes: dict[str, Any] = {p: g.axes[p] for p in PARAMS}  # arrays where Design declares numbers
    grid_design = Design(**axes, clock_mhz=g.clock_mhz)
    area = np.broadcast_to(area_mm2(grid_design), g.shape)
    tdp = np.broadcast_to(tdp_w(grid_design), g.shape)
    thr = _throughput(samples, lower)
    mid = _throughput(samples, (lower + upper) / 2)
    per = 1.0 if objective == "throughput" else tdp
    ok = (area <= constraints.area_mm2 * (1 + 1e-9)) & (tdp <= constraints.tdp_w * (1 + 1e-9))
    if objective == "perf-per-tdp":
        ok &= thr >= constraints.min_throughput
    return lower, upper, area, tdp, np.where(ok, thr / per, -np.inf), np.where(ok, mid / per, -np.inf)


def _throughput(samples: int, step_s: Any) -> Any:
    """samples / step time, +inf for a zero step (an empty workload)."""
    return np.where(step_s > 0, samples / np.where(step_s > 0, step_s, 1.0), np.inf)
