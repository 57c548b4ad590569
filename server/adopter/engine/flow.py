"""A forward body flattened for matching: ops in source order with their control-flow context.

Instead of enumerating every control-flow path (exponential in the number of `if`s), each node keeps
its *context*: the branch alternatives and loops enclosing it. Two nodes lie on a common path exactly
when their contexts never pick different alternatives of the same branch and the earlier one is not
cut off by a `return` inside an alternative the later one is outside of. A site seen on several paths
is thus one set of nodes, found once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from adopter.dsl.types import Block, Branch, Expr, Forward, Kwarg, Loop, Op, Ref, Return, Value

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# One step of a context: ("b", branch id, alternative) or ("l", loop id, 0).
Ctx = tuple[tuple[str, int, int], ...]


@dataclass(frozen=True, slots=True)
class Node:
    """An op, or a pseudo-node that only uses names (a `return`, a branch test, a loop iterable)."""

    index: int
    op: Op | None
    uses: frozenset[str]  # names of the values it reads
    ctx: Ctx
    defs: tuple[str, ...] = ()


@dataclass
class FlatForward:
    """The nodes of one forward plus indexes for fast matching."""

    forward: Forward
    nodes: list[Node] = field(default_factory=list)
    by_target: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    defs_of: dict[str, list[int]] = field(default_factory=dict)
    uses_of: dict[str, list[int]] = field(default_factory=dict)
    terminates: set[tuple[int, int]] = field(default_factory=set)  # (branch id, alt) ending in return
    params: frozenset[str] = frozenset()

    def compatible(self, a: int, b: int) -> bool:
        """Whether nodes `a` < `b` can both execute on one path, in that order."""
        ca, cb = self.nodes[a].ctx, self.nodes[b].ctx
        k = 0
        while k < len(ca) and k < len(cb) and ca[k] == cb[k]:
            k += 1
        if k < len(ca) and k < len(cb) and ca[k][0] == "b" and ca[k][:2] == cb[k][:2]:
            return False  # different alternatives of the same branch
        # `a` inside an alternative that returns, `b` after that branch: unreachable after `a`.
        return all(not (kind == "b" and (bid, alt) in self.terminates) for kind, bid, alt in ca[k:])

    def reaching_def(self, name: str, at: int) -> int:
        """The node whose definition of `name` reaches node `at` (-1: a parameter or unknown)."""
        for d in reversed(self.defs_of.get(name, ())):
            if d < at and self.compatible(d, at):
                return d
        return -1


def _value_names(values: tuple[Value, ...], kwargs: tuple[Kwarg, ...]) -> set[str]:
    names: set[str] = set()
    for v in (*values, *(k.value for k in kwargs)):
        if isinstance(v, Ref):
            names.add(v.name)
        elif isinstance(v, Expr):
            # Opaque text may still read a local (`h.shape[0]` kept as text): count it as a use.
            names.update(_IDENT.findall(v.text))
    return names


def flatten(forward: Forward) -> FlatForward:
    """Flatten `forward` into context-tagged nodes (pre-order: source order on every path)."""
    flat = FlatForward(forward, params=frozenset(p.name for p in forward.params))
    counter = [0]

    def add(op: Op | None, uses: set[str], ctx: Ctx, defs: tuple[str, ...] = ()) -> None:
        node = Node(len(flat.nodes), op, frozenset(uses), ctx, defs)
        flat.nodes.append(node)
        if op is not None:
            flat.by_target.setdefault((op.kind.value, op.target), []).append(node.index)
        for d in defs:
            flat.defs_of.setdefault(d, []).append(node.index)
        for u in uses:
            flat.uses_of.setdefault(u, []).append(node.index)

    def walk(block: Block, ctx: Ctx) -> bool:
        """Add the nodes of `block`; return whether it always ends in a `return`."""
        for stmt in block:
            if isinstance(stmt, Op):
                add(stmt, _value_names(stmt.args, stmt.kwargs), ctx, stmt.outputs)
            elif isinstance(stmt, Return):
                add(None, _value_names(stmt.values, ()), ctx)
                return True
            elif isinstance(stmt, Branch):
                counter[0] += 1
                bid = counter[0]
                add(None, {n for c in stmt.conditions for n in _IDENT.findall(c)}, ctx)
                ends = []
                for alt, path in enumerate(stmt.paths):
                    done = walk(path, (*ctx, ("b", bid, alt)))
                    if done:
                        flat.terminates.add((bid, alt))
                    ends.append(done)
                if ends and all(ends) and "else" in stmt.conditions[-1:]:
                    return True
            elif isinstance(stmt, Loop):
                counter[0] += 1
                add(None, set(_IDENT.findall(stmt.iterable)), ctx, stmt.targets)
                walk(stmt.body, (*ctx, ("l", counter[0], 0)))
        return False

    walk(forward.body, ())
    return flat
