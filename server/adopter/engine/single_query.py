"""The `query_vector` and `probability_vector` guards: attention with one query, written as matrix-vector products.

Attention with one query per batch row (a decoder step attending over the encoder outputs, an atom over its
neighbours) writes its scores as a matrix-vector product: the query gets a unit axis and is multiplied with
the keys, `matmul(keys, q.unsqueeze(-1)).squeeze(-1)` (a column) or
`matmul(q.unsqueeze(-2), keys.transpose(-2, -1)).squeeze(-2)` (a row), and the context is the probabilities
given a unit axis again, a row times the values (`matmul(p.unsqueeze(-2), v)`) or a column the transposed values
multiply (`matmul(vᵀ, p.unsqueeze(-1))`).

`query_vector($qc, $q, side)`: `$qc` is `$q` with a unit axis at `side` (-1 a column, -2 a row), written as an
`unsqueeze` there (or at a positive axis: `bmm`'s 2-D query names the column `2`, a 3-D query's row `2`) or as a
`view` / `reshape` whose size at that side is the literal `1` (`query.reshape((B, H, -1, 1))`); and `$q` is an
activation of the forward. A learned vector (`self.v`, a parameter or attribute, arithmetic of those, reshaped
or expanded) is additive (Bahdanau) attention's `v·tanh(W q + U k)` or a pooling with a learned query, which
the labels and the run-based oracle leave out of family 10 (a product with a parameter is a Linear).

`probability_vector($b, $dim, $e, scores_side, values_side)`: the scores' `squeeze($b)` drops the query's unit
axis, the softmax runs over the keys (`$dim`), and the probabilities' `unsqueeze($e)` makes the vector the
values' product contracts over the keys. A positive axis is read at the rank the squeeze proves (squeezing
axis `b` of a column's product leaves the probabilities with rank `b`, of a row's `b + 1`); with axes counted
from the end the rank is unknown, and a positive unsqueeze is then read at the smallest rank that makes it a
row (`1`) or a column (`2`).
"""

from __future__ import annotations

import re

from adopter.dsl.types import METHOD_OP, OPERATOR_OP, Expr, Op, Ref
from adopter.engine.flow import FlatForward
from adopter.engine.scale_factors import is_scale_factor

Bound = tuple[str, ...] | tuple[str, str, int] | None

_INT = re.compile(r"^\s*-?\d+\s*$")
_RESHAPES = frozenset({"view", "reshape"})


def is_query_vector(column: Bound, query: Bound, side: Bound, flat: FlatForward) -> bool:
    """Whether `column` is the activation `query` with a unit axis at `side` (see the module doc)."""
    at = _int(side)
    if column is None or column[0] != "ref" or len(column) < 3 or at not in (-1, -2):
        return False
    node = int(column[2])
    op = flat.nodes[node].op if node >= 0 else None
    if op is None or op.kind != METHOD_OP or not op.args or not isinstance(op.args[0], Ref):
        return False
    if query is None or query[0] != "ref" or query[1] != op.args[0].name or is_scale_factor(query, flat):
        return False
    if op.target == "unsqueeze":
        axis = _int(("expr", op.args[1].text)) if len(op.args) == 2 and isinstance(op.args[1], Expr) else None
        # 0 would add a batch axis, not a unit side
        return axis is not None and not op.kwargs and (axis == at or axis >= (1 if at == -2 else 2))
    if op.target in _RESHAPES and not op.kwargs:
        sizes = _sizes(op, node, flat)
        return sizes is not None and len(sizes) >= -at and sizes[at] == "1"
    return False


def is_probability_vector(squeezed: Bound, dim: Bound, unsqueezed: Bound, scores_side: Bound,
                          values_side: Bound) -> bool:
    """Whether the squeeze, the softmax and the unsqueeze between the two products are single-query
    attention's (see the module doc)."""
    b, d, e, scores, values = (_int(x) for x in (squeezed, dim, unsqueezed, scores_side, values_side))
    if b is None or d is None or e is None or scores not in (-1, -2) or values not in (-1, -2):
        return False
    rank: int | None = None
    if b < 0:
        if b != scores:
            return False
    elif b < (2 if scores == -1 else 1):
        return False
    else:
        rank = b if scores == -1 else b + 1
    if d != -1 and (rank is None or d != rank - 1):
        return False
    if e < 0:
        return e == values
    if rank is None:
        return e == (1 if values == -2 else 2)
    return e == (rank - 1 if values == -2 else rank)


def _sizes(op: Op, node: int, flat: FlatForward) -> list[str] | None:
    """The sizes a `view` / `reshape` is given, as texts: listed, as one tuple or list literal, or as a
    tuple the flow built for the call (`x.reshape((b, h, -1, 1))`)."""
    args = op.args[1:]
    if len(args) == 1 and isinstance(args[0], Ref):
        made = flat.reaching_def(args[0].name, node)
        built = flat.nodes[made].op if made >= 0 else None
        if built is None or built.kind != OPERATOR_OP or built.target not in ("tuple", "list"):
            return None
        args = built.args
    texts = [a.text.strip() if isinstance(a, Expr) else "?" for a in args]
    if len(texts) == 1 and texts[0][:1] in "([" and texts[0][-1:] in ")]":
        texts = [s.strip() for s in texts[0][1:-1].split(",") if s.strip()]
    return texts


def _int(bound: Bound) -> int | None:
    if bound is None or bound[0] != "expr" or not _INT.match(str(bound[1])):
        return None
    return int(str(bound[1]))
