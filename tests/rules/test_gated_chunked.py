"""Family 14, one projection split in two: `x, gate = h.chunk(2, dim=-1)` then `x * act(gate)`.

The fix writes `fused_gated_activation(h, act)`: an autograd function that keeps only `h` for backward and
recomputes `act(gate)` there (autograd keeps `act(gate)` as well). The real classes are diffusers 0.31.0's
`GEGLU` (its activation a method with an `mps` branch, the chain in the `else` of an NPU switch) and
`SwiGLU` (`nn.SiLU()` bound in `__init__`), and k-diffusion 0.1.1.post1's `FeedForwardBlock` /
`MappingFeedForwardBlock` through the module-level `geglu` helper (the edit lands in the helper). Compared
with the original (torch, CPU, seed 0, strict state-dict loading both ways, eval and train): float32 outputs
and input and every parameter gradient with atol 0 / rtol 0 (the same operations run, in the same order),
bfloat16 the same; float64 `gradcheck` and `gradgradcheck` of the helper; the tensors autograd saves are
measured with `saved_tensors_hooks` (fewer bytes after the fix).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attention_harness import fixed, load, rules_of, skip_reasons  # noqa: E402

from equivalence import compare_modules  # noqa: E402

pytestmark = pytest.mark.torch

RULES = rules_of("f14-swiglu")

# diffusers 0.31.0, src/diffusers/models/activations.py, lines 16-25 and 92-149 verbatim; `deprecate` and
# `is_torch_npu_available` (diffusers.utils) are stubs here (no NPU).
DIFFUSERS_GATED = '''
import torch
import torch.nn.functional as F
from torch import nn


def deprecate(*args, **kwargs):
    pass


def is_torch_npu_available():
    return False


if is_torch_npu_available():
    import torch_npu


class GEGLU(nn.Module):
    r"""
    A [variant](https://arxiv.org/abs/2002.05202) of the gated linear unit activation function.

    Parameters:
        dim_in (`int`): The number of channels in the input.
        dim_out (`int`): The number of channels in the output.
        bias (`bool`, defaults to True): Whether to use a bias in the linear layer.
    """

    def __init__(self, dim_in: int, dim_out: int, bias: bool = True):
        super().__init__()
        self.proj = nn.Linear(dim_in, dim_out * 2, bias=bias)

    def gelu(self, gate: torch.Tensor) -> torch.Tensor:
        if gate.device.type != "mps":
            return F.gelu(gate)
        # mps: gelu is not implemented for float16
        return F.gelu(gate.to(dtype=torch.float32)).to(dtype=gate.dtype)

    def forward(self, hidden_states, *args, **kwargs):
        if len(args) > 0 or kwargs.get("scale", None) is not None:
            deprecation_message = "The `scale` argument is deprecated and will be ignored. Please remove it, as passing it will raise an error in the future. `scale` should directly be passed while calling the underlying pipeline component i.e., via `cross_attention_kwargs`."
            deprecate("scale", "1.0.0", deprecation_message)
        hidden_states = self.proj(hidden_states)
        if is_torch_npu_available():
            # using torch_npu.npu_geglu can run faster and save memory on NPU.
            return torch_npu.npu_geglu(hidden_states, dim=-1, approximate=1)[0]
        else:
            hidden_states, gate = hidden_states.chunk(2, dim=-1)
            return hidden_states * self.gelu(gate)


class SwiGLU(nn.Module):
    r"""
    A [variant](https://arxiv.org/abs/2002.05202) of the gated linear unit activation function. It's similar to `GEGLU`
    but uses SiLU / Swish instead of GeLU.

    Parameters:
        dim_in (`int`): The number of channels in the input.
        dim_out (`int`): The number of channels in the output.
        bias (`bool`, defaults to True): Whether to use a bias in the linear layer.
    """

    def __init__(self, dim_in: int, dim_out: int, bias: bool = True):
        super().__init__()
        self.proj = nn.Linear(dim_in, dim_out * 2, bias=bias)
        self.activation = nn.SiLU()

    def forward(self, hidden_states):
        hidden_states = self.proj(hidden_states)
        hidden_states, gate = hidden_states.chunk(2, dim=-1)
        return hidden_states * self.activation(gate)
'''

# k-diffusion 0.1.1.post1, k_diffusion/models/image_transformer_v1.py: `zero_init`, `geglu`, `GEGLU`,
# `RMSNorm`, `FeedForwardBlock` and `MappingFeedForwardBlock` verbatim, less `@flags.compile_wrap` on `geglu`
# (a torch.compile switch: the compiled path is tested on its own below); `apply_wd` (an optimizer-group tag)
# is an identity, `AdaRMSNorm` the package's, `rms_norm` the package's.
K_DIFFUSION_FF = '''
import torch
from torch import nn
from torch.nn import functional as F


def apply_wd(module):
    return module


def zero_init(layer):
    nn.init.zeros_(layer.weight)
    if layer.bias is not None:
        nn.init.zeros_(layer.bias)
    return layer


def geglu(x):
    a, b = x.chunk(2, dim=-1)
    return a * F.gelu(b)


def rms_norm(x, scale, eps):
    dtype = torch.promote_types(x.dtype, torch.float32)
    mean_sq = torch.mean(x.to(dtype)**2, dim=-1, keepdim=True)
    scale = scale.to(dtype) * torch.rsqrt(mean_sq + eps)
    return x * scale.to(x.dtype)


class GEGLU(nn.Module):
    def forward(self, x):
        return geglu(x)


class RMSNorm(nn.Module):
    def __init__(self, param_shape, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.scale = nn.Parameter(torch.ones(param_shape))

    def forward(self, x):
        return rms_norm(x, self.scale, self.eps)


class AdaRMSNorm(nn.Module):
    def __init__(self, features, cond_features, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.linear = apply_wd(zero_init(nn.Linear(cond_features, features, bias=False)))

    def forward(self, x, cond):
        return rms_norm(x, self.linear(cond) + 1, self.eps)


class FeedForwardBlock(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.norm = AdaRMSNorm(d_model, d_model)
        self.up_proj = apply_wd(nn.Linear(d_model, d_ff * 2, bias=False))
        self.act = GEGLU()
        self.dropout = nn.Dropout(dropout)
        self.down_proj = apply_wd(zero_init(nn.Linear(d_ff, d_model, bias=False)))

    def forward(self, x, cond):
        skip = x
        x = self.norm(x, cond)
        x = self.up_proj(x)
        x = self.act(x)
        x = self.dropout(x)
        x = self.down_proj(x)
        return x + skip


class MappingFeedForwardBlock(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.norm = RMSNorm(d_model)
        self.up_proj = apply_wd(nn.Linear(d_model, d_ff * 2, bias=False))
        self.act = GEGLU()
        self.dropout = nn.Dropout(dropout)
        self.down_proj = apply_wd(zero_init(nn.Linear(d_ff, d_model, bias=False)))

    def forward(self, x):
        skip = x
        x = self.norm(x)
        x = self.up_proj(x)
        x = self.act(x)
        x = self.dropout(x)
        x = self.down_proj(x)
        return x + skip
'''

EXACT = {"atol": 0.0, "rtol": 0.0}


def _perturbed(module: torch.nn.Module) -> torch.nn.Module:
    """Non-trivial weights (k-diffusion zero-initialises the down projection and the adaptive norm)."""
    with torch.no_grad():
        for p in module.parameters():
            p.add_(torch.randn(p.shape) * 0.3)
    return module


def _saved_bytes(module: torch.nn.Module, *inputs: torch.Tensor) -> int:
    """Bytes of the tensors autograd saves for backward in one training forward (each storage once)."""
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        seen[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        module(*inputs).sum().backward()
    return sum(seen.values())


def test_diffusers_classes_are_rewritten() -> None:
    new = fixed(DIFFUSERS_GATED, RULES, applied=2)
    assert "return fused_gated_activation(hidden_states, self.gelu)" in new  # the mps branch is kept
    assert "return fused_gated_activation(hidden_states, self.activation)" in new
    assert "hidden_states.chunk(2, dim=-1)" not in new
    assert "torch_npu.npu_geglu(hidden_states, dim=-1, approximate=1)[0]" in new  # the NPU branch is untouched


@pytest.mark.parametrize("cls", ["GEGLU", "SwiGLU"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_diffusers_classes_are_equivalent(cls: str, dtype: torch.dtype) -> None:
    new = fixed(DIFFUSERS_GATED, RULES, applied=2)
    old_cls, new_cls = load(DIFFUSERS_GATED, f"diffusers_old_{cls}")[cls], load(new, f"diffusers_new_{cls}")[cls]
    torch.manual_seed(0)
    original = old_cls(16, 24).to(dtype)
    rewritten = new_cls(16, 24).to(dtype)
    old_cls(16, 24).to(dtype).load_state_dict(rewritten.state_dict(), strict=True)
    compare_modules(original, rewritten, lambda: (torch.randn(2, 5, 16, dtype=dtype),), **EXACT)
    torch.manual_seed(0)
    x = torch.randn(4, 7, 16, dtype=dtype)
    assert _saved_bytes(rewritten, x) < _saved_bytes(original, x)


def test_k_diffusion_helper_is_rewritten_once_for_both_blocks() -> None:
    new = fixed(K_DIFFUSION_FF, RULES, applied=2)
    assert "def geglu(x):\n    return fused_gated_activation(x, F.gelu)\n" in new
    assert new.count("(adopter: fused-gated-activation)") == 1


@pytest.mark.parametrize("cls", ["FeedForwardBlock", "MappingFeedForwardBlock"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_k_diffusion_blocks_are_equivalent(cls: str, dtype: torch.dtype) -> None:
    new = fixed(K_DIFFUSION_FF, RULES, applied=2)
    old_cls, new_cls = load(K_DIFFUSION_FF, f"kdiff_ff_old_{cls}")[cls], load(new, f"kdiff_ff_new_{cls}")[cls]
    torch.manual_seed(0)
    original = _perturbed(old_cls(16, 24)).to(dtype)
    rewritten = new_cls(16, 24).to(dtype)
    old_cls(16, 24).to(dtype).load_state_dict(rewritten.state_dict(), strict=True)
    if cls == "FeedForwardBlock":
        inputs = lambda: (torch.randn(2, 5, 16, dtype=dtype), torch.randn(2, 1, 16, dtype=dtype))  # noqa: E731
    else:
        inputs = lambda: (torch.randn(2, 5, 16, dtype=dtype),)  # noqa: E731
    compare_modules(original, rewritten, inputs, **EXACT)
    # With the dropout after the activation on, in training: the same random stream on both sides.
    original.dropout.p = rewritten.dropout.p = 0.1
    original.train()
    rewritten.train()
    results = []
    for module in (original, rewritten):
        module.zero_grad(set_to_none=True)
        torch.manual_seed(1)
        args = [t.requires_grad_() for t in inputs()]
        out = module(*args)
        out.pow(2).sum().backward()
        results.append([out.detach(), *(a.grad for a in args), *(p.grad for p in module.parameters())])
    assert len(results[0]) == len(results[1])
    for a, b in zip(*results):
        torch.testing.assert_close(b, a, **EXACT)


# Another test in the same worker may have imported bench/oracle/trace.py, which turns dynamo off
# for the whole process: this one needs it on.
@torch._dynamo.config.patch(disable=False)
def test_k_diffusion_helper_under_torch_compile() -> None:
    """k-diffusion compiles `geglu` by default: under torch.compile the helper computes the product as
    written (the compiler fuses it itself), and the compiled function's values and gradients are the
    original's."""
    new = fixed(K_DIFFUSION_FF, RULES, applied=2)
    old_geglu, new_geglu = load(K_DIFFUSION_FF, "kdiff_geglu_old")["geglu"], load(new, "kdiff_geglu_new")["geglu"]
    compiled = torch.compile(new_geglu, backend="aot_eager", fullgraph=True)
    torch.manual_seed(0)
    h = torch.randn(3, 8, requires_grad=True)
    h2 = h.detach().clone().requires_grad_()
    old_geglu(h).pow(2).sum().backward()
    compiled(h2).pow(2).sum().backward()
    torch.testing.assert_close(h2.grad, h.grad, atol=1e-6, rtol=1e-5)


GATE_FIRST = '''
import torch.nn.functional as F
from torch import nn


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w12 = nn.Linear(dim, 2 * hidden, bias=False)
        self.w3 = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        x1, x2 = self.w12(x).chunk(2, dim=-1)
        return self.w3(F.silu(x1) * x2)
'''


def test_gate_first_with_the_projection_in_the_split() -> None:
    new = fixed(GATE_FIRST, RULES, applied=1)
    assert "return self.w3(fused_gated_activation(self.w12(x), F.silu, gate=0))" in new
    torch.manual_seed(0)
    original = load(GATE_FIRST, "gate_first_old")["SwiGLU"](8, 12)
    compare_modules(original, load(new, "gate_first_new")["SwiGLU"](8, 12), lambda: (torch.randn(3, 8),), **EXACT)


def test_helper_gradcheck_and_double_backward() -> None:
    new = fixed(GATE_FIRST, RULES, applied=1)
    helper = load(new, "gate_first_helper")["fused_gated_activation"]
    torch.manual_seed(0)
    h = torch.randn(3, 6, dtype=torch.float64, requires_grad=True)
    for gate in (0, 1):
        for act in (torch.nn.functional.silu, torch.nn.functional.gelu, torch.tanh):
            def fn(t: torch.Tensor, act=act, gate=gate) -> torch.Tensor:
                return helper(t, act, gate)
            assert torch.autograd.gradcheck(fn, (h,))
            assert torch.autograd.gradgradcheck(fn, (h,))
    odd = torch.randn(3, 5, requires_grad=True)  # halves of 3 and 2: the product as written (it fails the same)
    with pytest.raises(RuntimeError):
        helper(odd, torch.nn.functional.silu)


@pytest.mark.parametrize("forward, reason", [
    # a half read after the product: without the split it would hold the whole projection
    ("x, gate = self.proj(x).chunk(2, dim=-1)\n        y = x * F.silu(gate)\n        return y + x",
     "also read on line"),
    # a call runs before the product in its statement, so the projection would move after it
    ("x, gate = self.proj(x).chunk(2, dim=-1)\n        return self.scale(x) + x * F.silu(gate)",
     "calls code before the product"),
    # something between the split and the product
    ("x, gate = self.proj(x).chunk(2, dim=-1)\n        gate = gate * 2\n        return x * F.silu(gate)",
     None),
    # in a loop, a half read before the split is the previous iteration's
    ("gate = x\n        for _ in range(2):\n            h = self.proj(x + gate)\n"
     "            x, gate = h.chunk(2, dim=-1)\n            x = x * F.silu(gate)\n        return x",
     "in the loop around the split"),
    # the activation takes more than the gate
    ("x, gate = self.proj(x).chunk(2, dim=-1)\n        return x * F.gelu(gate, approximate='tanh')",
     "called on the gate alone"),
])
def test_forms_that_would_change_are_declined(forward: str, reason: str | None) -> None:
    source = f'''
import torch.nn.functional as F
from torch import nn


class Gated(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, 2 * dim)
        self.scale = nn.Identity()

    def forward(self, x):
        {forward}
'''
    reasons = skip_reasons(source, RULES)
    if reason is None:  # not matched at all, or declined
        assert all(r for r in reasons)
    else:
        assert len(reasons) == 1 and reason in reasons[0], reasons
