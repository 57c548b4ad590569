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
_IN_PLACE = {aten.add_.Tensor: aten.add.Tensor, aten.sub_.Tensor: aten.sub.Tensor, aten.mul_.Tensor: aten.mul.Tensor,
             aten.div_.Tensor: aten.div.Tensor, aten.masked_fill_.Scalar: aten.masked_fill.Scalar}


def normalise(graph: torch.fx.Graph) -> None:
    """Forget memory layout: a `clone` (what `matmul`'s decomposition or `.contiguous()` adds for a
    non-contiguous operand) is its input, an `_unsafe_view` is a `view`, a `clamp_min` a `clamp`. Inductor writes layout variants
    of each attention pattern for this; normalising both sides makes one pattern cover every layout.
    An in-place arithmetic op whose input nothing else reads (`sim += bias`, `q *= scale`) is its
    out-of-place op: the graph computes the same values either way."""
    for n in list(graph.nodes):
        if n.op != "call_function":
            continue
        if n.target in _COPIES and n.args and isinstance(n.args[0], torch.fx.Node):
            n.replace_all_uses_with(n.args[0])
            graph.erase_node(n)
        elif n.target in _VIEWS:
            n.target = aten.view.default
        elif n.target is aten.clamp_min.default:  # `clamp_min(x, m)` is `clamp(x, m)`: same arguments
            n.target = aten.clamp.default
        elif n.target in _IN_PLACE and n.args and isinstance(n.args[0], torch.fx.Node) and len(n.args[0].users) == 1:
            n.target = _IN_PLACE[n.target]  # `q *= s`, `sim += bias`: the tensor is read only through this op


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
X4 = functools.partial(_t, 2, 16, 4, 4)  # feature maps, channels first (moved to channels-last by the pattern)
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


def _channels_last(x: torch.Tensor) -> torch.Tensor:
    return x.permute(0, 2, 3, 1)


def _transposed(x: torch.Tensor) -> torch.Tensor:
    return x.transpose(1, 2)


def _moved(fn: Callable[..., torch.Tensor], move: Callable[[torch.Tensor], torch.Tensor] | None,
           ) -> Callable[..., torch.Tensor]:
    """`fn` applied to its first input after `move` (a permute or transpose), or `fn` itself."""
    if move is None:
        return fn

    @functools.wraps(fn)  # the pattern matcher names the inputs after `fn`'s parameters
    def moved(x: torch.Tensor, *rest: torch.Tensor) -> torch.Tensor:
        return fn(move(x), *rest)
    return moved


def _lin_mm_gelu(move: Callable[[torch.Tensor], torch.Tensor], tanh: bool, bias: bool) -> Callable[..., torch.Tensor]:
    def fn(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        m = move(x)
        h = torch.mm(m.reshape(-1, m.shape[-1]), w.t()).view(*m.shape[:-1], w.shape[0])
        return F.gelu(h + b if bias else h, approximate="tanh" if tanh else "none")
    return fn


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


def _lin_flat_bn(bias: bool) -> Callable[..., torch.Tensor]:
    """A Linear on (B, T, C) tokens, then BatchNorm1d over the tokens flattened (LeViT's `LinearNorm`)."""
    def fn(x: torch.Tensor, w: torch.Tensor, lb: torch.Tensor, rm: torch.Tensor, rv: torch.Tensor,
           g: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return F.batch_norm(F.linear(x, w, lb if bias else None).flatten(0, 1), rm, rv, g, b, True, 0.1, 1e-5)
    return fn


# --- family 9: a projection split into heads (three of them on one input make a site) ---------------
BARE_PROJECTION = "proj_bare"  # the name's start of a projection with no head split after it (pass 10)


def _proj_heads_t(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.linear(x, w, b).view(2, 8, 4, 4).transpose(1, 2)


def _proj_heads_p(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.linear(x, w, b).view(2, 8, 4, 4).permute(0, 2, 1, 3)


def _proj_nb_heads_t(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return F.linear(x, w).view(2, 8, 4, 4).transpose(1, 2)


def _proj_nb_heads_p(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return F.linear(x, w).view(2, 8, 4, 4).permute(0, 2, 1, 3)


def _proj_bare(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """A projection alone (`match.py` groups three of one input and asks `qkv.attends` what they feed)."""
    return F.linear(x, w, b)


def _proj_nb_bare(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return F.linear(x, w)


def _proj_scaled_heads(bias: bool, permute: bool) -> Callable[..., torch.Tensor]:
    """A query projection scaled before its head split (`self.q_proj(h) * self.scaling`, BART-style)."""
    def fn(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        h = (F.linear(x, w, b if bias else None) * 0.25).view(2, 8, 4, 4)
        return h.permute(0, 2, 1, 3) if permute else h.transpose(1, 2)
    return fn


# --- family 10 beyond inductor's file: einsum, matmul and 3-D bmm attention, composed ----------------
# Attention is scores = q·kᵀ (einsum, matmul or bmm), a scale (on q before the product, or on the scores),
# an additive term (a positional bias or an additive mask) and/or a `masked_fill` mask, softmax over the
# last axis, an optional dropout, then the product with v. inductor's file spells the matmul layouts with
# a few of these steps; model code composes them freely, so every composition of the steps is generated
# below, each traced into a pattern of its own (the steps are the same ops as in inductor's patterns).
_PRODUCTS: dict[str, tuple[Callable[..., Any], Callable[..., Any], int]] = {
    "einsum": (lambda q, k: torch.einsum("bhid,bhjd->bhij", q, k),
               lambda a, v: torch.einsum("bhij,bhjd->bhid", a, v), 4),
    "einsum3d": (lambda q, k: torch.einsum("bid,bjd->bij", q, k),
                 lambda a, v: torch.einsum("bij,bjd->bid", a, v), 3),
    "matmul": (lambda q, k: torch.matmul(q, k.transpose(-2, -1)), torch.matmul, 4),
    "bmm3d": (lambda q, k: torch.bmm(q, k.transpose(1, 2)), torch.bmm, 3),
}
_SCALES = ("none", "q", "mul", "div")
_TERMS = ("none", "add", "masked_fill", "add_masked_fill")


def _attention(product: str, scale: str, term: str, dropout: bool, shift: bool = False) -> Callable[..., torch.Tensor]:
    """Attention as models write it. `shift`: the stable-softmax shift `s - s.amax(-1, keepdim=True).detach()`
    before the softmax (PaLM-style code): softmax is shift-invariant, so the ops compute the same attention."""
    scores_of, apply_to, _ = _PRODUCTS[product]

    def fn(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, b: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        s = scores_of(q * 0.25 if scale == "q" else q, k)
        if scale == "mul":
            s = s * 0.25
        elif scale == "div":
            s = s / 4.0
        if term in ("add", "add_masked_fill"):
            s = s + b
        if term in ("masked_fill", "add_masked_fill"):
            s = s.masked_fill(m, -1e9)
        if shift:
            s = s - s.amax(dim=-1, keepdim=True).detach()
        a = s.softmax(dim=-1)
        if dropout:
            a = F.dropout(a, 0.1, True)
        return apply_to(a, v)
    return fn


def _attention_specs() -> list[tuple[str, Callable[..., Any], list[Any]]]:
    out = []
    for product, (_, _, rank) in _PRODUCTS.items():
        shape = (2, 4, 8, 16) if rank == 4 else (8, 8, 16)
        scores = (*shape[:-1], shape[-2])
        for scale in _SCALES:
            for term in _TERMS:
                for dropout, shift in ((False, False), (True, False), (False, True), (True, True)):
                    name = "_".join(x for x in (product, "" if scale == "none" else f"scale_{scale}",
                                                 "" if term == "none" else term, "shift" if shift else "",
                                                 "dropout" if dropout else "") if x)
                    args = [_t(*shape), _t(*shape), _t(*shape), _t(*scores), torch.zeros(scores, dtype=torch.bool)]
                    out.append((name, _attention(product, scale, term, dropout, shift), args))
    return out


def _anywhere_users(pattern: Any) -> Any:
    """The same pattern with no condition on how many users its inner nodes have. Inductor requires one
    (it replaces the matched nodes); the oracle only asks what the ops compute, and attention whose
    probabilities are also returned, or whose scaled `q` also feeds a positional term, is attention."""
    from torch._inductor.pattern_matcher import MULTIPLE, _TargetExpr

    seen: set[int] = set()

    def walk(p: Any, root: bool) -> None:
        if id(p) in seen:
            return
        seen.add(id(p))
        if isinstance(p, _TargetExpr) and not root:
            p.users = MULTIPLE
        for child in [*getattr(p, "args", ()), *getattr(p, "kwargs", {}).values()]:
            for leaf in (child if isinstance(child, (list, tuple)) else (child,)):
                walk(leaf, False)

    walk(pattern, True)
    return pattern


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


def _rms_sq_sqrt(x: torch.Tensor) -> torch.Tensor:
    # the square as a product under a division by the root (autogluon-timeseries' toto RMSNorm): `x * x`
    # traces as mul, not pow, so neither rms_sqrt nor rms_square_rsqrt holds it
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-6)


def _rms_norm(x: torch.Tensor) -> torch.Tensor:
    # x / ||x|| times a gain. With the gain √d·w it is RMSNorm exactly; with a learned scalar g it is ScaleNorm
    # (Nguyen & Salazar 2019), which is RMSNorm with the weight g/√d: ||x|| = √d · rms(x). Either way one
    # `F.rms_norm` computes it (eps placement aside), so every gain counts (the constant is not read).
    return F.normalize(x, dim=-1) * 4.0


def _rms_norm_scaled(x: torch.Tensor) -> torch.Tensor:
    # ||x|| scaled to the root mean square before the division: ||x|| * d**-0.5 = sqrt(mean(x**2))
    return x / (torch.norm(x, dim=-1, keepdim=True) * 0.25).clamp(min=1e-8)


def _rms_norm_unexpanded(x: torch.Tensor) -> torch.Tensor:
    # F.normalize without its expand_as, then the d**0.5 that makes x / ||x|| an RMS normalisation
    return x / torch.norm(x, dim=-1, keepdim=True).clamp(min=1e-8) * 4.0


def _rms_float(x: torch.Tensor) -> torch.Tensor:
    h = x.float()
    return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)


_PASS_THROUGH = (aten.view.default, aten._to_copy.default, aten.t.default, aten.permute.default,
                 aten.transpose.int, aten.flatten.using_ints, aten.expand.default, aten.unsqueeze.default,
                 aten.squeeze.dim, aten.detach.default)


def _of_activations(match: Any) -> bool:
    """RMS normalisation of an activation, not of a weight: `l2norm(self.weight) * sqrt(n)` (weight
    normalisation in magnitude-preserving layers) computes the same ops on a parameter, which no RMSNorm
    layer or kernel replaces. The forward graph's parameters are the placeholders named `params…`."""
    x = match.kwargs.get("x")
    while isinstance(x, torch.fx.Node) and x.op == "call_function" and x.target in _PASS_THROUGH:
        x = x.args[0]
    return not (isinstance(x, torch.fx.Node) and x.op == "placeholder" and x.name.startswith("params"))


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


def _times_its_input(match: Any) -> bool:
    """`1 + erf(x / √2)` is GELU only once multiplied by x: GELU(x) = x · ½(1 + erf(x/√2)). Alone (times ½)
    it is the Gaussian CDF Φ(x) (stochastic gates, probit links), which `F.gelu` does not compute. Follows
    the sum through products by numbers (the ½) to a product with x itself."""
    x = match.kwargs.get("x")
    root = match.output_node()
    frontier, seen = [root], set()
    for _ in range(4):
        nxt = []
        for n in frontier:
            for u in n.users:
                if u in seen or u.target is not aten.mul.Tensor:
                    continue
                seen.add(u)
                other = u.args[1] if u.args[0] is n else u.args[0]
                if other is x:
                    return True
                if isinstance(other, int | float):
                    nxt.append(u)
        frontier = nxt
    # x multiplied first (`x * 0.5 * (1 + erf(...))`): a product of the sum with a product of x and a number
    for u in root.users:
        if u.target is aten.mul.Tensor:
            other = u.args[1] if u.args[0] is root else u.args[0]
            if isinstance(other, torch.fx.Node) and other.target is aten.mul.Tensor and x in other.args:
                return True
    return False


def _sigmoid_1702(match: Any) -> bool:
    return any(n.target == aten.mul.Tensor and any(isinstance(a, float) and abs(a - 1.702) < 1e-3 for a in n.args)
               for n in match.nodes)


# --- family 14: gated MLP (SwiGLU and its GELU sibling) -------------------------------------------------
# Two projections of one input, one through the activation, multiplied; or one projection chunked in two,
# either half through the activation. Each in both operand orders, with and without bias, on 3-D and 2-D
# input (an `nn.Linear` on 3-D input adds the `view`s around its `mm`, so the two ranks trace apart).
def _glu(act: Callable[[torch.Tensor], torch.Tensor], swap: bool, bias: bool) -> Callable[..., torch.Tensor]:
    def fn(x: torch.Tensor, wg: torch.Tensor, wu: torch.Tensor, bg: torch.Tensor, bu: torch.Tensor) -> torch.Tensor:
        g = act(F.linear(x, wg, bg if bias else None))
        u = F.linear(x, wu, bu if bias else None)
        return u * g if swap else g * u
    return fn


def _glu_chunk(act: Callable[[torch.Tensor], torch.Tensor], gate: int, swap: bool,
               bias: bool) -> Callable[..., torch.Tensor]:
    def fn(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        halves = F.linear(x, w, b if bias else None).chunk(2, dim=-1)
        g, u = act(halves[gate]), halves[1 - gate]
        return u * g if swap else g * u
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


def _rope_interleaved_unbind(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """`rotate_every_two`: pairs by a reshape (`rearrange(x, '... (d j) -> ... d j', j=2)`), `unbind`, `stack`."""
    x1, x2 = x.unflatten(-1, (-1, 2)).unbind(-1)
    return x * cos + torch.stack((-x2, x1), dim=-1).flatten(-2) * sin


def _rope_complex(x: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(xc * f).flatten(3)


# --- family 16: lm_head projection -> cross-entropy --------------------------------------------------
def _lm_ce(x: torch.Tensor, w: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    logits = F.linear(x, w)
    return F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))


def _lm_ce_classes_first(x: torch.Tensor, w: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    # the logits moved to (batch, classes, positions) for cross_entropy's class axis 1 (einops'
    # `rearrange(logits, 'b n c -> b c n')`): nll_loss2d over the same log-softmax
    return F.cross_entropy(F.linear(x, w).permute(0, 2, 1), y)


def _lm_ce_float(x: torch.Tensor, w: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    logits = F.linear(x, w).float()
    return F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))


# A head with a bias (`nn.Linear(dim, num_tokens)`, bias on by default) traces as `addmm`, not `mm`: the
# patterns above never match it. Liger's fused linear cross-entropy takes the bias
# (`LigerFusedLinearCrossEntropyLoss.forward(lin_weight, _input, target, bias=None)` adds it to each chunk's
# logits and returns its gradient), so such a head is the same site. Hugging Face's causal-LM loss shifts the
# logits first (`logits[..., :-1, :].contiguous()`): a slice between the head and the view.
def _lm_ce_bias(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    logits = F.linear(x, w, b)
    return F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))


def _lm_ce_bias_classes_first(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(F.linear(x, w, b).permute(0, 2, 1), y)


def _lm_ce_bias_float(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    logits = F.linear(x, w, b).float()
    return F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))


def _lm_ce_shifted(bias: bool) -> Callable[..., torch.Tensor]:
    def shifted(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        logits = F.linear(x, w, b if bias else None)
        shift = logits[..., :-1, :].contiguous()
        return F.cross_entropy(shift.view(-1, shift.size(-1)), y[..., 1:].contiguous().view(-1))
    return shifted


NOT_IN_A_FORWARD_TRACE = {
    17: "optimizers are built in the training script, outside any nn.Module's forward: a forward/backward "
        "trace never sees `torch.optim.AdamW(...)` (the step runs after backward, from user code)",
}
# Patterns no longer in `_specs`, with why. Results traced before a pattern was retired still hold its
# sites; the report leaves them out, so such results score as a fresh trace would.
RETIRED = {
    "linear_quick_gelu": "family 6 is Linear -> GELU, which the f06 rewrite computes (erf or tanh GELU); "
                         "QuickGELU `x * sigmoid(1.702 * x)` after a Linear is another function (up to about "
                         "0.02 apart), so no Linear -> GELU site: family 13 counts it (`gelu_sigmoid`, the "
                         "f13-quick-gelu rule reports it)",
}


def retired(pattern: str) -> bool:
    """Whether a stored site's pattern name (`linear_quick_gelu_3d`) is one `RETIRED` names."""
    return any(pattern == name or pattern.startswith(f"{name}_") for name in RETIRED)


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
        (8, "linear_flatten_bn1d", _lin_flat_bn(True), [X3(), W(), B(), B(), B(), B(), B()], {}, None),
        (8, "linear_nobias_flatten_bn1d", _lin_flat_bn(False), [X3(), W(), B(), B(), B(), B(), B()], {}, None),
        (11, "ln_pow", _ln_pow, [X3()], {}, None),
        (11, "ln_pow_shared", _ln_pow_shared, [X3()], {}, None),
        (11, "ln_var", _ln_var, [X3()], {}, None),
        (11, "ln_var_rsqrt", _ln_var_rsqrt, [X3()], {}, None),
        (11, "ln_var_sqrt_after", _ln_var_sqrt_after, [X3()], {}, None),
        (11, "ln_var_mean", _ln_var_mean, [X3()], {}, None),
        (11, "ln_std", _ln_std, [X3()], {}, None),
        (12, "rms_rsqrt", _rms_rsqrt, [X3()], {}, _of_activations),
        (12, "rms_sqrt", _rms_sqrt, [X3()], {}, _of_activations),
        (12, "rms_square_rsqrt", _rms_sq_rsqrt, [X3()], {}, _of_activations),
        (12, "rms_square_sqrt", _rms_sq_sqrt, [X3()], {}, _of_activations),
        (12, "rms_normalize", _rms_norm, [X3()], {}, _of_activations),
        (12, "rms_float", _rms_float, [X3()], {}, _of_activations),
        (12, "rms_norm_scaled", _rms_norm_scaled, [X3()], {}, _of_activations),
        (12, "rms_norm_unexpanded", _rms_norm_unexpanded, [X3()], {}, _of_activations),
        (13, "gelu_erf_div", _gelu_erf_div, [X3()], {}, _times_its_input),
        (13, "gelu_erf_mul", _gelu_erf_mul, [X3()], {}, _times_its_input),
        (13, "gelu_tanh_pow", _gelu_tanh_pow, [X3()], {}, None),
        (13, "gelu_tanh_cube", _gelu_tanh_cube, [X3()], {}, None),
        (13, "gelu_tanh_factored", _gelu_tanh_factored, [X3()], {}, None),
        (13, "gelu_sigmoid", _gelu_sigmoid, [X3()], {}, _sigmoid_1702),
        (13, "gelu_sigmoid_r", _gelu_sigmoid_r, [X3()], {}, _sigmoid_1702),
        (15, "rope_slice", _rope_slice, [x4(), x4(), x4()], {}, None),
        (15, "rope_chunk", _rope_chunk, [x4(), x4(), x4()], {}, None),
        (15, "rope_interleaved", _rope_interleaved, [x4(), x4(), x4()], {}, None),
        (15, "rope_interleaved_unbind", _rope_interleaved_unbind, [x4(), x4(), x4()], {}, None),
        (15, "rope_complex", _rope_complex, [x4(), torch.randn(8, 8, dtype=torch.complex64)], {}, None),
        (16, "lm_head_ce", _lm_ce, [X3(), W(), torch.randint(0, 16, (2, 8))], {}, None),
        (16, "lm_head_ce_float", _lm_ce_float, [X3(), W(), torch.randint(0, 16, (2, 8))], {}, None),
        (16, "lm_head_ce_classes_first", _lm_ce_classes_first, [X3(), W(), torch.randint(0, 16, (2, 8))], {}, None),
        (16, "lm_head_bias_ce", _lm_ce_bias, [X3(), W(), B(), torch.randint(0, 16, (2, 8))], {}, None),
        (16, "lm_head_bias_ce_float", _lm_ce_bias_float, [X3(), W(), B(), torch.randint(0, 16, (2, 8))], {}, None),
        (16, "lm_head_bias_ce_classes_first", _lm_ce_bias_classes_first,
         [X3(), W(), B(), torch.randint(0, 16, (2, 8))], {}, None),
        (16, "lm_head_ce_shifted", _lm_ce_shifted(False), [X3(), W(), B(), torch.randint(0, 16, (2, 8))], {}, None),
        (16, "lm_head_bias_ce_shifted", _lm_ce_shifted(True), [X3(), W(), B(), torch.randint(0, 16, (2, 8))], {},
         None),
    ]
    # A Linear on a permuted input (channels-last feature maps, ConvNeXt's pointwise layers; a transposed
    # sequence) cannot `view` it flat: matmul's decomposition runs expand / bmm / add instead of addmm.
    for rank, x, move in (("3d", X3, None), ("2d", X2, None), ("4d_permuted", X4, _channels_last),
                          ("3d_transposed", functools.partial(_t, 2, 16, 8), _transposed)):
        for name, fn, bias in (("linear_gelu", _lin_gelu, True), ("linear_gelu_tanh", _lin_gelu_tanh, True),
                               ("linear_nobias_gelu", _lin_nb_gelu, False),
                               ("linear_nobias_gelu_tanh", _lin_nb_gelu_tanh, False),
                               ("linear_gelu_new", _lin_gelu_new, True), ("linear_gelu_fast", _lin_gelu_fast, True),
                               ("linear_gelu_erf_formula", _lin_gelu_erf, True)):
            specs.append((6, f"{name}_{rank}", _moved(fn, move), [x(), W(), *([B()] if bias else [])], {}, None))
    # ... and where autograd records the Linear (a model's traced step), as a flat `mm` of the copied input
    # with the bias added after the view back
    for rank, x, move in (("4d_permuted", X4, _channels_last), ("3d_transposed", functools.partial(_t, 2, 16, 8),
                                                                  _transposed)):
        for tanh in (False, True):
            for bias in (True, False):
                specs.append((6, f"linear_{'' if bias else 'nobias_'}gelu{'_tanh' if tanh else ''}_mm_{rank}",
                              _lin_mm_gelu(move, tanh, bias), [x(), W(), B()], {}, None))
    specs += [
        (9, "proj_heads_transpose", _proj_heads_t, [X3(), W(), B()], {}, None),
        (9, "proj_heads_permute", _proj_heads_p, [X3(), W(), B()], {}, None),
        (9, "proj_nobias_heads_transpose", _proj_nb_heads_t, [X3(), W()], {}, None),
        (9, "proj_nobias_heads_permute", _proj_nb_heads_p, [X3(), W()], {}, None),
    ]
    for bias in (True, False):
        for permute in (False, True):
            specs.append((9, f"proj{'' if bias else '_nobias'}_scaled_heads_{'permute' if permute else 'transpose'}",
                          _proj_scaled_heads(bias, permute), [X3(), W(), B()], {}, None))
    for rank, x in (("3d", X3), ("2d", X2)):
        for bias in (True, False):
            specs.append((9, f"{BARE_PROJECTION}{'' if bias else '_nobias'}_{rank}", _proj_bare if bias else _proj_nb_bare,
                          [x(), W(), *([B()] if bias else [])], {}, None))
    for rank, x in (("3d", X3), ("2d", X2)):
        for act_name, act in (("silu", F.silu), ("gelu", F.gelu)):
            for swap in (False, True):
                for bias in (False, True):
                    tail = f"{'_swap' if swap else ''}{'_bias' if bias else ''}_{rank}"
                    specs.append((14, f"glu_{act_name}{tail}", _glu(act, swap, bias),
                                  [x(), _t(16, 16), _t(16, 16), B(), B()], {}, None))
                    for gate in (0, 1):
                        specs.append((14, f"glu_chunk{gate}_{act_name}{tail}", _glu_chunk(act, gate, swap, bias),
                                      [x(), _t(32, 16), _t(32)], {}, None))
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


# Families whose fused kernel also hands back an inner value, so a model reading it elsewhere is still the
# site: dropout-add-LayerNorm returns the residual sum (a pre-norm block's next residual reads it), the
# fused linear cross-entropy sits beside logits the forward also returns (every `...ForCausalLM`).
SHARED_INNER_NODES = (5, 16)


@functools.cache
def family_patterns() -> tuple[FamilyPattern, ...]:
    """Every family's patterns, compiled once per process (about 100 traces of tiny functions)."""
    from torch._inductor.pattern_matcher import gen_pattern

    out: list[FamilyPattern] = []
    torch.manual_seed(0)
    for family, name, fn, args, workaround, check in _specs():
        try:
            pattern = gen_pattern(fn, args, trace_forward, workaround)
            if family in SHARED_INNER_NODES:
                pattern = _anywhere_users(pattern)
            out.append(FamilyPattern(family, name, pattern, check))
        except Exception as exc:  # a broken spec is a bug here: say which, and go on with the others
            print(f"oracle: pattern {name} of family {family} does not trace: {type(exc).__name__}: {exc}",
                  file=sys.stderr)
    for name, fn, args in _attention_specs():
        try:
            out.append(FamilyPattern(10, name, _anywhere_users(gen_pattern(fn, args, trace_forward)), None))
        except Exception as exc:
            print(f"oracle: attention pattern {name} does not trace: {type(exc).__name__}: {exc}", file=sys.stderr)
    for name, fn, args, workaround in _inductor_attention():
        try:
            pattern = gen_pattern(fn, args, trace_forward, workaround)
        except Exception:  # a pattern whose example inputs need a device or dtype this torch lacks
            continue
        out.append(FamilyPattern(10, f"inductor{name}", _anywhere_users(pattern), None))
    return tuple(out)
