"""Attention chains that helper `mech29`'s family 4 forms (issue 20, dev2 batch 3) make fixable on CPU: a softmax
called through a local alias (`softmax = torch.softmax`, tortoise-tts 3.0.0 `transformer.py`), and an
`nn.Softmax(dim=3)` bound in `__init__` over a tensor a `view` made 4-D (its axis now counted from the end, as
the function's is). Each fix is exec'd next to the original and compared through `adopter.verify.compare.compare`
(float32 on CPU, rtol 1e-4 of the tensor's scale + atol 1e-5 for outputs and 1e-4 for gradients; outputs,
input and parameter gradients), after a strict state-dict load both ways, in eval and train mode, seeds 0 and 1.
The near forms stay unfixed: a local holding log_softmax on one path, and `nn.Softmax(dim=2)` of the same
4-D tensor (the query axis).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attention_harness import findings_of, fixed, load, rules_of  # noqa: E402

from adopter.verify.compare import compare  # noqa: E402

pytestmark = pytest.mark.torch

RULES = rules_of("f10-manual-attention-sdpa")

ALIASED = """
import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, _ = x.shape
        softmax = torch.softmax
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q = q.view(b, n, self.heads, -1).transpose(1, 2)
        k = k.view(b, n, self.heads, -1).transpose(1, 2)
        v = v.view(b, n, self.heads, -1).transpose(1, 2)
        dots = torch.matmul(q, k.transpose(-2, -1)) * self.scale
        attn = softmax(dots, dim=-1)
        out = torch.matmul(attn, v)
        return self.to_out(out.transpose(1, 2).reshape(b, n, -1))
"""

ALIASED_PER_PATH = ALIASED.replace("    def forward(self, x):", "    def forward(self, x, log: bool = False):").replace(
    "        softmax = torch.softmax\n",
    "        if log:\n            softmax = torch.log_softmax\n        else:\n            softmax = torch.softmax\n")

BOUND_AXIS = """
import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
        self.attend = nn.Softmax(dim=3)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q = q.view(b, n, self.heads, -1).transpose(1, 2)
        k = k.view(b, n, self.heads, -1).transpose(1, 2)
        v = v.view(b, n, self.heads, -1).transpose(1, 2)
        dots = torch.matmul(q, k.transpose(-2, -1)) * self.scale
        attn = self.attend(dots)
        out = torch.matmul(attn, v)
        return self.to_out(out.transpose(1, 2).reshape(b, n, -1))
"""


def _equivalent(source: str, new: str) -> None:
    torch.manual_seed(0)
    original = load(source, "orig")["Attention"](8, 2)
    rewritten = load(new, "new")["Attention"](8, 2)
    rewritten.load_state_dict(original.state_dict(), strict=True)
    original.load_state_dict(rewritten.state_dict(), strict=True)
    for train in (False, True):
        original.train(train)
        rewritten.train(train)
        for seed in (0, 1):
            torch.manual_seed(seed)
            result = compare(original, rewritten, ((torch.randn(2, 5, 8),), {}), seed=seed, dtype=torch.float32)
            assert result.equivalent, (train, seed, result)


def test_a_chain_through_a_local_alias_of_softmax_is_rewritten_and_equivalent() -> None:
    new = fixed(ALIASED, RULES, applied=1)
    assert "scaled_dot_product_attention" in new and "softmax(dots" not in new, new
    _equivalent(ALIASED, new)
    assert not [f for f in findings_of(ALIASED_PER_PATH, RULES) if f.fixable]


def test_a_chain_through_a_bound_softmax_over_axis_3_of_a_4d_tensor_is_rewritten_and_equivalent() -> None:
    new = fixed(BOUND_AXIS, RULES, applied=1)
    assert "scaled_dot_product_attention" in new and "self.attend(dots)" not in new, new
    _equivalent(BOUND_AXIS, new)
    assert findings_of(BOUND_AXIS.replace("nn.Softmax(dim=3)", "nn.Softmax(dim=2)"), RULES) == ()
