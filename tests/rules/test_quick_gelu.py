"""Family 13, quick-GELU: `x * torch.sigmoid(1.702 * x)` becomes `quick_gelu(x)`.

The helper is an autograd function that computes the same expression and keeps only `x` for backward
(autograd keeps `sigmoid(1.702 * x)` as well), recomputing the sigmoid there with `sigmoid_backward`. The
real classes are open_clip 2.29.0's `QuickGELU` and diffusers 0.31.0's `ApproximateGELU` (a Linear, then the
expression). Compared with the original (torch, CPU, seed 0, strict state-dict loading both ways, eval and
train): float32 and bfloat16 outputs, input and every parameter gradient with atol 0 / rtol 0 (the same
kernels); float64 `gradcheck` and `gradgradcheck` of the helper; the bytes autograd saves are lower.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attention_harness import fixed, load, rules_of  # noqa: E402
from test_gated_chunked import EXACT, _saved_bytes  # noqa: E402

from equivalence import compare_modules  # noqa: E402

pytestmark = pytest.mark.torch

RULES = rules_of("f13-gelu")

# open_clip 2.29.0, open_clip/transformer.py, lines 1-3 and 33-36 verbatim.
OPEN_CLIP_QUICK_GELU = '''
import torch
from torch import nn


class QuickGELU(nn.Module):
    # NOTE This is slower than nn.GELU or nn.SiLU and uses more GPU memory
    def forward(self, x: torch.Tensor):
        return x * torch.sigmoid(1.702 * x)
'''

# diffusers 0.31.0, src/diffusers/models/activations.py, lines 16-18 and 149-166 verbatim.
DIFFUSERS_APPROXIMATE_GELU = '''
import torch
import torch.nn.functional as F
from torch import nn


class ApproximateGELU(nn.Module):
    r"""
    The approximate form of the Gaussian Error Linear Unit (GELU). For more details, see section 2 of this
    [paper](https://arxiv.org/abs/1606.08415).

    Parameters:
        dim_in (`int`): The number of channels in the input.
        dim_out (`int`): The number of channels in the output.
        bias (`bool`, defaults to True): Whether to use a bias in the linear layer.
    """

    def __init__(self, dim_in: int, dim_out: int, bias: bool = True):
        super().__init__()
        self.proj = nn.Linear(dim_in, dim_out, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.proj(x)
        return x * torch.sigmoid(1.702 * x)
'''

CASES = {
    "QuickGELU": (OPEN_CLIP_QUICK_GELU, ()),
    "ApproximateGELU": (DIFFUSERS_APPROXIMATE_GELU, (16, 24)),
}


@pytest.mark.parametrize("cls", sorted(CASES))
def test_the_expression_becomes_the_helper(cls: str) -> None:
    source, _ = CASES[cls]
    new = fixed(source, RULES, applied=1)
    assert "return quick_gelu(x)" in new
    assert new.count("(adopter: quick-gelu)") == 1


@pytest.mark.parametrize("cls", sorted(CASES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_real_classes_are_equivalent(cls: str, dtype: torch.dtype) -> None:
    source, args = CASES[cls]
    new = fixed(source, RULES, applied=1)
    old_cls, new_cls = load(source, f"qg_old_{cls}")[cls], load(new, f"qg_new_{cls}")[cls]
    torch.manual_seed(0)
    original = old_cls(*args).to(dtype)
    rewritten = new_cls(*args).to(dtype)
    old_cls(*args).to(dtype).load_state_dict(rewritten.state_dict(), strict=True)
    width = args[0] if args else 24
    compare_modules(original, rewritten, lambda: (torch.randn(2, 5, width, dtype=dtype) * 3,), **EXACT)
    torch.manual_seed(0)
    x = torch.randn(4, 7, width, dtype=dtype, requires_grad=not args)  # QuickGELU has no parameters
    assert _saved_bytes(rewritten, x) < _saved_bytes(original, x)


# Another test in the same worker may have imported bench/oracle/trace.py, which turns dynamo off
# for the whole process: this one needs it on.
@torch._dynamo.config.patch(disable=False)
def test_helper_gradcheck_double_backward_and_compile() -> None:
    new = fixed(OPEN_CLIP_QUICK_GELU, RULES, applied=1)
    helper = load(new, "qg_helper")["quick_gelu"]
    torch.manual_seed(0)
    x = torch.randn(3, 6, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(helper, (x,))
    assert torch.autograd.gradgradcheck(helper, (x,))
    compiled = torch.compile(helper, backend="aot_eager", fullgraph=True)
    a = torch.randn(4, 8, requires_grad=True)
    b = a.detach().clone().requires_grad_()
    (a * torch.sigmoid(1.702 * a)).pow(2).sum().backward()
    compiled(b).pow(2).sum().backward()
    torch.testing.assert_close(b.grad, a.grad, atol=1e-6, rtol=1e-5)
    with torch.no_grad():  # inference: the expression as written
        torch.testing.assert_close(helper(x), x * torch.sigmoid(1.702 * x), **EXACT)
