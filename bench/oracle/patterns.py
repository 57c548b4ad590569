"""Each rule family's op pattern, written as the PyTorch code that computes it and compiled into torch's
own pattern expressions (`torch._inductor.pattern_matcher.gen_pattern`), so a traced graph is matched by
inductor's matcher, not by a matcher written here.

The search functions are traced with the same capture as the models (`trace_forward`: `make_fx` with no
decomposition table, then inductor's `remove_noop_ops`), so a pattern and a model spell an op alike:
`nn.Linear` is `t` + `addmm` (with `view`s around it for 3-D input), `softmax(-1)` is `_softmax`,
`nn.LayerNorm` is `native_layer_norm`, `nn.GELU` is `gelu`, a training-mode dropout is `native_dropout`.
A fused library op (`native_layer_norm`, `gelu`, the math path of `scaled_dot_product_attention`, which
uses `_safe_softmax`) therefore never matches a hand-written formula's pattern. Integer and float
arguments (sizes, dims, constants) are wildcards, as in inductor; where a constant decides the family
(the 1.702 of the sigmoid GELU, the last dimension of a softmax) a check reads the matched node.

Attention (family 10) is inductor's own reference: every scaled-dot-product pattern of
`torch/_inductor/fx_passes/fuse_attention.py` (its float training variants, whose dropout is a real
dropout like the models' in training mode), plus the einsum and 3-D `bmm` spellings that file does not
cover.
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx

aten = torch.ops.aten


def trace_forward(fn: Callable[..., Any], args: Sequence[Any], **_: Any) -> torch.fx.GraphModule:
    """The capture every pattern goes through (models go through the same ops in `trace.py`)."""
    from torch._inductor.fx_passes.post_grad import remove_noop_ops

    gm = make_fx(fn, None, tracing_mode="real")(*args)
    normalise(gm.graph)
    remove_noop_ops(gm.graph)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return gm


_COPIES = (aten.clone.default, aten.alias.default)
_VIEWS = (aten._unsafe_view.default, aten.reshape.default)


def normalise(graph: torch.fx.Graph) -> None:
    """Forget memory layout: a `clone` (what `matmul`'s decomposition or `.contiguous()` adds for a
    non-contiguous operand) is its input, an `_unsafe_view` is a `view`. Inductor writes layout variants
    of each attention pattern for this; normalising both sides makes one pattern cover every layout."""
    for n in list(graph.nodes):
        if n.op != "call_function":
            continue
        if n.target in _COPIES and n.args and isinstance(n.args[0], torch.fx.Node):
            n.replace_all_uses_with(n.args[0])
            graph.erase_node(n)
        elif n.target in _VIEWS:
            n.target = aten.view.default


@dataclass(frozen=True, slots=True)
class FamilyPattern:
    family: int
    name: str
    pattern: Any  # torch._inductor.pattern_matcher.PatternExpr
    check: Callable[[Any], bool] | None = None  # reads the Match when a constant decides the family


def _t(*shape: int) -> torch.Tensor:
    return torch.randn(*shape)


X3 = functools.partial(_t, 2, 8, 16)
X2 = functools.partial(_t, 4, 16)
W = functools.partial(_t, 16, 16)
B = functools.partial(_t, 16)


# --- family 4: softmax over the last dimension --------------------------------------------------------
def _softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, -1)


def _softmax_last(match: Any) -> bool:
    node = match.output_node()
    dim = node.args[1]
    ndim = node.args[0].meta["val"].dim() if "val" in node.args[0].meta else None
    return bool(dim == -1 or (ndim is not None and dim == ndim - 1))


# --- family 5: dropout -> residual add -> LayerNorm -------------------------------------------------
def _dal(x: torch.Tensor, r: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(F.dropout(x, 0.1, True) + r, (16,), w, b, 1e-5)


def _dal_r(x: torch.Tensor, r: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(r + F.dropout(x, 0.1, True), (16,), w, b, 1e-5)


# --- family 6: Linear -> GELU -----------------------------------------------------------------------
def _lin_gelu(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.gelu(F.linear(x, w, b))


def _lin_gelu_tanh(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.gelu(F.linear(x, w, b), approximate="tanh")


def _lin_nb_gelu(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return F.gelu(F.linear(x, w))


def _lin_nb_gelu_tanh(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return F.gelu(F.linear(x, w), approximate="tanh")


def _lin_gelu_new(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    h = F.linear(x, w, b)  # transformers' NewGELUActivation / gelu_new after a Linear
    return 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0))))


def _lin_gelu_fast(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    h = F.linear(x, w, b)  # FastGELUActivation
    return 0.5 * h * (1.0 + torch.tanh(h * 0.7978845608 * (1.0 + 0.044715 * h * h)))


def _lin_gelu_erf(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    h = F.linear(x, w, b)  # the erf formula written out
    return h * 0.5 * (1.0 + torch.erf(h / math.sqrt(2.0)))


def _lin_gelu_quick(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    h = F.linear(x, w, b)  # QuickGELU (CLIP)
    return h * torch.sigmoid(1.702 * h)


# --- family 7: Conv2d -> BatchNorm2d; family 8: Linear -> BatchNorm1d --------------------------------
def _conv_bn(x: torch.Tensor, w: torch.Tensor, cb: torch.Tensor, rm: torch.Tensor, rv: torch.Tensor,
             g: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.batch_norm(F.conv2d(x, w, cb), rm, rv, g, b, True, 0.1, 1e-5)


def _conv_nb_bn(x: torch.Tensor, w: torch.Tensor, rm: torch.Tensor, rv: torch.Tensor, g: torch.Tensor,
                b: torch.Tensor) -> torch.Tensor:
    return F.batch_norm(F.conv2d(x, w), rm, rv, g, b, True, 0.1, 1e-5)


def _is_conv2d(match: Any) -> bool:
    conv = next((n for n in match.nodes if n.target == aten.convolution.default), None)
    return conv is not None and "val" in conv.args[1].meta and conv.args[1].meta["val"].dim() == 4


def _lin_bn(x: torch.Tensor, w: torch.Tensor, lb: torch.Tensor, rm: torch.Tensor, rv: torch.Tensor,
            g: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.batch_norm(F.linear(x, w, lb), rm, rv, g, b, True, 0.1, 1e-5)


def _lin_nb_bn(x: torch.Tensor, w: torch.Tensor, rm: torch.Tensor, rv: torch.Tensor, g: torch.Tensor,
               b: torch.Tensor) -> torch.Tensor:
    return F.batch_norm(F.linear(x, w), rm, rv, g, b, True, 0.1, 1e-5)


# --- family 9: a projection split into heads (three of them on one input make a site) ---------------
def _proj_heads_t(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.linear(x, w, b).view(2, 8, 4, 4).transpose(1, 2)


def _proj_heads_p(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.linear(x, w, b).view(2, 8, 4, 4).permute(0, 2, 1, 3)


def _proj_nb_heads_t(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return F.linear(x, w).view(2, 8, 4, 4).transpose(1, 2)


def _proj_nb_heads_p(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return F.linear(x, w).view(2, 8, 4, 4).permute(0, 2, 1, 3)


# --- family 10 beyond inductor's file: einsum and 3-D bmm attention ---------------------------------
def _einsum_attn(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    a = (torch.einsum("bhid,bhjd->bhij", q, k) * 0.25).softmax(dim=-1)
    return torch.einsum("bhij,bhjd->bhid", a, v)


def _einsum_attn_drop(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    a = F.dropout((torch.einsum("bhid,bhjd->bhij", q, k) * 0.25).softmax(dim=-1), 0.1, True)
    return torch.einsum("bhij,bhjd->bhid", a, v)


def _bmm_attn(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.bmm(torch.softmax(torch.bmm(q, k.transpose(1, 2)) * 0.25, dim=-1), v)


def _bmm_attn_drop(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.bmm(F.dropout(torch.softmax(torch.bmm(q, k.transpose(1, 2)) * 0.25, dim=-1), 0.1, True), v)


def _mm_attn_div(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.matmul(torch.softmax(torch.matmul(q, k.transpose(-2, -1)) / 4.0, dim=-1), v)


def _mm_attn_mul(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.matmul(torch.softmax(torch.matmul(q, k.transpose(-2, -1)) * 0.25, dim=-1), v)


def _mm_attn_mask(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    return torch.matmul(torch.softmax(torch.matmul(q, k.transpose(-2, -1)) * 0.25 + m, dim=-1), v)


def _mm_attn_div_mask(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    return torch.matmul(torch.softmax(torch.matmul(q, k.transpose(-2, -1)) / 4.0 + m, dim=-1), v)


def _mm_attn_prescaled(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.matmul(torch.softmax(torch.matmul(q * 0.25, k.transpose(-2, -1)), dim=-1), v)


def _mm_attn_mask_drop(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    a = F.dropout(torch.softmax(torch.matmul(q, k.transpose(-2, -1)) * 0.25 + m, dim=-1), 0.1, True)
    return torch.matmul(a, v)


def _mm_attn_div_mask_drop(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    a = F.dropout(torch.softmax(torch.matmul(q, k.transpose(-2, -1)) / 4.0 + m, dim=-1), 0.1, True)
    return torch.matmul(a, v)


# --- family 11: LayerNorm written out ----------------------------------------------------------------
def _ln_pow(x: torch.Tensor) -> torch.Tensor:
    u = x.mean(-1, keepdim=True)
    s = (x - u).pow(2).mean(-1, keepdim=True)
    return (x - u) / torch.sqrt(s + 1e-5)


def _ln_pow_shared(x: torch.Tensor) -> torch.Tensor:
    d = x - x.mean(-1, keepdim=True)
    return d / torch.sqrt(d.pow(2).mean(-1, keepdim=True) + 1e-5)


def _ln_var(x: torch.Tensor) -> torch.Tensor:
    return (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True, unbiased=False) + 1e-5)


def _ln_var_rsqrt(x: torch.Tensor) -> torch.Tensor:
    return (x - x.mean(-1, keepdim=True)) * torch.rsqrt(x.var(-1, keepdim=True, unbiased=False) + 1e-5)


def _ln_var_sqrt_after(x: torch.Tensor) -> torch.Tensor:
    return (x - x.mean(-1, keepdim=True)) / (x.var(-1, keepdim=True, unbiased=False) + 1e-5).sqrt()


def _ln_var_mean(x: torch.Tensor) -> torch.Tensor:
    var, mean = torch.var_mean(x, dim=-1, unbiased=False, keepdim=True)
    return (x - mean) * (var + 1e-5).rsqrt()


def _ln_std(x: torch.Tensor) -> torch.Tensor:
    return (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + 1e-5)


# --- family 12: RMSNorm written out ------------------------------------------------------------------
def _rms_rsqrt(x: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


def _rms_sqrt(x: torch.Tensor) -> torch.Tensor:
    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


def _rms_sq_rsqrt(x: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6)


def _rms_norm(x: torch.Tensor) -> torch.Tensor:
    return F.normalize(x, dim=-1) * 4.0


def _rms_float(x: torch.Tensor) -> torch.Tensor:
    h = x.float()
    return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)


# --- family 13: GELU written out (erf, tanh, sigmoid forms) ---------------------------------------------
def _gelu_erf_div(x: torch.Tensor) -> torch.Tensor:
    return 1.0 + torch.erf(x / math.sqrt(2.0))


def _gelu_erf_mul(x: torch.Tensor) -> torch.Tensor:
    return 1.0 + torch.erf(x * (1.0 / math.sqrt(2.0)))


def _gelu_tanh_pow(x: torch.Tensor) -> torch.Tensor:
    return 1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0)))


def _gelu_tanh_cube(x: torch.Tensor) -> torch.Tensor:
    return 1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x))


def _gelu_tanh_factored(x: torch.Tensor) -> torch.Tensor:
    return 1.0 + torch.tanh(x * 0.7978845608 * (1.0 + 0.044715 * x * x))


def _gelu_sigmoid(x: torch.Tensor) -> torch.Tensor:
    return x * torch.sigmoid(1.702 * x)


def _gelu_sigmoid_r(x: torch.Tensor) -> torch.Tensor:
    return torch.sigmoid(1.702 * x) * x


def _sigmoid_1702(match: Any) -> bool:
    return any(n.target == aten.mul.Tensor and any(isinstance(a, float) and abs(a - 1.702) < 1e-3 for a in n.args)
               for n in match.nodes)


# --- family 14: gated MLP (SwiGLU and its GELU sibling) -------------------------------------------------
def _glu(act: Callable[[torch.Tensor], torch.Tensor], swap: bool, bias: bool) -> Callable[..., torch.Tensor]:
    def fn(x: torch.Tensor, wg: torch.Tensor, wu: torch.Tensor) -> torch.Tensor:
        g = act(F.linear(x, wg, torch.zeros(16) if bias else None))
        u = F.linear(x, wu)
        return u * g if swap else g * u
    return fn


def _glu_chunk(act: Callable[[torch.Tensor], torch.Tensor], swap: bool) -> Callable[..., torch.Tensor]:
    def fn(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        a, b = F.linear(x, w).chunk(2, dim=-1)
        return b * act(a) if swap else act(a) * b
    return fn


# --- family 15: rotary embedding -----------------------------------------------------------------------
def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def _rope_slice(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    return x * cos + _rotate_half(x) * sin


def _rope_chunk(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


def _rope_interleaved(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    x1, x2 = x[..., ::2], x[..., 1::2]
    return x * cos + torch.stack((-x2, x1), dim=-1).flatten(-2) * sin


def _rope_complex(x: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(xc * f).flatten(3)


# --- family 16: lm_head projection -> cross-entropy --------------------------------------------------
def _lm_ce(x: torch.Tensor, w: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    logits = F.linear(x, w)
    return F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))


def _lm_ce_float(x: torch.Tensor, w: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    logits = F.linear(x, w).float()
    return F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))


NOT_IN_A_FORWARD_TRACE = {
    17: "optimizers are built in the training script, outside any nn.Module's forward: a forward/backward "
        "trace never sees `torch.optim.AdamW(...)` (the step runs after backward, from user code)",
}
NOT_VISIBLE_WITHOUT_LABELS = {
    16: "the loss branch of a forward runs only when labels are passed; construction passes none (a label "
        "tensor's meaning cannot be inferred), so family 16 is seen only where a forward always computes it",
}


def _specs() -> list[tuple[int, str, Callable[..., Any], list[Any], dict[str, float], Callable[[Any], bool] | None]]:
    x4 = functools.partial(_t, 2, 4, 8, 16)
    specs: list[tuple[int, str, Callable[..., Any], list[Any], dict[str, float], Callable[[Any], bool] | None]] = [
        (4, "softmax", _softmax, [X3()], {}, _softmax_last),
        (5, "dropout_add_layernorm", _dal, [X3(), X3(), B(), B()], {}, None),
        (5, "dropout_add_layernorm_r", _dal_r, [X3(), X3(), B(), B()], {}, None),
        (7, "conv_bn", _conv_bn, [_t(2, 16, 8, 8), _t(16, 16, 3, 3), B(), B(), B(), B(), B()], {}, _is_conv2d),
        (7, "conv_nobias_bn", _conv_nb_bn, [_t(2, 16, 8, 8), _t(16, 16, 3, 3), B(), B(), B(), B()], {}, _is_conv2d),
        (8, "linear_bn1d", _lin_bn, [X2(), W(), B(), B(), B(), B(), B()], {}, None),
        (8, "linear_nobias_bn1d", _lin_nb_bn, [X2(), W(), B(), B(), B(), B()], {}, None),
        (10, "einsum", _einsum_attn, [x4(), x4(), x4()], {}, None),
        (10, "einsum_dropout", _einsum_attn_drop, [x4(), x4(), x4()], {}, None),
        (10, "bmm3d", _bmm_attn, [X3(), X3(), X3()], {}, None),
        (10, "bmm3d_dropout", _bmm_attn_drop, [X3(), X3(), X3()], {}, None),
        (10, "matmul_div", _mm_attn_div, [x4(), x4(), x4()], {}, None),
        (10, "matmul_mul", _mm_attn_mul, [x4(), x4(), x4()], {}, None),
        (10, "matmul_prescaled", _mm_attn_prescaled, [x4(), x4(), x4()], {}, None),
        (10, "matmul_mask", _mm_attn_mask, [x4(), x4(), x4(), _t(2, 1, 1, 8)], {}, None),
        (10, "matmul_div_mask", _mm_attn_div_mask, [x4(), x4(), x4(), _t(2, 1, 1, 8)], {}, None),
        (10, "matmul_mask_dropout", _mm_attn_mask_drop, [x4(), x4(), x4(), _t(2, 1, 1, 8)], {}, None),
        (10, "matmul_div_mask_dropout", _mm_attn_div_mask_drop, [x4(), x4(), x4(), _t(2, 1, 1, 8)], {}, None),
        (11, "ln_pow", _ln_pow, [X3()], {}, None),
        (11, "ln_pow_shared", _ln_pow_shared, [X3()], {}, None),
        (11, "ln_var", _ln_var, [X3()], {}, None),
        (11, "ln_var_rsqrt", _ln_var_rsqrt, [X3()], {}, None),
        (11, "ln_var_sqrt_after", _ln_var_sqrt_after, [X3()], {}, None),
        (11, "ln_var_mean", _ln_var_mean, [X3()], {}, None),
        (11, "ln_std", _ln_std, [X3()], {}, None),
        (12, "rms_rsqrt", _rms_rsqrt, [X3()], {}, None),
        (12, "rms_sqrt", _rms_sqrt, [X3()], {}, None),
        (12, "rms_square_rsqrt", _rms_sq_rsqrt, [X3()], {}, None),
        (12, "rms_normalize", _rms_norm, [X3()], {}, None),
        (12, "rms_float", _rms_float, [X3()], {}, None),
        (13, "gelu_erf_div", _gelu_erf_div, [X3()], {}, None),
        (13, "gelu_erf_mul", _gelu_erf_mul, [X3()], {}, None),
        (13, "gelu_tanh_pow", _gelu_tanh_pow, [X3()], {}, None),
        (13, "gelu_tanh_cube", _gelu_tanh_cube, [X3()], {}, None),
        (13, "gelu_tanh_factored", _gelu_tanh_factored, [X3()], {}, None),
        (13, "gelu_sigmoid", _gelu_sigmoid, [X3()], {}, _sigmoid_1702),
        (13, "gelu_sigmoid_r", _gelu_sigmoid_r, [X3()], {}, _sigmoid_1702),
        (15, "rope_slice", _rope_slice, [x4(), x4(), x4()], {}, None),
        (15, "rope_chunk", _rope_chunk, [x4(), x4(), x4()], {}, None),
        (15, "rope_interleaved", _rope_interleaved, [x4(), x4(), x4()], {}, None),
        (15, "rope_complex", _rope_complex, [x4(), torch.randn(8, 8, dtype=torch.complex64)], {}, None),
        (16, "lm_head_ce", _lm_ce, [X3(), W(), torch.randint(0, 16, (2, 8))], {}, None),
        (16, "lm_head_ce_float", _lm_ce_float, [X3(), W(), torch.randint(0, 16, (2, 8))], {}, None),
    ]
    for rank, x in (("3d", X3), ("2d", X2)):
        specs += [
            (6, f"linear_gelu_{rank}", _lin_gelu, [x(), W(), B()], {}, None),
            (6, f"linear_gelu_tanh_{rank}", _lin_gelu_tanh, [x(), W(), B()], {}, None),
            (6, f"linear_nobias_gelu_{rank}", _lin_nb_gelu, [x(), W()], {}, None),
            (6, f"linear_nobias_gelu_tanh_{rank}", _lin_nb_gelu_tanh, [x(), W()], {}, None),
            (6, f"linear_gelu_new_{rank}", _lin_gelu_new, [x(), W(), B()], {}, None),
            (6, f"linear_gelu_fast_{rank}", _lin_gelu_fast, [x(), W(), B()], {}, None),
            (6, f"linear_gelu_erf_formula_{rank}", _lin_gelu_erf, [x(), W(), B()], {}, None),
            (6, f"linear_quick_gelu_{rank}", _lin_gelu_quick, [x(), W(), B()], {}, _sigmoid_1702),
        ]
    specs += [
        (9, "proj_heads_transpose", _proj_heads_t, [X3(), W(), B()], {}, None),
        (9, "proj_heads_permute", _proj_heads_p, [X3(), W(), B()], {}, None),
        (9, "proj_nobias_heads_transpose", _proj_nb_heads_t, [X3(), W()], {}, None),
        (9, "proj_nobias_heads_permute", _proj_nb_heads_p, [X3(), W()], {}, None),
    ]
    for act_name, act in (("silu", F.silu), ("gelu", F.gelu)):
        for swap in (False, True):
            for bias in (False, True):
                specs.append((14, f"glu_{act_name}{'_swap' if swap else ''}{'_bias' if bias else ''}",
                              _glu(act, swap, bias), [X3(), _t(16, 16), _t(16, 16)], {}, None))
            specs.append((14, f"glu_chunk_{act_name}{'_swap' if swap else ''}", _glu_chunk(act, swap),
                          [X3(), _t(32, 16)], {}, None))
    return specs


def _inductor_attention() -> list[tuple[str, Callable[..., Any], list[Any], dict[str, float]]]:
    """fuse_attention.py's float patterns, each search function once (its training variant: dropout real)."""
    from torch._inductor.fx_passes.fuse_attention import _get_sfdp_patterns

    seen: dict[str, tuple[str, Callable[..., Any], list[Any], dict[str, float]]] = {}
    for name, kw in _get_sfdp_patterns(torch.device("cpu")):
        if "_half" in name or "_bs1" in name:
            continue
        fn = kw["search_fn"]
        base = name.removesuffix("_training").removesuffix("_inference")
        if base in seen and name.endswith("_inference"):
            continue
        seen[base] = (base, fn, list(kw["example_inputs"]), dict(kw.get("scalar_workaround") or {}))
    return list(seen.values())


@functools.cache
def family_patterns() -> tuple[FamilyPattern, ...]:
    """Every family's patterns, compiled once per process (about 100 traces of tiny functions)."""
    from torch._inductor.pattern_matcher import gen_pattern

    out: list[FamilyPattern] = []
    torch.manual_seed(0)
    for family, name, fn, args, workaround, check in _specs():
        try:
            out.append(FamilyPattern(family, name, gen_pattern(fn, args, trace_forward, workaround), check))
        except Exception as exc:  # a broken spec is a bug here: say which, and go on with the others
            print(f"oracle: pattern {name} of family {family} does not trace: {type(exc).__name__}: {exc}",
                  file=sys.stderr)
    for name, fn, args, workaround in _inductor_attention():
        try:
            pattern = gen_pattern(fn, args, trace_forward, workaround)
        except Exception:  # a pattern whose example inputs need a device or dtype this torch lacks
            continue
        out.append(FamilyPattern(10, f"inductor{name}", pattern, None))
    return tuple(out)
