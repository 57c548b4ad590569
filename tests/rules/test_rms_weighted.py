"""Family 12: an RMSNorm whose weight scales the inverse RMS before `x` does, `x * (w * rsqrt(...))`.

The real classes are k-diffusion 0.1.1.post1's (`k_diffusion/models/image_transformer_v1.py`: the
`rms_norm` helper and the three norms that call it, with a weight of the normalised shape, a per-head
weight broadcast over the sequence and the head dimension, and a per-sample adaptive weight). The fix
writes `(F.rms_norm(x, ...) * w).to(x.dtype)`: the same product up to rounding. Compared with the
original (torch, CPU, seed 0; strict state-dict loading both ways; eval and train): float32 outputs and
input and parameter gradients atol 1e-5 / rtol 1e-4; bfloat16 (the original rounds `w * rsqrt(...)` to
bfloat16 before scaling `x`, the rewrite rounds once) atol 1.6e-2 / rtol 1.6e-2 (two bfloat16 ulps).

Also litgpt 0.5.4's `RMSNorm`, whose mean is over `self.dim` (an `int` constructor parameter): the fix moves
that axis last, normalises and moves it back; compared in float32 as above for dim -1, 1 and -2.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attention_harness import fixed, load, rules_of, skip_reasons  # noqa: E402

from equivalence import compare_modules  # noqa: E402

pytestmark = pytest.mark.torch

RULES = rules_of("f12-rmsnorm")

# k-diffusion 0.1.1.post1, k_diffusion/models/image_transformer_v1.py, lines 1-19 and 76-142 verbatim, less
# `@flags.compile_wrap` (a torch.compile switch) and the imports this code does not use; `apply_wd` and
# `tag_module` (optimizer-group tags in k_diffusion/layers.py) are identities here.
K_DIFFUSION_NORMS = '''
import math

import torch
from torch import nn
from torch.nn import functional as F


def apply_wd(module):
    return module


def tag_module(module, tag):
    return module


def zero_init(layer):
    nn.init.zeros_(layer.weight)
    if layer.bias is not None:
        nn.init.zeros_(layer.bias)
    return layer


def rms_norm(x, scale, eps):
    dtype = torch.promote_types(x.dtype, torch.float32)
    mean_sq = torch.mean(x.to(dtype)**2, dim=-1, keepdim=True)
    scale = scale.to(dtype) * torch.rsqrt(mean_sq + eps)
    return x * scale.to(x.dtype)


class RMSNorm(nn.Module):
    def __init__(self, param_shape, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.scale = nn.Parameter(torch.ones(param_shape))

    def extra_repr(self):
        return f"shape={tuple(self.scale.shape)}, eps={self.eps}"

    def forward(self, x):
        return rms_norm(x, self.scale, self.eps)


class QKNorm(nn.Module):
    def __init__(self, n_heads, eps=1e-6, max_scale=100.0):
        super().__init__()
        self.eps = eps
        self.max_scale = math.log(max_scale)
        self.scale = nn.Parameter(torch.full((n_heads,), math.log(10.0)))
        self.proj_()

    def extra_repr(self):
        return f"n_heads={self.scale.shape[0]}, eps={self.eps}"

    @torch.no_grad()
    def proj_(self):
        """Modify the scale in-place so it doesn't get "stuck" with zero gradient if it's clamped
        to the max value."""
        self.scale.clamp_(max=self.max_scale)

    def forward(self, x):
        self.proj_()
        scale = torch.exp(0.5 * self.scale - 0.25 * math.log(x.shape[-1]))
        return rms_norm(x, scale[:, None, None], self.eps)


class AdaRMSNorm(nn.Module):
    def __init__(self, features, cond_features, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.linear = apply_wd(zero_init(nn.Linear(cond_features, features, bias=False)))
        tag_module(self.linear, "mapping")

    def extra_repr(self):
        return f"eps={self.eps},"

    def forward(self, x, cond):
        return rms_norm(x, self.linear(cond) + 1, self.eps)
'''

CASES = {
    # class, constructor arguments, inputs
    "RMSNorm": ((16,), lambda: (torch.randn(2, 5, 16) * 3,)),
    "QKNorm": ((4,), lambda: (torch.randn(2, 4, 5, 16),)),
    "AdaRMSNorm": ((16, 8), lambda: (torch.randn(2, 5, 16), torch.randn(2, 1, 8))),
}


def _pair(new_source: str, cls: str, args: tuple[int, ...], dtype: torch.dtype) -> tuple[torch.nn.Module, ...]:
    old_ns, new_ns = load(K_DIFFUSION_NORMS, f"kdiff_old_{cls}"), load(new_source, f"kdiff_new_{cls}")
    torch.manual_seed(0)
    original = old_ns[cls](*args)
    with torch.no_grad():  # non-trivial weights (the scales start at ones, the adaptive linear at zeros)
        for p in original.parameters():
            p.add_(torch.randn(p.shape) * 0.3)
    rewritten = new_ns[cls](*args)
    old_ns[cls](*args).load_state_dict(rewritten.state_dict(), strict=True)  # rewritten checkpoints load back
    return original.to(dtype), rewritten.to(dtype)


def test_the_helper_is_rewritten_keeping_the_weight_an_operand() -> None:
    new = fixed(K_DIFFUSION_NORMS, RULES, applied=1)
    assert "return (F.rms_norm(x.to(dtype), x.shape[-1:], eps=eps) * scale.to(dtype)).to(x.dtype)" in new
    assert "mean_sq" not in new


@pytest.mark.parametrize("cls", sorted(CASES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_k_diffusion_norms_are_equivalent(cls: str, dtype: torch.dtype) -> None:
    new = fixed(K_DIFFUSION_NORMS, RULES, applied=1)
    args, inputs = CASES[cls]
    original, rewritten = _pair(new, cls, args, dtype)
    tol = {"atol": 1e-5, "rtol": 1e-4} if dtype == torch.float32 else {"atol": 1.6e-2, "rtol": 1.6e-2}
    compare_modules(original, rewritten, lambda: tuple(t.to(dtype) for t in inputs()), **tol)


PLAIN = '''
import torch
from torch import nn


class Norm(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.w = nn.Parameter(torch.ones(n))

    def forward(self, x):
        ms = x.pow(2).mean(-1, keepdim=True)
        return x * (self.w * torch.rsqrt(ms + 1e-6))
'''


def test_the_uncast_form_is_rewritten_and_equivalent() -> None:
    new = fixed(PLAIN, RULES, applied=1)
    assert "return nn.functional.rms_norm(x, x.shape[-1:], eps=1e-6) * self.w" in new
    torch.manual_seed(0)
    original = load(PLAIN, "plain_old")["Norm"](16)
    with torch.no_grad():
        original.w.add_(torch.randn(16))
    compare_modules(original, load(new, "plain_new")["Norm"](16), lambda: (torch.randn(3, 16),))


@pytest.mark.parametrize("forward, reason", [
    # an up-cast x whose product is not cast back: the result is promoted with x (float64 stays float64),
    # F.rms_norm of the up-cast would not be
    ("xf = x.float()\n        ms = xf.pow(2).mean(-1, keepdim=True)\n"
     "        return x * (self.w * torch.rsqrt(ms + 1e-6))", "up-cast"),
    # cast to a fixed dtype, not x's
    ("ms = x.pow(2).mean(-1, keepdim=True)\n"
     "        return x * (self.w * torch.rsqrt(ms + 1e-6)).to(torch.float16)", "other than `x.dtype`"),
])
def test_casts_that_change_the_result_dtype_are_declined(forward: str, reason: str) -> None:
    source = PLAIN.replace(
        "ms = x.pow(2).mean(-1, keepdim=True)\n        return x * (self.w * torch.rsqrt(ms + 1e-6))", forward)
    reasons = skip_reasons(source, RULES)
    assert len(reasons) == 1 and reason in reasons[0], reasons


# litgpt 0.5.4, litgpt/model.py: RMSNorm verbatim; the mean is over `self.dim` (an `int` parameter, -1 by default).
LITGPT_RMS_NORM = '''
import torch


class RMSNorm(torch.nn.Module):
    """Root Mean Square Layer Normalization.

    Derived from https://github.com/bzhangGo/rmsnorm/blob/master/rmsnorm_torch.py. BSD 3-Clause License:
    https://github.com/bzhangGo/rmsnorm/blob/master/LICENSE.
    """

    def __init__(self, size: int, dim: int = -1, eps: float = 1e-6, add_unit_offset: bool = False) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(size))
        self.eps = eps
        self.dim = dim
        self.add_unit_offset = add_unit_offset

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x = x.float()
        # NOTE: the original RMSNorm paper implementation is not equivalent
        norm_x = torch.mean(x * x, dim=self.dim, keepdim=True)
        x_normed = x * torch.rsqrt(norm_x + self.eps)
        weight = (1 + self.weight) if self.add_unit_offset else self.weight
        return (x_normed * weight.float()).to(dtype=dtype)

    def reset_parameters(self) -> None:
        torch.nn.init.ones_(self.weight)
'''


def test_litgpt_axis_is_moved_last_and_back() -> None:
    new = fixed(LITGPT_RMS_NORM, RULES, applied=1)
    assert ("x_normed = torch.nn.functional.rms_norm(x.movedim(self.dim, -1), (x.shape[self.dim],), "
            "eps=self.eps).movedim(-1, self.dim)") in new


@pytest.mark.parametrize("dim, offset", [(-1, False), (-1, True), (1, False), (-2, True)])
def test_litgpt_rms_norm_is_equivalent(dim: int, offset: bool) -> None:
    new = fixed(LITGPT_RMS_NORM, RULES, applied=1)
    old_cls, new_cls = load(LITGPT_RMS_NORM, "litgpt_old")["RMSNorm"], load(new, "litgpt_new")["RMSNorm"]
    size = 16 if dim == -1 else 5
    torch.manual_seed(0)
    original = old_cls(size, dim=dim, add_unit_offset=offset)
    with torch.no_grad():
        original.weight.add_(torch.randn(size) * 0.3)
    rewritten = new_cls(size, dim=dim, add_unit_offset=offset)
    old_cls(size, dim=dim, add_unit_offset=offset).load_state_dict(rewritten.state_dict(), strict=True)
    # Over another axis the weight (size 5) still scales the last one, which must then be 5 long.
    shape = (2, 3, 16) if dim == -1 else (2, 5, 5)
    compare_modules(original, rewritten, lambda: (torch.randn(*shape) * 3,))


def test_an_axis_not_known_to_be_one_int_is_declined() -> None:
    source = LITGPT_RMS_NORM.replace("dim: int = -1", "dim=-1")
    reasons = skip_reasons(source, RULES)
    assert len(reasons) == 1 and "not known to be one axis" in reasons[0], reasons
