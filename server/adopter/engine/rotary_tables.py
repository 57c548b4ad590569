"""The `rotary_tables($c, $s)` guard: the factors of a rotation formula are cosine/sine tables.

The rotation written out, `x1 * c - x2 * s` and `x2 * c + x1 * s`, is a complex multiplication: rotary
embeddings multiply by `cos θ + i sin θ`, but an FFT convolution or an MRI reconstruction multiplies by
any complex number in the same form. What makes it a rotary embedding is where `c` and `s` come from: a
`cos`/`sin` of angles, or tables of them (`cos`, `sin`, `freqs_cis`, `rope_cache`, `theta`), possibly
indexed, cast or reshaped on the way. The guard follows each value back through such layout ops (a few
steps) and holds when one of them is a `cos`/`sin` call or names such a table.
"""

from __future__ import annotations

import re

from adopter.dsl.types import FUNCTION_OP, METHOD_OP, Expr, Ref
from adopter.engine.flow import FlatForward

MAX_STEPS = 6
_TRIG_OPS = frozenset({"cos", "sin", "torch.cos", "torch.sin"})
# Layout ops a table passes through before it is used (`rope_cache[..., 0]`, `cos.unsqueeze(1)`).
_LAYOUT = frozenset({"getitem", "cast", "unsqueeze", "expand", "view", "reshape", "transpose", "permute",
                     "to", "type_as", "squeeze", "repeat_interleave", "flatten", "contiguous"})
_NAME = re.compile(r"cos|sin|freq|rope|rotar|theta", re.IGNORECASE)


def is_rotary_table(bound: tuple[str, ...] | tuple[str, str, int] | None, flat: FlatForward) -> bool:
    """Whether a bound value (`("ref", name, def)` or `("expr", text)`) is a cosine/sine table (see above)."""
    if bound is None:
        return False
    if bound[0] == "expr":
        return _NAME.search(str(bound[1])) is not None
    if bound[0] != "ref" or len(bound) < 3:
        return False
    name, node = str(bound[1]), int(bound[2])
    for _ in range(MAX_STEPS):
        if _NAME.search(name) and not name.startswith("%"):
            return True
        if node < 0:
            return False
        op = flat.nodes[node].op
        if op is None:
            return False
        if op.target in _TRIG_OPS and op.kind in (FUNCTION_OP, METHOD_OP):
            return True
        if op.target not in _LAYOUT or not op.args:
            return False
        first = op.args[0]
        if isinstance(first, Expr):
            return _NAME.search(first.text) is not None
        if not isinstance(first, Ref):
            return False
        name, node = first.name, flat.reaching_def(first.name, node)
    return False
