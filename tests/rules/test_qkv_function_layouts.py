"""Family 9 with the heads split by the function forms of the layout methods (issue 20, mech65).

ludwig's `MultiHeadSelfAttention` (`modules/attention_modules.py`) splits the heads in a helper written with
`torch.reshape(inputs, (b, -1, h, d))` then `torch.permute(inputs, (0, 2, 1, 3))`, and hands the three to
`F.scaled_dot_product_attention`. The `attention_roles` guard follows a projection to the call that reads the
three through layout steps only; it knew the method forms (`x.reshape(...)`, `x.permute(...)`) and stopped at
the function forms, so the three Linears were no site. The function forms now pass as the methods do
(`torch.reshape`, `torch.permute`, `torch.flatten`, `torch.squeeze`, `torch.unsqueeze`). The fix is the usual
fusion, checked for equivalence (outputs and gradients, `equivalence.compare_modules`, CPU, seed 0) and strict
loading of either state dict. Near forms (keys and values of another input, another use of the three) stay
silent.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attention_harness import findings_of, fixed, load, rules_of  # noqa: E402

from equivalence import compare_modules  # noqa: E402

pytestmark = pytest.mark.torch

RULES = rules_of("f09-fused-qkv")

SOURCE = '''
import torch
import torch.nn.functional as F
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, input_size, hidden_size, num_heads=4):
        super().__init__()
        self.hidden_size = hidden_size
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.q_dense = nn.Linear(input_size, hidden_size)
        self.k_dense = nn.Linear(input_size, hidden_size)
        self.v_dense = nn.Linear(input_size, hidden_size)
        self.out = nn.Linear(hidden_size, hidden_size)

    def heads(self, t, batch_size):
        t = torch.reshape(t, (batch_size, -1, self.num_heads, self.head_dim))
        return torch.permute(t, (0, 2, 1, 3))

    def forward(self, x):
        batch_size = x.shape[0]
        q = self.q_dense(x)
        k = self.k_dense(x)
        v = self.v_dense(x)
        q = self.heads(q, batch_size)
        k = self.heads(k, batch_size)
        v = self.heads(v, batch_size)
        o = F.scaled_dot_product_attention(q, k, v)
        o = torch.reshape(torch.permute(o, (0, 2, 1, 3)), (batch_size, -1, self.hidden_size))
        return self.out(o)
'''


def _lines(source: str) -> list[int]:
    return [f.span.start_line + 1 for f in findings_of(source, RULES) if f.family == 9]


def test_heads_split_by_torch_reshape_and_torch_permute_are_a_site_and_fused() -> None:
    line = SOURCE.splitlines().index("        q = self.q_dense(x)") + 1
    assert _lines(SOURCE) == [line]
    new = fixed(SOURCE, RULES, applied=1)
    assert "q, k, v = self.qkv(x).chunk(3, dim=-1)" in new
    torch.manual_seed(0)
    original = load(SOURCE, "orig")["SelfAttention"](12, 16)
    rewritten = load(new, "new")["SelfAttention"](12, 16)
    a, b = original.state_dict(), rewritten.state_dict()
    assert sorted(b) == sorted(a) and all(b[k].shape == a[k].shape for k in a)
    compare_modules(original, rewritten, lambda: (torch.randn(2, 5, 12),))
    original.load_state_dict(rewritten.state_dict(), strict=True)
    rewritten.load_state_dict(original.state_dict(), strict=True)


@pytest.mark.parametrize("form", [
    "torch.flatten(torch.unsqueeze(t, 0), 0, 1)", "torch.squeeze(torch.unsqueeze(t, 1), 1)"])
def test_the_other_function_forms_pass_too(form: str) -> None:
    source = SOURCE.replace("t = torch.reshape(t, (batch_size, -1, self.num_heads, self.head_dim))",
                            f"t = torch.reshape({form}, (batch_size, -1, self.num_heads, self.head_dim))")
    assert source != SOURCE
    assert len(_lines(source)) == 1


@pytest.mark.parametrize("change", [
    # keys and values of another input: nothing to fuse with the query
    (("def forward(self, x):", "def forward(self, x, memory):"),
     ("k = self.k_dense(x)", "k = self.k_dense(memory)"), ("v = self.v_dense(x)", "v = self.v_dense(memory)")),
    # the three are not used as attention uses them: each is pooled on its own and the results added
    (("o = F.scaled_dot_product_attention(q, k, v)", "o = q.mean(-1, keepdim=True) + k.amax(-1, keepdim=True) + v"),),
])
def test_near_forms_stay_silent(change: tuple[tuple[str, str], ...]) -> None:
    source = SOURCE
    for old, new in change:
        assert old in source
        source = source.replace(old, new)
    assert _lines(source) == [] and _lines(SOURCE) != []
