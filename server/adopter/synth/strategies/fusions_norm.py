"""Normalisation fusions: dropout-add-LayerNorm (family 5), hand-written LayerNorm (11) and RMSNorm (12)."""

from __future__ import annotations

import ast
import re

from adopter.dsl.types import Expr, Op, OpKind, Ref
from adopter.engine.sites import PATH_DEPENDENT
from adopter.synth.registry import SynthContext, strategy
from adopter.synth.strategies.dropout_add_branch import Fusion, branch_plan, rewrite_branches, rewrite_tail
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
    """Dropout, residual add and LayerNorm as one function that also returns the sum it normalised, the
    residual stream of a pre-norm block (adopter: dropout-add-layernorm-residual).

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
    def fused(fusion: Fusion) -> str:
        args = ", ".join([x, residual, fusion.norm, p, training])
        if len(args) + len(fusion.out) + sum(len(s) + 2 for s in fusion.sums[:1]) > 40:
            args = "\n" + "".join(f"    {a},\n" for a in [x, residual, fusion.norm, p, training])  # as ruff does
        if not fusion.sums:
            helper = ensure_helper(ctx, "fused_dropout_add_layer_norm", "dropout-add-layernorm",
                                   _DROPOUT_ADD_LAYER_NORM)
            return f"{fusion.out} = {helper}({args})"
        helper = ensure_helper(ctx, "fused_dropout_add_layer_norm_residual", "dropout-add-layernorm-residual",
                               _DROPOUT_ADD_LAYER_NORM_RESIDUAL)
        extra = "".join(f"\n{alias} = {fusion.sums[0]}" for alias in fusion.sums[1:])
        return f"{fusion.out}, {fusion.sums[0]} = {helper}({args}){extra}"

    if ctx.finding.path_dependent:
        if rewrite_tail(ctx, norm, fused, both=True):
            return
        ctx.decline(PATH_DEPENDENT)
    if rewrite_tail(ctx, norm, fused):
        return
    branches = branch_plan(ctx, norm)
    if branches is not None:
        rewrite_branches(ctx, branches, fused)
        return
    plan = sum_plan(ctx)
    if plan is not None:
        # The fused call stands where the chain's first statement stood and evaluates its operands before the
        # dropout: an operand that is an expression (a call) would run at another point than it did.
        if not all(re.fullmatch(r"[A-Za-z_][\w.]*", text) for text in (x, residual)):
            ctx.decline("an operand of the residual sum is not a plain name here; fuse it by hand")
        helper = ensure_helper(ctx, "fused_dropout_add_layer_norm_residual", "dropout-add-layernorm-residual",
                               _DROPOUT_ADD_LAYER_NORM_RESIDUAL)
        out, sums, spans, rest = plan
        extra = "".join(f"\n{alias} = {sums[0]}" for alias in sums[1:]) + ("" if rest is None else f"\n{rest}")
        args = [x, residual, norm, p, training]
        call = f"{helper}({', '.join(args)})"
        if len(ctx.line_indent(spans[0])) + len(out) + len(sums[0]) + len(call) + 5 > 100:
            call = f"{helper}(\n" + "".join(f"    {a},\n" for a in args) + ")"  # one argument per line, as ruff does
        ctx.replace_statements(spans, f"{out}, {sums[0]} = {call}{extra}")
        return
    if _calls_reordered(ctx, x, residual):
        ctx.decline("the residual is computed before the dropout's input in the same expression; bind it first")
    helper = ensure_helper(
        ctx,
        "fused_dropout_add_layer_norm",
        "dropout-add-layernorm",
        _DROPOUT_ADD_LAYER_NORM,
    )
    rewrite_chain(ctx, f"{helper}({x}, {residual}, {norm}, {p}, {training})")


def _calls_reordered(ctx: SynthContext, x: str, residual: str) -> bool:
    """Whether the fused call, which evaluates `x` before `residual`, would run two calls in another order than
    the code does: both operands call something and the residual is written first in the norm's statement
    (`norm(attn(h) + dropout(ff(h)))`, where the dropout's RNG draw would move after the attention's)."""
    if "(" not in x or "(" not in residual:
        return False
    stmt = ctx.statement_text(ctx.finding.match.ops[-1].stmt_span)
    first_x, first_r = stmt.find(x), stmt.find(residual)
    return first_r < 0 or first_x < 0 or first_r < first_x


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
    if dim is None or dim == Expr("-1"):
        rewrite_chain(ctx, f"{functional(ctx)}.layer_norm({x}, {x}.shape[-1:], eps={eps})")
        return
    if dim != Expr("1"):
        ctx.decline("the statistics are over an axis that is neither the last nor the channel axis")
    # Over the channel axis (a channels-first LayerNorm2d): that axis moved last, normalised, moved back.
    rewrite_chain(ctx, f"{functional(ctx)}.layer_norm({x}.movedim(1, -1), {x}.shape[1:2], eps={eps}).movedim(-1, 1)")


@strategy("rms_norm_formula")
def rms_norm_formula(ctx: SynthContext) -> None:
    """`x * rsqrt(mean(x**2, -1) + eps)` → `F.rms_norm` without weight (`$x`, `$xf`, `$eps`)."""
    x = value_text(ctx, "x")
    xf = value_text(ctx, "xf") if ctx.binding("xf") is not None else x
    eps = _eps_text(ctx)
    if not is_simple(x):
        ctx.decline(f"the normalised value `{x}` is an expression; bind it to a name first")
    if ctx.binding("sc") != ctx.binding("s") and ctx.binding("xf") not in (None, ctx.binding("x")):
        # `x / sqrt(mean(x.float()**2) + eps).to(x.dtype)` is of x's dtype; `F.rms_norm(x.float(), ...)` is float32
        ctx.decline("the RMS of an up-cast `x` is cast back before it divides `x`; rewrite it by hand as "
                    "`F.rms_norm(x.float(), ...).to(x.dtype)`")
    normed = f"{functional(ctx)}.rms_norm({xf}, {x}.shape[-1:], eps={eps})"
    dim = ctx.binding("dim")
    if dim is not None and dim != Expr("-1"):
        axis = _int_axis(ctx, dim)
        # Over another single axis: that axis moved last, normalised, moved back (a no-op move for -1).
        normed = f"{functional(ctx)}.rms_norm({xf}.movedim({axis}, -1), ({x}.shape[{axis}],), eps={eps}).movedim(-1, {axis})"
    if ctx.binding("w") is None and ctx.binding("rc") == ctx.binding("rw"):
        rewrite_chain(ctx, normed)
        return
    rewrite_chain(ctx, _weighted_rms(ctx, x, normed))


def _int_axis(ctx: SynthContext, dim: object) -> str:
    """The source text of the mean's axis when it is one int: a literal, or `self.<name>` that `__init__` binds
    once from a parameter annotated `int` (litgpt's `RMSNorm(size, dim: int = -1)`); declines otherwise (a
    tuple of axes has no single place to move)."""
    text = dim.text if isinstance(dim, Expr) else dim if isinstance(dim, str) else None
    if text is not None and re.fullmatch(r"-?\d+", text):
        return text
    if text is not None and (m := re.fullmatch(r"self\.([A-Za-z_]\w*)", text)) and _int_parameter(ctx, m.group(1)):
        return text
    ctx.decline(f"the mean is over `{text}`, which is not known to be one axis; rewrite it by hand")


def _int_parameter(ctx: SynthContext, attr: str) -> bool:
    """Whether the class holding the finding binds `self.<attr>` once, in `__init__`, to a parameter annotated `int`."""
    line = ctx.finding.span.start_line + 1
    try:
        tree = ctx.text_index.module([ctx.finding.span.start_line])
    except SyntaxError:
        return False
    cls = next((c for c in ast.walk(tree) if isinstance(c, ast.ClassDef)
                and c.lineno <= line <= (c.end_lineno or c.lineno)), None)
    if cls is None:
        return False
    stores = [n for n in ast.walk(cls) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)
              and isinstance(n.value, ast.Name) and n.value.id == "self" and n.attr == attr]
    init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
    if init is None or len(stores) != 1:
        return False
    assign = next((a for a in init.body if isinstance(a, ast.Assign) and stores[0] in a.targets), None)
    if assign is None or not isinstance(assign.value, ast.Name):
        return False
    params = [*init.args.posonlyargs, *init.args.args, *init.args.kwonlyargs]
    param = next((a for a in params if a.arg == assign.value.id), None)
    return param is not None and isinstance(param.annotation, ast.Name) and param.annotation.id == "int"


def _eps_text(ctx: SynthContext) -> str:
    """`$eps` as the source spells it in `$v + $eps`: inside an inlined helper (k-diffusion's
    `rms_norm(x, scale, eps)`) the analysis substitutes the caller's argument, which is not in scope there."""
    add = op_producing(ctx, "e")
    eps = ctx.binding("eps")
    if add is not None and isinstance(eps, (Ref, Expr)):
        written = ctx.argument_text(add, eps)
        if written is not None:
            return written
    return value_text(ctx, "eps")


def _weighted_rms(ctx: SynthContext, x: str, normed: str) -> str:
    """`x * (w * rsqrt(...))[.to(x.dtype)]` (k-diffusion) → `(F.rms_norm(x, ...) * w)[.to(x.dtype)]`.

    The weight multiplies the normalised value instead of the inverse RMS: the same product up to
    rounding (one rounding fewer in a low-precision `x`: the original rounds `w * rsqrt(...)` to
    `x.dtype` first). `w` keeps its place as an operand, so any shape that broadcasts (a per-sample
    adaptive scale) stays valid; it is not passed as `F.rms_norm`'s `weight`, which must have the
    normalised shape. The result's dtype is the original's: with the cast it is `x.dtype`; without
    it `x` itself is normalised (no up-cast), so both promote `x` with `w`.
    """
    if ctx.binding("w") is None:
        ctx.decline("a cast is applied to the inverse RMS before it scales `x`; rewrite it by hand")
    w = value_text(ctx, "w")
    product = f"{normed} * {w if _postfix(w) else f'({w})'}"
    if ctx.binding("rc") == ctx.binding("rw"):
        if ctx.binding("xf") not in (None, ctx.binding("x")):
            ctx.decline("the weight scales the inverse RMS of an up-cast `x` and the product is not cast "
                        "back, so the result's dtype is the promotion of both; rewrite it by hand as "
                        "`F.rms_norm(x, ...) * w`")
        return product
    cast = op_producing(ctx, "rc")
    parts = [] if cast is None else _cast_arguments(ctx, cast)
    if parts != [f"{x}.dtype"]:
        ctx.decline("the weighted inverse RMS is cast to something other than `x.dtype` before it scales "
                    "`x`; rewrite it by hand as `F.rms_norm(x, ...) * w`")
    return f"({product}).to({x}.dtype)"


def _postfix(text: str) -> bool:
    """Whether `text` is a name, attribute, call or subscript (an operand of `*` needing no parentheses)."""
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return False
    return isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript))


def _cast_arguments(ctx: SynthContext, op: Op) -> list[str]:
    """The source text of the arguments of a `.to(...)` call, when `op` is one (else no argument)."""
    try:
        node = ast.parse(f"({ctx.text(op.span)})", mode="eval").body
    except SyntaxError:
        return []
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "to"
            and not node.keywords):
        return []
    return [ast.unparse(a) for a in node.args]
