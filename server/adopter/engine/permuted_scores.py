"""The `permuted_scores($sp, $dim, $pp)` guard: attention whose scores are laid out in another axis order.

An einsum product in any axis order reads, in canonical form, as the matrix product in (batch..., i, j) layout
followed by a `permute` to the equation's output order (`"ibnd,jbnd->ijbn"`: `permute(q @ kᵀ, 2, 3, 0, 1)`), and
an einsum reading the probabilities in that order permutes them back first (`"ijbn,jbnd->ibnd"`:
`permute(p, 2, 3, 0, 1) @ v`). Whatever the letters and their order, the chain is attention when

- the softmax runs over the axis the first product's keys made (the product's last axis, where the permute of
  the scores `$sp` put it),
- the second product contracts that axis (the permute of the probabilities `$pp` brings it last), and
- its rows are the queries' axis (`$pp`'s second to last axis is the product's).

Batch axes may come back in another order (the values are permuted to match by their own letters).
"""

from __future__ import annotations

import re

from adopter.dsl.types import METHOD_OP, Expr
from adopter.engine.flow import FlatForward

_INT = re.compile(r"^\s*-?\d+\s*$")

Bound = tuple[str, ...] | tuple[str, str, int] | None


def permuted_scores(scores: Bound, dim: Bound, probs: Bound, flat: FlatForward) -> bool:
    """Whether the permuted scores `scores`, softmaxed over `dim`, and the permuted probabilities `probs`
    are attention's (see the module doc)."""
    first, second = _permutation(scores, flat), _permutation(probs, flat)
    if first is None or second is None or len(first) != len(second):
        return False
    rank = len(first)
    axis = _axis(dim, rank)
    if axis is None:
        return False
    keys, queries = rank - 1, rank - 2
    return first[axis] == keys and second[keys] == axis and first[second[queries]] == queries


def _permutation(bound: Bound, flat: FlatForward) -> tuple[int, ...] | None:
    """The axes of the `permute` op defining a bound value, each in [0, rank); None for any other op."""
    if bound is None or bound[0] != "ref" or len(bound) < 3:
        return None
    node = int(bound[2])
    if node < 0:
        return None
    op = flat.nodes[node].op
    if op is None or op.kind != METHOD_OP or op.target != "permute" or op.kwargs or len(op.args) < 3:
        return None
    dims = op.args[1:]
    if not all(isinstance(d, Expr) and _INT.match(d.text) for d in dims):
        return None
    rank = len(dims)
    axes = tuple(int(d.text) % rank for d in dims if isinstance(d, Expr) and -rank <= int(d.text) < rank)
    return axes if sorted(axes) == list(range(rank)) else None


def _axis(bound: Bound, rank: int) -> int | None:
    """A literal axis (`1`, `-3`) as a position in [0, rank)."""
    if bound is None or bound[0] != "expr" or not _INT.match(str(bound[1])):
        return None
    axis = int(str(bound[1]))
    return axis % rank if -rank <= axis < rank else None
