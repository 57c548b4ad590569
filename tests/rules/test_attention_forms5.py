"""Family 10 forms of helper `fixcov5` (issue 25): finite `masked_fill` values, statements between the steps,
extra fills of the scores, keys laid out (..., d, n), einsums in another axis order.

Each fixable form is rewritten, exec'd next to the original and compared through `adopter.verify.compare.compare`
(what `adopter verify` runs: outputs, input gradients and every parameter gradient; float32 on CPU, tolerance
rtol 1e-4 of the tensor's scale + atol 1e-5 for outputs and 1e-4 for gradients), after a strict state-dict
load both ways, in eval and train mode (dropout 0), with seeds fixed. Masks include a batch element whose keys
are all masked: the row the finite fill treats differently from -inf. Each counter-example is declined with
its reason.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attention_harness import fixed, load, rules_of, skip_reasons  # noqa: E402

from adopter.verify.compare import compare  # noqa: E402

pytestmark = pytest.mark.torch

RULES = rules_of("f10-manual-attention-sdpa")


def _rearrange(t: torch.Tensor, pattern: str, **sizes: int) -> torch.Tensor:
    """The einops patterns these sources use, in torch (einops is not a dependency of the test suite)."""
    h = sizes.get("h")
    if pattern == "b n (h d) -> b h n d":
        return t.reshape(*t.shape[:2], h, -1).transpose(1, 2)
    if pattern == "b n (h d) -> b h d n":
        return t.reshape(*t.shape[:2], h, -1).permute(0, 2, 3, 1)
    if pattern == "b h n d -> b n (h d)":
        return t.transpose(1, 2).reshape(t.shape[0], t.shape[2], -1)
    if pattern == "b j -> b 1 1 j":
        return t[:, None, None, :]
    raise NotImplementedError(pattern)


@pytest.fixture(autouse=True)
def _einops(monkeypatch: pytest.MonkeyPatch) -> None:
    """`from einops import rearrange` in the exec'd sources: einops itself when installed, else `_rearrange`."""
    try:
        import einops  # noqa: F401
    except ImportError:
        import types

        module = types.ModuleType("einops")
        module.rearrange = _rearrange  # type: ignore[attr-defined]
        monkeypatch.setitem(__import__("sys").modules, "einops", module)


def _equivalent(source: str, new: str, cls: str, make, inputs, *, seeds=(0, 1)) -> None:
    """Build both classes with the same weights, load each state dict into the other strictly, compare."""
    torch.manual_seed(0)
    original = make(load(source, "orig")[cls])
    rewritten = make(load(new, "new")[cls])
    rewritten.load_state_dict(original.state_dict(), strict=True)
    original.load_state_dict(rewritten.state_dict(), strict=True)
    for train in (False, True):
        original.train(train)
        rewritten.train(train)
        for seed in seeds:
            torch.manual_seed(seed)
            args = inputs()
            result = compare(original, rewritten, (args, {}), seed=seed, dtype=torch.float32)
            assert result.equivalent, (train, seed, result)


# lucidrains style (x-transformers, vit-pytorch, imagen, ...): the mask reshaped and the fill computed between the
# steps, under `if exists(mask):`, filled with the most negative float.
LUCIDRAINS = """
import torch
from einops import rearrange
from torch import einsum, nn


def exists(val):
    return val is not None


class Attention(nn.Module):
    def __init__(self, dim, heads=4, dim_head=8, dropout=0.0):
        super().__init__()
        inner_dim = dim_head * heads
        self.heads = heads
        self.scale = dim_head ** -0.5
        self.to_q = nn.Linear(dim, inner_dim, bias=False)
        self.to_kv = nn.Linear(dim, inner_dim * 2, bias=False)
        self.dropout = nn.Dropout(dropout)
        self.to_out = nn.Linear(inner_dim, dim)

    def forward(self, x, mask=None):
        h = self.heads
        q, k, v = (self.to_q(x), *self.to_kv(x).chunk(2, dim=-1))
        q, k, v = map(lambda t: rearrange(t, "b n (h d) -> b h n d", h=h), (q, k, v))
        sim = einsum("b h i d, b h j d -> b h i j", q, k) * self.scale
        if exists(mask):
            mask = rearrange(mask, "b j -> b 1 1 j")
            max_neg_value = -torch.finfo(sim.dtype).max
            sim = sim.masked_fill(~mask, max_neg_value)
        attn = sim.softmax(dim=-1)
        attn = self.dropout(attn)
        out = einsum("b h i j, b h j d -> b h i d", attn, v)
        out = rearrange(out, "b h n d -> b n (h d)")
        return self.to_out(out)
"""


def _key_mask(batch: int = 3, n: int = 6) -> torch.Tensor:
    """Keys to attend: the first element all, the second a prefix, the last none (a fully masked row)."""
    keep = torch.ones(batch, n, dtype=torch.bool)
    keep[1, n // 2:] = False
    keep[-1] = False
    return keep


def test_lucidrains_finite_fill_under_exists_is_rewritten_and_equivalent() -> None:
    new = fixed(LUCIDRAINS, RULES, applied=1)
    assert "masked_fill_attention(" in new and "masked = ~mask" in new and "finfo" not in new.split("class")[1], new
    assert 'mask = rearrange(mask, "b j -> b 1 1 j")' in new  # the statement between the steps stays
    make = lambda cls: cls(16)  # noqa: E731
    _equivalent(LUCIDRAINS, new, "Attention", make, lambda: (torch.randn(3, 6, 16), _key_mask()))
    _equivalent(LUCIDRAINS, new, "Attention", make, lambda: (torch.randn(3, 6, 16),))


# Two fills, each under its own condition (a padding mask and an optional causal mask), and the `-1e9` of the
# Annotated Transformer written in place (`masked_fill_`).
TWO_FILLS = """
import math

import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, dim * 3)

    def forward(self, x, mask=None, causal=None):
        b, n, c = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
        if mask is not None:
            scores = scores.masked_fill(mask[:, None, None, :] == 0, -1e9)
        if causal is not None:
            scores.masked_fill_(causal, -1e9)
        probs = scores.softmax(dim=-1)
        return torch.matmul(probs, v).transpose(1, 2).reshape(b, n, c)
"""


def test_two_conditional_finite_fills_are_one_mask_and_equivalent() -> None:
    new = fixed(TWO_FILLS, RULES, applied=1)
    assert "masked = None" in new and "masked | causal" in new, new
    causal = torch.ones(6, 6, dtype=torch.bool).triu(1)
    make = lambda cls: cls(8)  # noqa: E731
    _equivalent(TWO_FILLS, new, "Attention", make, lambda: (torch.randn(3, 6, 8), _key_mask().long(), causal))
    _equivalent(TWO_FILLS, new, "Attention", make, lambda: (torch.randn(3, 6, 8), _key_mask().long()))
    _equivalent(TWO_FILLS, new, "Attention", make, lambda: (torch.randn(3, 6, 8),))


GUARDED_INF = """
import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, dim * 3)

    def forward(self, x, mask=None):
        q, k, v = self.qkv(x).unsqueeze(1).chunk(3, dim=-1)
        s = q @ k.transpose(-2, -1) * 0.125
        if mask is not None:
            s = s.masked_fill(mask, float("-inf"))
        p = s.softmax(dim=-1)
        return p @ v
"""


def test_a_guarded_inf_fill_passes_none_when_there_is_no_mask() -> None:
    # Before: `attn_mask=~mask`, a TypeError when `mask` is None (the original skips the step then).
    new = fixed(GUARDED_INF, RULES, applied=1)
    assert "attn_mask=None if mask is None else ~mask" in new, new
    causal = torch.ones(5, 5, dtype=torch.bool).triu(1)
    make = lambda cls: cls(8)  # noqa: E731
    _equivalent(GUARDED_INF, new, "Attention", make, lambda: (torch.randn(2, 5, 8),))
    _equivalent(GUARDED_INF, new, "Attention", make, lambda: (torch.randn(2, 5, 8), causal))


GUARDED_FINITE = GUARDED_INF.replace('float("-inf")', "-1e4")


def test_a_guarded_finite_fill_hands_the_helper_its_none() -> None:
    new = fixed(GUARDED_FINITE, RULES, applied=1)
    assert "masked_fill_attention(q, k, v, mask, scale=0.125)" in new, new
    rows = torch.zeros(5, 5, dtype=torch.bool)
    rows[2] = True  # a query row with every key masked
    make = lambda cls: cls(8)  # noqa: E731
    _equivalent(GUARDED_FINITE, new, "Attention", make, lambda: (torch.randn(2, 5, 8),))
    _equivalent(GUARDED_FINITE, new, "Attention", make, lambda: (torch.randn(2, 5, 8), rows))


# Statements between the steps that touch none of the chain's values: a relative position bias computed after
# the product (Swin), a value rescaled after the softmax.
BETWEEN = """
import torch
from torch import nn


class WindowAttention(nn.Module):
    def __init__(self, dim, window, heads):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.table = nn.Parameter(torch.randn(window * window * window * window, heads) * 0.02)
        self.qkv = nn.Linear(dim, dim * 3)

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        q = q * self.scale
        attn = q @ k.transpose(-2, -1)
        # the bias of each pair of positions, per head
        bias = self.table[: n * n].view(n, n, -1).permute(2, 0, 1).contiguous()
        attn = attn + bias.unsqueeze(0)
        attn = attn.softmax(dim=-1)
        v = v * 2.0
        return (attn @ v).transpose(1, 2).reshape(b, n, c)
"""


def test_statements_between_the_steps_stay_where_they_are() -> None:
    new = fixed(BETWEEN, RULES, applied=1)
    assert "# the bias of each pair of positions, per head\n        bias = self.table" in new, new
    assert "v = v * 2.0" in new and "attn_mask=bias.unsqueeze(0)" in new, new
    _equivalent(BETWEEN, new, "WindowAttention", lambda cls: cls(16, 4, 4), lambda: (torch.randn(2, 16, 16),))


# Keys laid out (..., d, n): Whisper's `permute(0, 2, 3, 1) * scale`, einops to `b h d n`.
WHISPER_KEYS = """
import torch
import torch.nn.functional as F
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, n_state, n_head):
        super().__init__()
        self.n_head = n_head
        self.query = nn.Linear(n_state, n_state)
        self.key = nn.Linear(n_state, n_state, bias=False)
        self.value = nn.Linear(n_state, n_state)

    def forward(self, x, mask=None):
        n_ctx = x.shape[1]
        scale = (x.shape[-1] // self.n_head) ** -0.25
        q = self.query(x).view(*x.shape[:2], self.n_head, -1).permute(0, 2, 1, 3) * scale
        k = self.key(x).view(*x.shape[:2], self.n_head, -1).permute(0, 2, 3, 1) * scale
        v = self.value(x).view(*x.shape[:2], self.n_head, -1).permute(0, 2, 1, 3)
        qk = q @ k
        if mask is not None:
            qk = qk + mask[:n_ctx, :n_ctx]
        w = F.softmax(qk.float(), dim=-1).to(q.dtype)
        return (w @ v).permute(0, 2, 1, 3).flatten(start_dim=2)
"""

REARRANGED_KEYS = """
import torch
from einops import rearrange
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim, heads=4):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)

    def forward(self, x):
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q = rearrange(q, "b n (h d) -> b h n d", h=self.heads)
        k = rearrange(k, "b n (h d) -> b h d n", h=self.heads)
        v = rearrange(v, "b n (h d) -> b h n d", h=self.heads)
        attn = torch.matmul(q, k) * self.scale
        attn = attn.softmax(dim=-1)
        out = torch.matmul(attn, v)
        return rearrange(out, "b h n d -> b n (h d)")
"""


@pytest.mark.parametrize(("source", "cls", "kept"), [
    (WHISPER_KEYS, "MultiHeadAttention", ".permute(0, 2, 3, 1) * scale"),
    (REARRANGED_KEYS, "Attention", '"b n (h d) -> b h d n"'),
], ids=["whisper-permute-scaled", "einops-b-h-d-n"])
def test_keys_laid_out_d_before_n_are_rewritten_and_equivalent(source: str, cls: str, kept: str) -> None:
    new = fixed(source, RULES, applied=1)
    assert "k.transpose(-2, -1)" in new and kept in new, new  # the layout statement stays as written
    causal = torch.full((5, 5), float("-inf")).triu(1)
    _equivalent(source, new, cls, lambda c: c(16, 4), lambda: (torch.randn(2, 5, 16),))
    if "mask" in source:
        _equivalent(source, new, cls, lambda c: c(16, 4), lambda: (torch.randn(2, 5, 16), causal))


# einsums naming every axis in another order: the "transformer from scratch" tutorial (heads third) and the
# Informer/Autoformer time-series form (length first).
LENGTH_FIRST = """
import math

import torch
from torch import nn


class FullAttention(nn.Module):
    def __init__(self, attention_dropout=0.0):
        super().__init__()
        self.dropout = nn.Dropout(attention_dropout)

    def forward(self, queries, keys, values):
        B, L, H, E = queries.shape
        scale = 1.0 / math.sqrt(E)
        scores = torch.einsum("blhe,bshe->bhls", queries, keys)
        A = self.dropout(torch.softmax(scale * scores, dim=-1))
        V = torch.einsum("bhls,bshd->blhd", A, values)
        return V.contiguous()
"""

HEADS_THIRD = """
import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, embed_size, heads):
        super().__init__()
        self.heads = heads
        self.head_dim = embed_size // heads
        self.keys = nn.Linear(embed_size, embed_size)
        self.queries = nn.Linear(embed_size, embed_size)
        self.values = nn.Linear(embed_size, embed_size)

    def forward(self, x, mask=None):
        n, length, _ = x.shape
        values = self.values(x).reshape(n, length, self.heads, self.head_dim)
        keys = self.keys(x).reshape(n, length, self.heads, self.head_dim)
        queries = self.queries(x).reshape(n, length, self.heads, self.head_dim)
        energy = torch.einsum("nqhd,nkhd->nhqk", [queries, keys]) * self.head_dim ** -0.5
        if mask is not None:
            energy = energy.masked_fill(mask == 0, float("-1e20"))
        attention = torch.softmax(energy, dim=-1)
        out = torch.einsum("nhql,nlhd->nqhd", [attention, values])
        return out.reshape(n, length, self.heads * self.head_dim)
"""


def test_einsums_in_another_axis_order_are_permuted_and_equivalent() -> None:
    new = fixed(LENGTH_FIRST, RULES, applied=1)
    assert "queries.transpose(1, 2)" in new and ").transpose(1, 2)" in new, new
    _equivalent(LENGTH_FIRST, new, "FullAttention", lambda cls: cls(),
                lambda: (torch.randn(2, 5, 3, 8), torch.randn(2, 7, 3, 8), torch.randn(2, 7, 3, 4)))
    new = fixed(HEADS_THIRD, RULES, applied=1)
    assert "masked_fill_attention(" in new and "[queries, keys]" not in new, new
    mask = _key_mask(2, 5).long()[:, None, None, :]
    _equivalent(HEADS_THIRD, new, "SelfAttention", lambda cls: cls(16, 2), lambda: (torch.randn(2, 5, 16), mask))


# taming-transformers / latent-diffusion `AttnBlock` (copied into many VAE and UNet codebases): channels-first
# keys read as they are, values multiplied from the left by the transposed probabilities.
CHANNELS_FIRST = """
import torch
from torch import nn


class AttnBlock(nn.Module):
    def __init__(self, in_channels):
        super().__init__()
        self.norm = nn.GroupNorm(4, in_channels)
        self.q = nn.Conv2d(in_channels, in_channels, 1)
        self.k = nn.Conv2d(in_channels, in_channels, 1)
        self.v = nn.Conv2d(in_channels, in_channels, 1)
        self.proj_out = nn.Conv2d(in_channels, in_channels, 1)

    def forward(self, x):
        h_ = self.norm(x)
        q = self.q(h_)
        k = self.k(h_)
        v = self.v(h_)

        # compute attention
        b, c, h, w = q.shape
        q = q.reshape(b, c, h * w)
        q = q.permute(0, 2, 1)   # b,hw,c
        k = k.reshape(b, c, h * w)  # b,c,hw
        w_ = torch.bmm(q, k)     # b,hw,hw    w[b,i,j]=sum_c q[b,i,c]k[b,c,j]
        w_ = w_ * (int(c) ** (-0.5))
        w_ = torch.nn.functional.softmax(w_, dim=2)

        # attend to values
        v = v.reshape(b, c, h * w)
        w_ = w_.permute(0, 2, 1)   # b,hw,hw (first hw of k, second of q)
        h_ = torch.bmm(v, w_)     # b, c,hw (hw of q) h_[b,c,j] = sum_i v[b,c,i] w_[b,i,j]
        h_ = h_.reshape(b, c, h, w)

        h_ = self.proj_out(h_)

        return x + h_
"""


def test_channels_first_attention_block_is_rewritten_and_equivalent() -> None:
    new = fixed(CHANNELS_FIRST, RULES, applied=1)
    assert "k.transpose(-2, -1)" in new and "v.transpose(-2, -1)" in new and "w_" not in new.split("reshape(b, c, h * w)\n")[-1], new
    _equivalent(CHANNELS_FIRST, new, "AttnBlock", lambda cls: cls(8), lambda: (torch.randn(2, 8, 4, 5),))


# -- counter-examples: declined, with the reason ------------------------------------------------------------------

PROBS_READ_AFTER = CHANNELS_FIRST.replace("        return x + h_", "        return x + h_, w_")

SHAPE_READ = LUCIDRAINS.replace(
    '            sim = sim.masked_fill(~mask, max_neg_value)\n',
    '            sim = sim.masked_fill(~mask, max_neg_value)\n        i, j = sim.shape[-2:]\n'
    '        causal = torch.ones((i, j), dtype=torch.bool).triu(j - i + 1)\n'
    '        sim = sim.masked_fill(causal, -torch.finfo(sim.dtype).max)\n',
)
Q_REBOUND = BETWEEN.replace("        v = v * 2.0\n", "        q = q * 2.0\n        v = v * 2.0\n")
K_IN_PLACE = BETWEEN.replace("        v = v * 2.0\n", "        k.mul_(2.0)\n")
SMALL_FILL = GUARDED_INF.replace('float("-inf")', "-100.0")
FILL_BY_BRANCH = GUARDED_INF.replace(
    "        self.qkv = nn.Linear(dim, dim * 3)\n",
    "        self.qkv = nn.Linear(dim, dim * 3)\n        if dim > 4:\n            self.fill = -1e9\n"
    "        else:\n            self.fill = float(\"-inf\")\n",
).replace('float("-inf"))', "self.fill)")
MIXED = TWO_FILLS.replace("            scores.masked_fill_(causal, -1e9)\n", "            scores = scores + causal\n")
FILL_ALSO_READ = LUCIDRAINS.replace("        return self.to_out(out)", "        return self.to_out(out) * max_neg_value")
FILL_USED_LATER = LUCIDRAINS.replace(
    "        return self.to_out(out)", "        return self.to_out(out).masked_fill(x == 0, max_neg_value)")
RETURNS_BETWEEN = BETWEEN.replace("        v = v * 2.0\n", "        if v is None:\n            return x\n")


@pytest.mark.parametrize(("source", "why"), [
    (SHAPE_READ, "reads `sim`, a value of the chain"),
    (Q_REBOUND, "`q` is rebound on line"),
    (K_IN_PLACE, "`k` is rebound on line"),
    (SMALL_FILL, "neither -inf nor a large negative number"),
    (FILL_BY_BRANCH, "neither -inf nor a large negative number"),
    (MIXED, "does not take (`+`)"),
    (FILL_ALSO_READ, "reads `sim`, a value of the chain"),
    (FILL_USED_LATER, "reads `sim`, a value of the chain"),
    (RETURNS_BETWEEN, "changes where the function goes"),
    (PROBS_READ_AFTER, "the attention probabilities `w_` are returned"),
], ids=["scores-shape-read", "q-rebound-after-the-product", "k-changed-in-place", "fill--100", "fill-by-branch",
        "added-and-filled", "fill-value-read-after", "fill-value-filling-later", "return-between", "transposed-probabilities-returned"])
def test_forms_that_cannot_be_one_call_are_declined(source: str, why: str) -> None:
    reasons = skip_reasons(source, RULES)
    assert reasons and all(why in r for r in reasons), reasons
