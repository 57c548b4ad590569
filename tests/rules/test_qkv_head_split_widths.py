"""Grouped- and multi-query q/k/v widths written with the model width for the query (issue 20, mech65).

basicts' `MultiHeadAttention` builds `q_proj = nn.Linear(hidden_size, hidden_size)` beside
`k_proj = nn.Linear(hidden_size, self.kv_heads * self.head_size)` with `self.head_size = hidden_size // n_heads`;
zetascale's grouped attention writes `kv_dim = dim // query_heads * kv_heads` beside the query's `dim`.
`same_width` compared `hidden_size` with `self.kv_heads*self.head_size` as written: no shared factor, no site.
Now a width that `__init__` splits into named heads (`X // n`) is read as `n * (X // n)` beside widths that
hold `X // n` as a factor (`engine.path_widths.agree_by_head_split`): the keys and values are groups of the
query's heads. The fix is the grouped-query fusion (one Linear split by the three widths), checked for
equivalence (outputs and gradients, `equivalence.compare_modules`, CPU, seed 0) and strict loading of either
state dict, with the head width held by an attribute and by a local of `__init__`.

Not read so: a divisor written as a number (`dim // 2`: a reduction, not a head split), a head width of
another size than the query's, an attribute bound under a condition, a reduced width for the query and keys
beside the values' whole width (fightingcv's CMT: `qk_dim = dim // qk_ratio`, found by the census and refused
since), keys and values of different widths, and so one key/value head written as the head width alone (the
matcher tries the Linears in every order, and that is CMT's form in another order).
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
from torch import nn


class Attention(nn.Module):
    def __init__(self, hidden_size, n_heads, kv_heads=2):
        super().__init__()
        self.n_heads = n_heads
        self.kv_heads = kv_heads
        self.head_size = hidden_size // n_heads
        self.q_proj = nn.Linear(hidden_size, hidden_size)
        self.k_proj = nn.Linear(hidden_size, self.kv_heads * self.head_size)
        self.v_proj = nn.Linear(hidden_size, self.kv_heads * self.head_size)
        self.o_proj = nn.Linear(hidden_size, hidden_size)

    def forward(self, x):
        b, n, _ = x.shape
        q = self.q_proj(x)
        k = self.k_proj(x)
        v = self.v_proj(x)
        q = q.view(b, n, self.n_heads, self.head_size).transpose(1, 2)
        k = k.view(b, n, self.kv_heads, self.head_size).transpose(1, 2)
        v = v.view(b, n, self.kv_heads, self.head_size).transpose(1, 2)
        k = k.repeat_interleave(self.n_heads // self.kv_heads, dim=1)
        v = v.repeat_interleave(self.n_heads // self.kv_heads, dim=1)
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        return self.o_proj(out.transpose(1, 2).reshape(b, n, -1))
'''

# the head width held in a local of `__init__`
LOCAL_HEAD = SOURCE.replace("        self.head_size = hidden_size // n_heads\n",
                            "        head = hidden_size // n_heads\n        self.head_size = head\n").replace(
    "nn.Linear(hidden_size, self.kv_heads * self.head_size)", "nn.Linear(hidden_size, kv_heads * head)")


def _lines(source: str) -> list[int]:
    return [f.span.start_line + 1 for f in findings_of(source, RULES) if f.family == 9]


def _equivalent(source: str, new: str) -> None:
    torch.manual_seed(0)
    original = load(source, "orig")["Attention"](16, 4)
    rewritten = load(new, "new")["Attention"](16, 4)
    a, b = original.state_dict(), rewritten.state_dict()
    assert sorted(b) == sorted(a) and all(b[k].shape == a[k].shape for k in a)
    compare_modules(original, rewritten, lambda: (torch.randn(2, 5, 16),))
    original.load_state_dict(rewritten.state_dict(), strict=True)
    rewritten.load_state_dict(original.state_dict(), strict=True)


@pytest.mark.parametrize("source", [SOURCE, LOCAL_HEAD], ids=["attribute", "local"])
def test_key_value_heads_of_the_query_width_are_a_site_and_fused(source: str) -> None:
    assert LOCAL_HEAD != SOURCE
    line = source.splitlines().index("        q = self.q_proj(x)") + 1
    assert _lines(source) == [line]
    new = fixed(source, RULES, applied=1)
    assert "self.qkv(x).split(self.qkv_sizes, dim=-1)" in new
    _equivalent(source, new)


@pytest.mark.parametrize("change", [
    # a divisor written as a number: half the width, a reduction rather than a head split
    ("self.head_size = hidden_size // n_heads", "self.head_size = hidden_size // 2"),
    # the head width is another size's share, not the query's
    ("self.head_size = hidden_size // n_heads", "self.head_size = hidden_size // n_heads + 1"),
    ("self.q_proj = nn.Linear(hidden_size, hidden_size)", "self.q_proj = nn.Linear(hidden_size, 2 * hidden_size)"),
    # CMT's reduced query/key width (`qk_dim = dim // qk_ratio`) beside the values' whole width: not heads
    (("self.q_proj = nn.Linear(hidden_size, hidden_size)\n"
      "        self.k_proj = nn.Linear(hidden_size, self.kv_heads * self.head_size)\n"
      "        self.v_proj = nn.Linear(hidden_size, self.kv_heads * self.head_size)"),
     ("self.q_proj = nn.Linear(hidden_size, self.head_size)\n"
      "        self.k_proj = nn.Linear(hidden_size, self.head_size)\n"
      "        self.v_proj = nn.Linear(hidden_size, hidden_size)")),
    # one key/value head as the head width alone: in the matcher's other orders this is CMT's form
    ("kv_heads=2", "kv_heads=1", "nn.Linear(hidden_size, self.kv_heads * self.head_size)",
     "nn.Linear(hidden_size, self.head_size)"),
    # keys and values of different widths
    ("self.v_proj = nn.Linear(hidden_size, self.kv_heads * self.head_size)",
     "self.v_proj = nn.Linear(hidden_size, self.head_size)"),
    # the head width bound under a condition: what it is depends on the path
    ("        self.head_size = hidden_size // n_heads\n",
     "        self.head_size = hidden_size // n_heads\n        if kv_heads > 4:\n            self.head_size = 8\n"),
])
def test_widths_that_are_not_heads_of_the_query_width_stay_silent(change: tuple[str, ...]) -> None:
    source = SOURCE
    for old, new in zip(change[::2], change[1::2]):
        source = source.replace(old, new)
    assert source != SOURCE
    assert _lines(source) == [] and _lines(SOURCE) != []
