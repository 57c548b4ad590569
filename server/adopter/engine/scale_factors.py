"""The `scale_factor($s)` guard: a value is a factor, not an activation of the forward.

`F.normalize(x, dim=-1) * s` is an RMS normalisation times a factor when `s` is a parameter or
attribute (`self.scale`, `self.gamma`), arithmetic of those (`self.gamma + 1`, `self.scale.exp()`), or a size
read from a shape (`x.shape[-1] ** 0.5`), also reshaped (`append_dims(self.g, x.ndim - 2)`). When `s` is another
activation (`x * F.normalize(residual)`, a projection onto a direction) it is not. The guard follows the
value back through the ops that made it (a few steps) and fails at a forward input, a module call, or any
op reading an activation; a call that reads no value of the forward (`self.scale.exp()`) is a factor.

A bare numeric literal (`2 * F.normalize(x) @ c.t()`, the `2ab` term of a squared distance) is neither a gain
nor a `sqrt(d)` scale: it is a coefficient of whatever formula the product belongs to, so it is not a factor
here; a literal in arithmetic (`2 ** 0.5`, `dim ** 0.5`) is.
"""

from __future__ import annotations

import re

from adopter.dsl.types import CALL_OP, METHOD_OP, MODULE_OP, OPERATOR_OP, Expr, Ref
from adopter.engine.flow import FlatForward

MAX_STEPS = 8
_NUMBER = re.compile(r"\(?\s*[-+]?\s*(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*\)?")
_SIZES = frozenset({"numel", "size", "dim", "nelement"})
_LAYOUT = frozenset({"reshape", "view", "expand", "repeat", "permute", "transpose", "unsqueeze", "squeeze",
                     "flatten"})


def is_scale_factor(bound: tuple[str, ...] | tuple[str, str, int] | None, flat: FlatForward) -> bool:
    """Whether a bound value (`("ref", name, def)` or `("expr", text)`) is a factor (see the module doc)."""
    if bound is None:
        return False
    if bound[0] == "expr":
        return _NUMBER.fullmatch(str(bound[1]).strip()) is None
    if bound[0] != "ref" or len(bound) < 3:
        return False
    return _factor(str(bound[1]), int(bound[2]), flat, MAX_STEPS)


def _factor(name: str, node: int, flat: FlatForward, budget: int) -> bool:
    if budget <= 0 or node < 0:
        return False  # a forward input (an activation), or too far back to tell
    op = flat.nodes[node].op
    if op is None:
        return False
    if op.kind == MODULE_OP and op.target.count(".") == 2 and op.target.rsplit(".", 1)[1] in _LAYOUT:
        return True  # `self.gamma.reshape(*shape, 1, 1)`: an attribute's layout method, read as a call of it
    if op.kind in (MODULE_OP, CALL_OP):
        # A layer applied to a value is an activation; a call reading no value of the forward
        # (`self.scale.exp()`, read as a call of `self.scale.exp`) is not.
        return not any(isinstance(a, Ref) for a in (*op.args, *(k.value for k in op.kwargs)))
    if (op.kind == OPERATOR_OP and op.target == "getattr" and len(op.args) == 2
            and isinstance(op.args[1], Expr) and op.args[1].text.strip("`") in ("shape", "ndim")):
        return True  # a size, not the tensor
    if op.kind == METHOD_OP and op.target in _SIZES:
        return True
    # `x.shape[dim]`, `g.reshape(*shape, 1, 1)`: an index or a size (an int parameter is a Ref like any input)
    # does not make the value an activation; only the indexed or reshaped value does
    sized = (op.kind == OPERATOR_OP and op.target == "getitem") or (
        op.kind == METHOD_OP and op.target in _LAYOUT)
    args = op.args[:1] if sized else op.args
    for arg in args:
        if isinstance(arg, Ref) and not _factor(arg.name, flat.reaching_def(arg.name, node), flat, budget - 1):
            return False
    return True
