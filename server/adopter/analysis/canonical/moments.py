"""`torch.var_mean` read as the two reductions it computes: `x.var(...)` and `x.mean(...)`.

`var, mean = torch.var_mean(x, dim, unbiased=False, keepdim=True)` returns exactly what
`var = x.var(dim, unbiased=False, keepdim=True)` and `mean = x.mean(dim, keepdim=True)` return (one pass over
`x` instead of two): the variance with the bias correction as given, the mean over the same axes with the same
`keepdim`. The canonical pass writes it so, and the rules that read a hand-written norm's statistics from
`.var` and `.mean` (family 11) read this spelling too (timm's `_layer_norm_cf`, deepmd-kit's `LayerNorm`).
"""

from __future__ import annotations

from adopter.dsl.types import FUNCTION_OP, METHOD_OP, Expr, Kwarg, Op, Ref

VAR_MEAN = "torch.var_mean"
# torch's `var_mean(input, dim, unbiased, keepdim)` (the positional form torch still accepts); `correction`
# is keyword-only.
_POSITIONAL = ("input", "dim", "unbiased", "keepdim")
_SHARED = ("dim", "keepdim")  # what the mean takes of the call's arguments
_KEYWORDS = frozenset(_POSITIONAL[1:]) | {"correction"}  # a set, not `in (*a, b)`: mypyc cannot compile that test


def split_var_mean(op: Op) -> tuple[Op, Op] | None:
    """`var, mean = torch.var_mean(x, ...)` as `var = x.var(...)` and `mean = x.mean(...)` (methods, as written
    by hand, for the canonical pass to respell); None for any other op, or one this reading does not cover
    (the pair not unpacked into two names, starred arguments, an argument torch does not take)."""
    if op.kind != FUNCTION_OP or op.target != VAR_MEAN or len(op.outputs) != 2 or not op.args:
        return None
    if len(op.args) > len(_POSITIONAL) or any(_starred(a) for a in op.args) or any(
            k.name.startswith("*") for k in op.kwargs):
        return None
    named = [Kwarg(name, value) for name, value in zip(_POSITIONAL[1:], op.args[1:])]
    given = {k.name for k in named}
    if any(k.name in given or k.name not in _KEYWORDS for k in op.kwargs):
        return None
    x = op.args[0]
    every = (*named, *op.kwargs)
    var_out, mean_out = op.outputs
    var = Op(METHOD_OP, "var", (x,), every, (var_out,), op.span, op.stmt_span, op.via, origin=op.origin or op)
    mean = Op(METHOD_OP, "mean", (x,), tuple(k for k in every if k.name in _SHARED), (mean_out,), op.span,
              op.stmt_span, op.via, origin=op.origin or op)
    return var, mean


def _starred(v: object) -> bool:
    return (isinstance(v, Expr) and v.text.startswith("*")) or (isinstance(v, Ref) and v.name.startswith("*"))
