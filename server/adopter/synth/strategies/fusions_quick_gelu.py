"""Quick-GELU (family 13): `x * torch.sigmoid(1.702 * x)` keeping only `x` for backward.

It stays the same function (F.gelu is not: it differs by up to 2e-2). What autograd keeps besides `x` is
`sigmoid(1.702 * x)`, as large as `x`; the helper written here is an autograd function that keeps only
`x` and recomputes the sigmoid in backward, with the kernels autograd runs, so the values and gradients
are the same.
"""

from __future__ import annotations

from adopter.synth.registry import SynthContext, strategy
from adopter.synth.strategies.fusions_chain import rewrite_chain, value_text
from adopter.synth.strategies.fusions_gate_chunked import existing_helper

_HELPER = '''
class QuickGELUFunction({torch}.autograd.Function):
    """`x * sigmoid(scale * x)` keeping only `x` for backward (adopter: quick-gelu-function).

    Autograd would also keep `sigmoid(scale * x)`, as large as `x`; backward recomputes it instead. The
    gradient comes from the kernels autograd runs (`sigmoid_backward`), in the same order; with
    `create_graph=True` backward runs the original operations again.
    """

    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        ctx.save_for_backward(x)
        return {torch}.sigmoid(scale * x).mul_(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        if {torch}.is_grad_enabled():  # `create_graph=True`: backward must itself be differentiable
            with {torch}.enable_grad():
                out = x * {torch}.sigmoid(ctx.scale * x)
            return {torch}.autograd.grad(out, x, grad, create_graph=True)[0], None
        s = {torch}.sigmoid(ctx.scale * x)
        through = {torch}.ops.aten.sigmoid_backward(grad * x, s) * ctx.scale
        return through.add_(s.mul_(grad)), None


def quick_gelu(x, scale=1.702):
    """`x * torch.sigmoid(scale * x)`, keeping only `x` for backward in training (adopter: quick-gelu).

    Without gradients or under torch.compile (which fuses this itself) it computes the expression as
    written.
    """
    if not (x.requires_grad and {torch}.is_grad_enabled()) or {torch}.compiler.is_compiling():
        return x * {torch}.sigmoid(scale * x)
    return QuickGELUFunction.apply(x, scale)
'''


@strategy("quick_gelu")
def quick_gelu(ctx: SynthContext) -> None:
    """`x * torch.sigmoid(1.702 * x)` → `quick_gelu(x)` (`$x`)."""
    x = value_text(ctx, "x")
    helper = existing_helper(ctx, "quick-gelu")
    if helper is None:
        torch = ctx.add_import("torch")
        cls = ctx.fresh_name("QuickGELUFunction")
        helper = ctx.add_module_code(_HELPER.replace("{torch}", torch).replace("QuickGELUFunction", cls),
                                     name="quick_gelu")
    rewrite_chain(ctx, f"{helper}({x})")
