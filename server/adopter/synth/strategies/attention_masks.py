"""Family 10: what a `scores.masked_fill(cond, value)` step means, and the helper SDPA needs for a finite value.

A fill of -inf is SDPA's boolean mask (`attn_mask=~cond`). A large finite fill (`-1e9`,
`-torch.finfo(x.dtype).max`) differs from -inf only in a row whose keys are all masked: every score of that
row becomes the same number, so the row attends to every key uniformly and passes no gradient to its query
or to the keys (masked_fill's backward zeroes those scores' gradients). `masked_fill_attention`, added once
per file, computes exactly that with one SDPA call: such a row runs with a zero query (its scores are 0, so
its softmax is uniform, and the zero factor stops the gradients) and no mask; every other row runs with the
masked keys dropped, where the original's weight for them, `exp(fill - max)`, is 0 in float32 (it underflows
once the fill lies 104 below the row's largest score: a fill of at most -1e4 and any score above -9896).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from adopter.synth.registry import SynthContext
from adopter.synth.strategies.fusions_gate_chunked import existing_helper

TAG = "masked-fill-attention"
_HELPER = '''
def masked_fill_attention(query, key, value, masked=None, dropout_p=0.0, scale=None):
    """`softmax(scale * query @ keyᵀ).masked_fill(masked, fill)) @ value` for a large negative finite `fill`
    (`-1e9`, `-torch.finfo(dtype).max`), as one scaled_dot_product_attention call (adopter: masked-fill-attention).

    The masked keys get no weight, as with SDPA's boolean mask. A row whose keys are all masked has one score
    everywhere in the original: it attends to every key uniformly and gives its query and the keys no
    gradient. SDPA computes that row with a zero query and no mask, which is the same.
    """
    if masked is None:
        return {F}.scaled_dot_product_attention(query, key, value, dropout_p=dropout_p, scale=scale)
    empty = masked.all(dim=-1, keepdim=True)
    return {F}.scaled_dot_product_attention(
        {torch}.where(empty, 0.0, query), key, value, attn_mask=~masked | empty, dropout_p=dropout_p, scale=scale,
    )
'''

# The most negative finite fill read as "drop this key": its weight exp(fill - max) is 0 in float32 for any
# score above fill + 104.
_LARGEST_FILL = -1e4


def fill_kind(text: str, resolve: Callable[[ast.expr], list[ast.expr] | None], depth: int = 0) -> str | None:
    """"inf" for a fill of -inf, "finite" for a finite one of at most -1e4 (or the most negative finite value of
    a dtype), None for anything else. `resolve` gives the values a name or `self.` attribute is bound to
    (None when unknown); every one of them must be of the same kind."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None
    return _kind(node, resolve, depth)


def _kind(node: ast.expr, resolve: Callable[[ast.expr], list[ast.expr] | None], depth: int) -> str | None:
    value = _number(node)
    if value is not None:
        if value == float("-inf"):
            return "inf"
        return "finite" if value <= _LARGEST_FILL else None
    if _dtype_extreme(node):
        return "finite"
    if isinstance(node, ast.Name | ast.Attribute) and depth < 3:
        bound = resolve(node)
        if not bound:
            return None
        kinds = {_kind(v, resolve, depth + 1) for v in bound}
        return kinds.pop() if len(kinds) == 1 else None
    return None


def _number(node: ast.expr) -> float | None:
    """The value of a numeric literal (`-1e9`, `float("-inf")`, `-float("inf")`, `-math.inf`), else None."""
    sign = 1.0
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        sign *= -1.0 if isinstance(node.op, ast.USub) else 1.0
        node = node.operand
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return sign * float(node.value)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "float"
            and len(node.args) == 1 and not node.keywords and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)):
        try:
            return sign * float(node.args[0].value)
        except ValueError:
            return None
    if isinstance(node, ast.Attribute) and node.attr == "inf" and isinstance(node.value, ast.Name) \
            and node.value.id in ("math", "torch", "np", "numpy"):
        return sign * float("inf")
    return None


def _dtype_extreme(node: ast.expr) -> bool:
    """`-torch.finfo(dtype).max` or `torch.finfo(dtype).min`: the most negative finite value of a dtype."""
    negated = isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
    inner = node.operand if isinstance(node, ast.UnaryOp) and negated else node
    if not (isinstance(inner, ast.Attribute) and inner.attr == ("max" if negated else "min")):
        return False
    call = inner.value
    return (isinstance(call, ast.Call) and len(call.args) == 1 and not call.keywords
            and ((isinstance(call.func, ast.Attribute) and call.func.attr == "finfo")
                 or (isinstance(call.func, ast.Name) and call.func.id == "finfo")))


def ensure_helper(ctx: SynthContext, functional: str) -> str:
    """The name of the file's `masked_fill_attention` helper, added once per file."""
    found = existing_helper(ctx, TAG)
    if found is not None:
        return found
    torch = ctx.add_import("torch")
    code = _HELPER.replace("{F}", functional).replace("{torch}", torch)
    return ctx.add_module_code(code, name="masked_fill_attention")
