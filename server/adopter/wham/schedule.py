"""Critical-path list scheduling of a block's op DAG onto tensor and vector cores.

ASAP/ALAP from longest paths give each op its mobility (0 on the critical path); ready ops start in
order of mobility, then ASAP, when enough cores of their type are free (lower-priority ops may start in
the gaps). The makespan is the block's time; walking back from the last op along whatever delayed each
start (a dependency or the cores it waited for) gives the critical path.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

from adopter.wham.cost import OpCost


@dataclass(frozen=True, slots=True)
class Schedule:
    """Start times, makespan and the critical path (op indices, first to last) of one block."""

    makespan: float
    start: tuple[float, ...]
    critical: tuple[int, ...]


def list_schedule(
    deps: Sequence[Sequence[int]], costs: Sequence[OpCost], pools: Sequence[int], capacity: Sequence[int]
) -> Schedule:
    """Schedule ops (topologically ordered: deps point backwards) on core pools (tensor, vector, link)."""
    n = len(costs)
    if n == 0:
        return Schedule(0.0, (), ())
    dur = [c.cycles for c in costs]
    asap = [0.0] * n
    succs: list[list[int]] = [[] for _ in range(n)]
    for i in range(n):
        for d in deps[i]:
            succs[d].append(i)
            if asap[d] + dur[d] > asap[i]:
                asap[i] = asap[d] + dur[d]
    length = max(asap[i] + dur[i] for i in range(n))
    alap = [0.0] * n
    for i in range(n - 1, -1, -1):
        latest = length
        for s in succs[i]:
            if alap[s] < latest:
                latest = alap[s]
        alap[i] = latest - dur[i]

    free = list(capacity)
    waiting = [len(deps[i]) for i in range(n)]
    ready_at = [0.0] * n
    cause = [-1] * n  # the op whose finish let this one start
    last_dep = [-1] * n
    start = [0.0] * n
    ready: list[tuple[float, float, int]] = []
    for i in range(n):
        if waiting[i] == 0:
            heapq.heappush(ready, (alap[i] - asap[i], asap[i], i))
    running: list[tuple[float, int]] = []  # (finish, op)
    now = 0.0
    last_release = [-1] * len(capacity)  # per pool: the op that freed cores most recently
    done = 0
    while done < n:
        deferred: list[tuple[float, float, int]] = []
        while ready:
            item = heapq.heappop(ready)
            i = item[2]
            pool = pools[i]
            need = min(costs[i].cores, capacity[pool])
            if need <= free[pool]:
                free[pool] -= need
                start[i] = now
                # Delayed past its data? Then the cores (the op that freed them) were the cause.
                cause[i] = last_release[pool] if now > ready_at[i] else last_dep[i]
                heapq.heappush(running, (now + dur[i], i))
            else:
                deferred.append(item)
        for item in deferred:
            heapq.heappush(ready, item)
        finish, i = heapq.heappop(running)
        now = finish
        batch = [i]
        while running and running[0][0] <= now:
            batch.append(heapq.heappop(running)[1])
        for j in batch:
            done += 1
            pool = pools[j]
            free[pool] += min(costs[j].cores, capacity[pool])
            last_release[pool] = j
            for s in succs[j]:
                waiting[s] -= 1
                if now >= ready_at[s]:
                    ready_at[s] = now
                    last_dep[s] = j
                if waiting[s] == 0:
                    heapq.heappush(ready, (alap[s] - asap[s], asap[s], s))
    makespan = max(start[i] + dur[i] for i in range(n))
    last = max(range(n), key=lambda i: start[i] + dur[i])
    path = [last]
    seen = {last}
    while cause[path[-1]] >= 0 and cause[path[-1]] not in seen:
        path.append(cause[path[-1]])
        seen.add(path[-1])
    return Schedule(makespan, tuple(start), tuple(reversed(path)))
