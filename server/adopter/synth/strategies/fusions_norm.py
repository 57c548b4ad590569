"""Normalisation fusions: dropout-add-LayerNorm (family 5), hand-written LayerNorm (11) and RMSNorm (12)."""

from __future__ import annotations

from adopter.dsl.types import Expr, OpKind
from adopter.synth.registry import SynthContext, strategy
from adopter.synth.strategies.dropout_add_sum import sum_plan
from adopter.synth.strategies.fusions_chain import (
    binding_path,
    ensure_helper,
    functional,
    is_simple,
    op_producing,
    rewrite_chain,
    value_text,
)

_DROPOUT_ADD_LAYER_NORM = '''
def fused_dropout_add_layer_norm(x, residual, norm, p, training):
    """Dropout, residual add and LayerNorm as one function (adopter: dropout-add-layernorm).

    `norm`'s parameters are used as they are, so checkpoints load unchanged.
    """
    import torch

    if training and p > 0.0:
        x = torch.nn.functional.dropout(x, p, True)
    return torch.nn.functional.layer_norm(x + residual, norm.normalized_shape, norm.weight, norm.bias, norm.eps)
'''


_DROPOUT_ADD_LAYER_NORM_RESIDUAL = '''
def fused_dropout_add_layer_norm_residual(x, residual, norm, p, training):
    """Dropout, residual add and LayerNorm as one function that also returns the sum it normalised (the
    residual stream of a pre-norm block; adopter: dropout-add-layernorm-residual).

    `norm`'s parameters are used as they are, so checkpoints load unchanged.
    """
    import torch

    if training and p > 0.0:
        x = torch.nn.functional.dropout(x, p, True)
    total = x + residual
    return torch.nn.functional.layer_norm(total, norm.normalized_shape, norm.weight, norm.bias, norm.eps), total
'''


@strategy("dropout_add_layer_norm")
def dropout_add_layer_norm(ctx: SynthContext) -> None:
    """`norm(dropout(x) + r)` → one fused dropout-add-LayerNorm call (`$drop`, `$norm`, `$x`, `$r`); where the
    sum is read after the norm too (a pre-norm block's residual stream), a call that returns it as well."""
    p, training = _dropout_args(ctx)
    norm = binding_path(ctx, "norm")
    x = value_text(ctx, "x")
    residual = value_text(ctx, "r")
    plan = sum_plan(ctx)
    if plan is not None:
        helper = ensure_helper(ctx, "fused_dropout_add_layer_norm_residual", "dropout-add-layernorm-residual",
                               _DROPOUT_ADD_LAYER_NORM_RESIDUAL)
        out, sums, spans = plan
        extra = "".join(f"\n{alias} = {sums[0]}" for alias in sums[1:])
        args = [x, residual, norm, p, training]
        call = f"{helper}({', '.join(args)})"
        if len(ctx.line_indent(spans[0])) + len(out) + len(sums[0]) + len(call) + 5 > 100:
            call = f"{helper}(\n" + "".join(f"    {a},\n" for a in args) + ")"  # one argument per line, as ruff does
        ctx.replace_statements(spans, f"{out}, {sums[0]} = {call}{extra}")
        return
    helper = ensure_helper(
        ctx,
        "fused_dropout_add_layer_norm",
        "dropout-add-layernorm",
        _DROPOUT_ADD_LAYER_NORM,
    )
    rewrite_chain(ctx, f"{helper}({x}, {residual}, {norm}, {p}, {training})")


def _dropout_args(ctx: SynthContext) -> tuple[str, str]:
    """The dropout's probability and training flag: of the `nn.Dropout` bound to `$drop`, or the
    arguments of `F.dropout(x, p=..., training=...)` (whose defaults are 0.5 and True)."""
    if isinstance(ctx.binding("drop"), str):
        drop = binding_path(ctx, "drop")
        return f"{drop}.p", f"{drop}.training"
    op = op_producing(ctx, "h")
    if op is None or op.kind is not OpKind.FUNCTION or any(k.name not in ("p", "training") for k in op.kwargs):
        ctx.decline("the dropout is neither an nn.Dropout submodule nor F.dropout(x, p=..., training=...)")
        raise AssertionError
    kw = {k.name: k.value for k in op.kwargs}
    if any(not isinstance(v, Expr) for v in kw.values()):
        ctx.decline("the dropout's arguments are computed values")
    p = kw.get("p", Expr("0.5"))
    training = kw.get("training", Expr("True"))
    assert isinstance(p, Expr) and isinstance(training, Expr)
    return p.text, training.text


@strategy("layer_norm_formula")
def layer_norm_formula(ctx: SynthContext) -> None:
    """`(x - mean) / sqrt(var + eps)` over the last dim → `F.layer_norm` without affine (`$x`, `$eps`)."""
    x = value_text(ctx, "x")
    eps = value_text(ctx, "eps")
    if not is_simple(x):
        ctx.decline(f"the normalised value `{x}` is an expression; bind it to a name first")
    dim = ctx.binding("dim")
    if dim is not None and dim != Expr("-1"):
        ctx.decline("the statistics are over the channel axis (dim=1), not the last one: move that axis "
                    "last (x.movedim(1, -1)) and use F.layer_norm, by hand")
    rewrite_chain(ctx, f"{functional(ctx)}.layer_norm({x}, {x}.shape[-1:], eps={eps})")


@strategy("rms_norm_formula")
def rms_norm_formula(ctx: SynthContext) -> None:
    """`x * rsqrt(mean(x**2, -1) + eps)` → `F.rms_norm` without weight (`$x`, `$xf`, `$eps`)."""
    x = value_text(ctx, "x")
    xf = value_text(ctx, "xf") if ctx.binding("xf") is not None else x
    eps = value_text(ctx, "eps")
    if ctx.binding("w") is not None or ctx.binding("rc") != ctx.binding("rw"):
        ctx.decline("the weight (or a cast) is applied to the inverse RMS before it scales `x` "
                    "(`x * (w * rsqrt(...))`); rewrite it by hand as `F.rms_norm(x, ...) * w`")
    if not is_simple(x):
        ctx.decline(f"the normalised value `{x}` is an expression; bind it to a name first")
    rewrite_chain(ctx, f"{functional(ctx)}.rms_norm({xf}, {x}.shape[-1:], eps={eps})")
