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
from functools import lru_cache

from adopter.dsl.types import Block, Branch, Expr, Forward, Kwarg, Loop, Op, Ref, Return, Value

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TEMP = re.compile(r"%\d+")  # a temporary of the analysis (`%8`): its number says nothing about the value

# One step of a context: ("b", branch id, alternative) or ("l", loop id, 0).
Ctx = tuple[tuple[str, int, int], ...]


class Node:
    """An op, or a pseudo-node that only uses names (a `return`, a branch test, a loop iterable)."""

    __slots__ = ("_uses", "ctx", "defs", "index", "op")

    def __init__(self, index: int, op: Op | None, uses: set[str] | None, ctx: Ctx,
                 defs: tuple[str, ...] = ()) -> None:
        self.index = index
        self.op = op
        self._uses = uses  # None for ops: computed from the arguments when first needed
        self.ctx = ctx
        self.defs = defs

    @property
    def uses(self) -> set[str]:
        """Names of the values this node reads."""
        if self._uses is None:
            assert self.op is not None
            self._uses = _value_names(self.op.args, self.op.kwargs)
        return self._uses


@dataclass
class FlatForward:
    """The nodes of one forward plus indexes for fast matching."""

    forward: Forward
    nodes: list[Node] = field(default_factory=list)
    by_target: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    targets_of_kind: dict[str, list[str]] = field(default_factory=dict)
    defs_of: dict[str, list[int]] = field(default_factory=dict)
    _uses_of: dict[str, list[int]] | None = None
    terminates: set[tuple[int, int]] = field(default_factory=set)  # (branch id, alt) ending in return
    tests: dict[int, tuple[str, ...]] = field(default_factory=dict)  # branch id -> its tests' source text
    test_texts: dict[int, tuple[str, ...]] = field(default_factory=dict)  # test pseudo-node -> its tests' text
    alternatives: dict[int, int] = field(default_factory=dict)  # branch id -> its number of paths
    params: frozenset[str] = frozenset()
    cast_reads: dict[str, bool] = field(default_factory=dict)  # name -> a cast reads it (the matcher's memo)
    # (name, defining node, through passing steps only) -> the nodes its value reaches (`attention_roles`'s memo)
    reached: dict[tuple[str, int, bool], frozenset[int]] = field(default_factory=dict)
    # (node, through passing steps only) -> the nodes the values it defines reach (`attention_roles`'s memo)
    reached_from: dict[tuple[int, bool], frozenset[int]] = field(default_factory=dict)
    # (the three projection values) -> whether their uses make them q, k and v (`attention_roles`'s memo)
    roles: dict[tuple[object, ...], bool] = field(default_factory=dict)
    # Answers of `compatible` and `may_reach`, pure functions of the nodes: the matcher asks the same pairs
    # again for every partial match (84 % of `compatible` calls over 40 modeling files were repeats).
    _compatible: dict[tuple[int, int], bool] = field(default_factory=dict)
    _reaches: dict[tuple[str, int, int], bool] = field(default_factory=dict)

    @property
    def uses_of(self) -> dict[str, list[int]]:
        """Nodes reading each name, in order (built on first use: most forwards never need it)."""
        if self._uses_of is None:
            index: dict[str, list[int]] = {}
            for node in self.nodes:
                for u in node.uses:
                    index.setdefault(u, []).append(node.index)
            self._uses_of = index
        return self._uses_of

    def compatible(self, a: int, b: int) -> bool:
        """Whether nodes `a` < `b` can both execute on one path, in that order."""
        ca, cb = self.nodes[a].ctx, self.nodes[b].ctx
        if ca is cb:  # one block (its nodes share the context): nothing tells them apart
            return True
        known = self._compatible.get((a, b))
        if known is None:
            known = self._compatible[(a, b)] = self._compatible_contexts(ca, cb)
        return known

    def _compatible_contexts(self, ca: Ctx, cb: Ctx) -> bool:
        k = 0
        while k < len(ca) and k < len(cb) and ca[k] == cb[k]:
            k += 1
        if k < len(ca) and k < len(cb) and ca[k][0] == "b" and ca[k][:2] == cb[k][:2]:
            return False  # different alternatives of the same branch
        # `a` inside an alternative that returns, `b` after that branch: unreachable after `a`.
        return all(not (kind == "b" and (bid, alt) in self.terminates) for kind, bid, alt in ca[k:])

    def conditions(self, n: int) -> tuple[tuple[tuple[str, ...], int], ...]:
        """The branch tests and alternatives enclosing node `n`, outermost first, by their source text
        with temporaries masked (two inlined calls of one helper give equal conditions)."""
        return tuple((self.tests.get(bid, ()), alt) for kind, bid, alt in self.nodes[n].ctx if kind == "b")

    def may_reach(self, name: str, d: int, at: int) -> bool:
        """Whether definition `d` of `name` (-1: the entry) reaches node `at` on at least one path.

        True when every redefinition between them that could lie on their path sits in a branch
        alternative enclosing neither of them, so a path skipping that alternative exists.
        """
        key = (name, d, at)
        known = self._reaches.get(key)
        if known is None:
            known = self._reaches[key] = self._may_reach(name, d, at)
        return known

    def _may_reach(self, name: str, d: int, at: int) -> bool:
        if d >= at or (d >= 0 and not self.compatible(d, at)):
            return False
        outer = set(self.nodes[at].ctx) | (set(self.nodes[d].ctx) if d >= 0 else set())
        for r in self.defs_of.get(name, ()):
            if d < r < at and (d < 0 or self.compatible(d, r)) and self.compatible(r, at):
                if not any(c[0] == "b" and c not in outer for c in self.nodes[r].ctx):
                    return False
        return True

    def reaching_def(self, name: str, at: int) -> int:
        """The node whose definition of `name` reaches node `at` (-1: a parameter or unknown)."""
        for d in reversed(self.defs_of.get(name, ())):
            if d < at and self.compatible(d, at):
                return d
        return -1


@lru_cache(maxsize=8192)
def _idents(text: str) -> frozenset[str]:
    return frozenset(_IDENT.findall(text))


def _value_names(values: tuple[Value, ...], kwargs: tuple[Kwarg, ...]) -> set[str]:
    names: set[str] = set()
    for v in (*values, *(k.value for k in kwargs)):
        if isinstance(v, Ref):
            names.add(v.name)
        elif isinstance(v, Expr):
            # Opaque text may still read a local (`h.shape[0]` kept as text): count it as a use.
            names.update(_idents(v.text))
    return names


def op_keys(block: Block, into: set[tuple[str, str]] | None = None) -> set[tuple[str, str]]:
    """The (kind, target) of every op in `block`, nested blocks included (a cheap pre-filter)."""
    keys = set() if into is None else into
    for stmt in block:
        if isinstance(stmt, Op):
            # `_value_`: the member's value as stored (Enum's `value` property is a Python call per read,
            # and the (kind, target) keys are built for every op of every forward)
            keys.add((stmt.kind._value_, stmt.target))
        elif isinstance(stmt, Branch):
            for path in stmt.paths:
                op_keys(path, keys)
        elif isinstance(stmt, Loop):
            op_keys(stmt.body, keys)
    return keys


def flatten(forward: Forward) -> FlatForward:
    """Flatten `forward` into context-tagged nodes (pre-order: source order on every path)."""
    flat = FlatForward(forward, params=frozenset(p.name for p in forward.params))
    _flatten_block(flat, [0], forward.body, ())
    return flat


# `flatten`'s two steps are module functions, not functions nested in it: nested (and compiled), they made a
# reference cycle with `flatten`'s closure that kept each flattened forward alive until a garbage collection.
def _add_node(flat: FlatForward, op: Op | None, uses: set[str] | None, ctx: Ctx, defs: tuple[str, ...] = ()) -> None:
    node = Node(len(flat.nodes), op, uses, ctx, defs)
    flat.nodes.append(node)
    if op is not None:
        key = (op.kind._value_, op.target)
        if key not in flat.by_target:
            flat.by_target[key] = []
            flat.targets_of_kind.setdefault(key[0], []).append(op.target)
        flat.by_target[key].append(node.index)
    for d in defs:
        flat.defs_of.setdefault(d, []).append(node.index)


def _flatten_block(flat: FlatForward, counter: list[int], block: Block, ctx: Ctx) -> bool:
    """Add the nodes of `block`; return whether it always ends in a `return`. `counter`: the last branch or
    loop number given."""
    for stmt in block:
        if isinstance(stmt, Op):
            _add_node(flat, stmt, None, ctx, stmt.outputs)
        elif isinstance(stmt, Return):
            _add_node(flat, None, _value_names(stmt.values, ()), ctx)
            return True
        elif isinstance(stmt, Branch):
            counter[0] += 1
            bid = counter[0]
            flat.tests[bid] = tuple(_TEMP.sub("%", c) for c in stmt.conditions)
            flat.alternatives[bid] = len(stmt.paths)
            flat.test_texts[len(flat.nodes)] = stmt.conditions
            _add_node(flat, None, {n for c in stmt.conditions for n in _idents(c)}, ctx)
            ends = []
            for alt, path in enumerate(stmt.paths):
                done = _flatten_block(flat, counter, path, (*ctx, ("b", bid, alt)))
                if done:
                    flat.terminates.add((bid, alt))
                ends.append(done)
            if ends and all(ends):
                return True
        elif isinstance(stmt, Loop):
            counter[0] += 1
            _add_node(flat, None, set(_idents(stmt.iterable)), ctx, stmt.targets)
            _flatten_block(flat, counter, stmt.body, (*ctx, ("l", counter[0], 0)))
    return False
