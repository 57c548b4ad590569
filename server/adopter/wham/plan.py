"""A block's schedulable parts: its forward+backward and optimizer sub-DAGs in dependency order.

Shared by the evaluator (which schedules them) and the analytical bound (which bounds them), so neither
imports the other.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from dataclasses import dataclass

from adopter.wham.graph import Block


@dataclass(slots=True)
class BlockPlan:
    """A block split into its forward/backward and optimizer sub-DAGs (scheduled separately)."""

    parts: tuple[tuple[tuple[int, ...], tuple[tuple[int, ...], ...]], ...]  # (op ids, local deps)


def topological(block: Block, ids: list[int]) -> tuple[int, ...]:
    """`ids` in dependency order, lowest index first among ready ops (fusion can make an op depend on a
    later one: a GEMM's epilogue may read a value produced after the GEMM)."""
    inside = set(ids)
    waiting = {i: sum(1 for d in set(block.ops[i].deps) if d in inside) for i in ids}
    users: dict[int, list[int]] = defaultdict(list)
    for i in ids:
        for d in set(block.ops[i].deps):
            if d in inside:
                users[d].append(i)
    ready = [i for i in ids if waiting[i] == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for u in users[i]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, u)
    if len(order) != len(ids):
        raise ValueError("the block's ops have a dependency cycle")
    return tuple(order)


def plan_block(block: Block) -> BlockPlan:
    """The block split into its forward+backward and optimizer parts, each in dependency order."""
    parts = []
    for phases in (("fwd", "bwd"), ("opt",)):
        ids = topological(block, [i for i, op in enumerate(block.ops) if op.phase in phases])
        local = {g: j for j, g in enumerate(ids)}
        deps = tuple(tuple(local[d] for d in block.ops[i].deps if d in local) for i in ids)
        parts.append((ids, deps))
    return BlockPlan(tuple(parts))
