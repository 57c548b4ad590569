"""Family 9 written other ways (issue 20): the projections' widths held in locals of `__init__`, and the
projections held in an `nn.ModuleDict` looked up by literal keys.

- Widths as locals (`dim_inner = heads * dim_head`, native-sparse-attention's `Attention`): `same_width` reads
  what the local holds, so grouped-query widths written through locals agree as when written out. The fix
  (the grouped-query fusion, split by width) is checked for equivalence: outputs atol 1e-5 / rtol 1e-4 and
  gradients atol 1e-4 / rtol 1e-4 (`equivalence.compare_modules`, CPU, seed 0), eval and train, and
  strict loading of either state dict.
- A `ModuleDict` of Linears (diffsynth's `MOSSImageBlock`: `{name: nn.Linear(dim, dim) for name in ("q", "k",
  "v", "o")}`, called as `self.proj["q"](y)`): a site, reported without a fix (the items of a container are
  not rewritten); the message says so.
Each form has near forms that stay silent.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attention_harness import findings_of, fixed, load, rules_of, skip_reasons  # noqa: E402

from equivalence import compare_modules  # noqa: E402

pytestmark = pytest.mark.torch

RULES = rules_of("f09-fused-qkv")

LOCAL_WIDTHS = '''
import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim, dim_head=8, heads=4, kv_heads=2):
        super().__init__()
        self.heads, self.kv_heads, self.dim_head = heads, kv_heads, dim_head
        dim_inner = heads * dim_head
        dim_kv_inner = kv_heads * dim_head
        self.to_q = nn.Linear(dim, dim_inner, bias=False)
        self.to_k = nn.Linear(dim, dim_kv_inner, bias=False)
        self.to_v = nn.Linear(dim, dim_kv_inner, bias=False)
        self.to_out = nn.Linear(dim_inner, dim, bias=False)

    def split_heads(self, t):
        return t.view(t.shape[0], t.shape[1], -1, self.dim_head).transpose(1, 2)

    def forward(self, x):
        q = self.to_q(x)
        k = self.to_k(x)
        v = self.to_v(x)
        q, k, v = map(self.split_heads, (q, k, v))
        k, v = (t.repeat_interleave(self.heads // self.kv_heads, dim=1) for t in (k, v))
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        return self.to_out(out.transpose(1, 2).flatten(2))
'''

MODULE_DICT = '''
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.proj = nn.ModuleDict({name: nn.Linear(dim, dim, bias=False) for name in ("q", "k", "v", "o")})
        self.proj["up"] = nn.Linear(dim, 4 * dim, bias=False)

    def forward(self, x):
        q = self.proj["q"](x).unflatten(-1, (self.heads, -1)).transpose(1, 2)
        k = self.proj["k"](x).unflatten(-1, (self.heads, -1)).transpose(1, 2)
        v = self.proj["v"](x).unflatten(-1, (self.heads, -1)).transpose(1, 2)
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        return self.proj["o"](out.transpose(1, 2).flatten(2)) + self.proj["up"](x).sum(-1, keepdim=True)
'''


def _equivalent(source: str, new: str, cls: str, args: tuple[object, ...], inputs) -> None:
    torch.manual_seed(0)
    original = load(source, "orig")[cls](*args)
    rewritten = load(new, "new")[cls](*args)
    a, b = original.state_dict(), rewritten.state_dict()
    assert sorted(b) == sorted(a) and all(b[k].shape == a[k].shape for k in a)
    compare_modules(original, rewritten, inputs)
    original.load_state_dict(rewritten.state_dict(), strict=True)
    rewritten.load_state_dict(original.state_dict(), strict=True)


def _lines(source: str) -> list[int]:
    return [f.span.start_line + 1 for f in findings_of(source, RULES)]


def test_widths_written_as_init_locals_are_a_site_and_fused() -> None:
    line = LOCAL_WIDTHS.splitlines().index("        q = self.to_q(x)") + 1
    assert _lines(LOCAL_WIDTHS) == [line]
    new = fixed(LOCAL_WIDTHS, RULES, applied=1)
    assert "self.qkv_sizes = (dim_inner, dim_kv_inner, dim_kv_inner)" in new
    assert "q, k, v = self.qkv(x).split(self.qkv_sizes, dim=-1)" in new
    _equivalent(LOCAL_WIDTHS, new, "Attention", (16,), lambda: (torch.randn(2, 5, 16),))


@pytest.mark.parametrize("change", [
    # a local that holds another size, no factor shared with the query's (Perceiver's v_channels)
    ("dim_kv_inner = kv_heads * dim_head", "dim_kv_inner = dim // 2"),
    # a local bound under a condition: what it holds depends on the path
    ("dim_kv_inner = kv_heads * dim_head",
     "dim_kv_inner = dim // 2\n        if kv_heads:\n            dim_kv_inner = kv_heads * dim_head"),
    # a local bound twice
    ("dim_kv_inner = kv_heads * dim_head", "dim_kv_inner = dim // 2\n        dim_kv_inner = dim_kv_inner + 1"),
    # a local changed in place
    ("dim_kv_inner = kv_heads * dim_head", "dim_kv_inner = kv_heads * dim_head\n        dim_kv_inner //= 3"),
])
def test_widths_locals_that_are_not_one_shared_size_stay_silent(change: tuple[str, str]) -> None:
    source = LOCAL_WIDTHS.replace(*change)
    assert source != LOCAL_WIDTHS
    assert _lines(source) == [] and _lines(LOCAL_WIDTHS) != []


def test_module_dict_items_by_literal_key_are_a_site_without_a_fix() -> None:
    line = next(n for n, text in enumerate(MODULE_DICT.splitlines(), 1) if text.strip().startswith("q = "))
    found = findings_of(MODULE_DICT, RULES)
    assert [f.span.start_line + 1 for f in found] == [line]
    reasons = skip_reasons(MODULE_DICT, RULES)
    assert len(reasons) == 1 and "items of the container `self.proj`" in reasons[0], reasons


def test_module_dict_written_keys_are_a_site_too() -> None:
    source = MODULE_DICT.replace(
        'nn.ModuleDict({name: nn.Linear(dim, dim, bias=False) for name in ("q", "k", "v", "o")})',
        "nn.ModuleDict({'q': nn.Linear(dim, dim, bias=False), 'k': nn.Linear(dim, dim, bias=False), "
        "'v': nn.Linear(dim, dim, bias=False), 'o': nn.Linear(dim, dim, bias=False)})")
    assert source != MODULE_DICT
    assert len(findings_of(source, RULES)) == 1


@pytest.mark.parametrize("change", [
    # the value projection is the wider item: not one of three equal parts
    ('self.proj["v"](x)', 'self.proj["up"](x)'),
    # the keys come from an iterable that is not a literal: which item is which is not read
    ('for name in ("q", "k", "v", "o")', "for name in self.names"),
    # the value projection reads another input
    ('v = self.proj["v"](x)', 'v = self.proj["v"](x.flip(1))'),
    # a key given twice: the comprehension's "v", then assigned again (a wider Linear)
    ('self.proj["up"] = nn.Linear(dim, 4 * dim, bias=False)', 'self.proj["v"] = nn.Linear(dim, 4 * dim, bias=False)'),
])
def test_module_dict_near_forms_stay_silent(change: tuple[str, str]) -> None:
    source = MODULE_DICT.replace(*change)
    assert source != MODULE_DICT
    assert findings_of(source, RULES) == () and findings_of(MODULE_DICT, RULES) != ()
