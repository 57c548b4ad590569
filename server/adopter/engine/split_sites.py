"""Sites that a rewrite reading one function's statements cannot edit: steps on both sides of a call.

The flow analysis inlines a same-file helper's body into its caller (`Op.via`), so a site can span the call: the
projection and the split in `h, gate = self._project(x)`, the product in the caller; the scores and their product
in a helper, the softmax after its call. Two rewrites read the statements around a match themselves and decline
such a split when the fix is asked for (`synth.strategies.fusions_gate_chunked`: the split and the product must be
statements of one function; `synth.strategies.attention_sdpa`: the chain's matrix products must run in the
softmax's function). The same facts, read from the match's ops, make the finding detection-only when it is
reported, so a finding called fixable is one the fix applies.
"""

from __future__ import annotations

from collections.abc import Sequence

from adopter.dsl.types import FUNCTION_OP, METHOD_OP, OPERATOR_OP, Op

_PRODUCTS = frozenset({(OPERATOR_OP, "@"), (FUNCTION_OP, "torch.matmul"), (METHOD_OP, "matmul"),
                       (FUNCTION_OP, "torch.bmm"), (METHOD_OP, "bmm"), (FUNCTION_OP, "torch.einsum"),
                       (FUNCTION_OP, "einops.einsum"), (FUNCTION_OP, "torch.baddbmm"),
                       (METHOD_OP, "baddbmm")})
_SOFTMAX = frozenset({"softmax", "torch.softmax", "torch.nn.functional.softmax"})


# The reason a gated split and its product in two functions are not rewritten (`synth.strategies.fusions_gate_chunked`
# declines with it too).
GATE_SPLIT_REASON = "the split and the product are in different functions; rewrite it by hand"


def product_outside(products: Sequence[Op], softmax: Op) -> Op | None:
    """The first of an attention chain's matrix `products` that runs in another function than its `softmax` (each
    op's `via` names the inlined calls it runs in), or None."""
    return next((op for op in products if op.via and op.via != softmax.via), None)


def product_outside_reason(product: Op) -> str:
    """Why an attention chain whose `product` runs in another function than its softmax is not rewritten."""
    return f"the chain's matrix product runs inside `{product.via[-1]}`, another function than its softmax; rewrite it by hand"


def split_call_reason(strategy: str, ops: Sequence[Op]) -> str | None:
    """Why `strategy` cannot rewrite the match `ops` because its steps sit on both sides of a call, or None."""
    if strategy == "gated_chunked":
        chunk = next((op for op in ops if (op.kind is METHOD_OP and op.target in ("chunk", "torch.chunk"))
                      or (op.kind is FUNCTION_OP and op.target == "torch.chunk")), None)
        product = ops[-1] if ops else None
        if chunk is not None and product is not None and chunk.via != product.via:
            return GATE_SPLIT_REASON
    elif strategy == "sdpa_chain":
        softmax = next((op for op in ops if op.target in _SOFTMAX), None)
        if softmax is None:
            return None
        outside = product_outside([op for op in ops if (op.kind, op.target) in _PRODUCTS], softmax)
        if outside is not None:
            return product_outside_reason(outside)
    return None
