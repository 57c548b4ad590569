"""Activation fusions: Linear + GELU (family 6) and hand-written GELU formulas (family 13)."""

from __future__ import annotations

import ast

from adopter.dsl.types import OpKind
from adopter.synth.registry import SynthContext, strategy
from adopter.synth.strategies.formula_activations import formula_function_held
from adopter.synth.strategies.fusions_chain import (
    activation_path,
    binding_path,
    ensure_helper,
    functional,
    rewrite_chain,
    value_text,
)

# The activation is only known at run time for `ACT2FN[config.hidden_act]`: the helper recognises the
# GELU variants (exact and tanh-approximated) and falls back to the original modules for anything else.
_LINEAR_GELU = '''
def fused_linear_gelu(x, linear, act):
    """`act(linear(x))` with a fused bias-GELU GEMM when `act` is a GELU (adopter: linear-gelu).

    The Linear keeps its weight and bias, so checkpoints load unchanged; any other activation runs
    the original modules.
    """
    import torch

    kind = type(act).__name__
    if act is torch.nn.functional.gelu or kind == "GELUActivation":
        approximate = "none"
    elif isinstance(act, torch.nn.GELU):
        approximate = act.approximate
    elif kind in ("NewGELUActivation", "FastGELUActivation", "PytorchGELUTanh", "GELUTanh"):
        approximate = "tanh"
    else:
        # Module.__call__ keeps the hooks; spelled out, the code no longer reads as Linear -> activation.
        return act(torch.nn.Module.__call__(linear, x))
    if approximate == "tanh" and x.is_cuda and linear.bias is not None and not torch.is_grad_enabled():
        # Inference on CUDA: cuBLASLt applies bias and tanh-GELU in the GEMM epilogue.
        out = torch._addmm_activation(linear.bias, x.reshape(-1, x.shape[-1]), linear.weight.t(), use_gelu=True)
        return out.view(*x.shape[:-1], out.shape[-1])
    return torch.nn.functional.gelu(torch.nn.functional.linear(x, linear.weight, linear.bias), approximate=approximate)
'''


@strategy("linear_gelu")
def linear_gelu(ctx: SynthContext) -> None:
    """`act(linear(x))` → `fused_linear_gelu(x, linear, act)` (`$lin`, `$act`, `$x`)."""
    last = ctx.finding.match.ops[-1]
    last = last.origin or last  # the activation's call, `self.act(h)`, also where it reads as `F.gelu(h)`
    if last.kind is OpKind.MODULE and last.target.startswith("self.") and (own := formula_function_held(
            ctx.text_index.whole(), ctx.source, ctx.finding.scope_name, last.target)) is not None:
        ctx.decline(f"the activation is a function of this file (`{own}`); the fused kernel engages only for "
                    "F.gelu / nn.GELU, so the helper would run the original code")
    linear = binding_path(ctx, "lin")
    # The activation's own call is the match's last op: `activation_path` looks `$out` up by name, and a
    # reassigned name (`x = self.fc1(x); x = self.act(x)`, timm's Mlp) finds the Linear that wrote it first.
    held = last.target if last.kind is OpKind.MODULE and last.target.startswith("self.") and "[" not in last.target else None
    act = held if held is not None and not isinstance(ctx.binding("act"), str) else activation_path(ctx, "act", "out")
    x = value_text(ctx, "x")
    _check_linear_on_every_path(ctx, linear)
    gated = {op.span for f in ctx.findings if f.family == 14 for op in f.match.ops}  # the session's findings
    if ctx.finding.match.ops[-1].span in gated:
        ctx.decline("this activation gates a second projection (a gated MLP): f14-swiglu fuses that site instead")
    helper = ensure_helper(ctx, "fused_linear_gelu", "linear-gelu", _LINEAR_GELU)
    rewrite_chain(ctx, f"{helper}({x}, {linear}, {act})")


def _check_linear_on_every_path(ctx: SynthContext, linear: str) -> None:
    """Decline when the Linear is one only under a condition (`linear_layer = partial(nn.Conv2d,
    kernel_size=1) if use_conv else nn.Linear`, timm's `Mlp`): the helper reads a Linear's weight and bias,
    so on another path it would compute something else. A conditional expression whose arms all call the
    same class as written (`nn.Linear(h, m) if c else nn.Linear(h, 2 * m)`) is a Linear either way."""
    attr = linear.removeprefix("self.")
    for binding in ctx.finding.match.bindings:
        if binding.attr != attr or binding.condition is None:
            continue
        try:
            stmt = ast.parse(ctx.statement_text(binding.span).strip()).body[0]
        except (SyntaxError, IndexError):
            stmt = None
        value = stmt.value if isinstance(stmt, ast.Assign) else None
        if value is None or not isinstance(value, ast.IfExp) or len(_callees(value)) != 1:
            ctx.decline(f"{linear} is a Linear only when `{binding.condition}`; on another path it is built "
                        "otherwise, and the fused helper reads a Linear's weight")


def _callees(node: ast.expr) -> set[str]:
    """The callee texts of a conditional expression's arms (`"?"` for an arm that is not a call)."""
    if isinstance(node, ast.IfExp):
        return _callees(node.body) | _callees(node.orelse)
    return {ast.unparse(node.func)} if isinstance(node, ast.Call) else {"?"}


@strategy("gelu_formula")
def gelu_formula(ctx: SynthContext) -> None:
    """The erf form of GELU → `F.gelu(x)` (`$x`)."""
    rewrite_chain(ctx, f"{functional(ctx)}.gelu({value_text(ctx, 'x')})")


@strategy("gelu_tanh_formula")
def gelu_tanh_formula(ctx: SynthContext) -> None:
    """The tanh approximation of GELU → `F.gelu(x, approximate="tanh")` (`$x`)."""
    rewrite_chain(ctx, f'{functional(ctx)}.gelu({value_text(ctx, "x")}, approximate="tanh")')

