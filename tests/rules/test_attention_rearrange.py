"""Family 10 with the probabilities transposed by einops (helper `mech18`, issue 20): CompVis latent-diffusion's
`SpatialSelfAttention` (audioldm 0.1.1 `latent_diffusion/attention.py`, the same block in CompVis
`ldm/modules/attention.py`) lays q out `(b, hw, c)` and k, v channels-first `(b, c, hw)` with `rearrange`, takes
`einsum("bij,bjk->bik", q, k)`, softmax over the keys, then `w_ = rearrange(w_, "b i j -> b j i")` and
`einsum("bij,bjk->bik", v, w_)`: `v @ pᵀ`, SDPA's output transposed. The canonical pass reads a rearrange that
only swaps the last two axes as `transpose(-2, -1)`; before it the chain stopped at that statement.

The rewrite is exec'd next to the original and compared through `adopter.verify.compare.compare` (outputs, input
and parameter gradients, float32 on CPU), after a strict state-dict load both ways, in eval and train mode.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attention_harness import findings_of, fixed, load, rules_of, skip_reasons  # noqa: E402

from adopter.analysis.canonical.normalise import swaps_last_two  # noqa: E402
from adopter.verify.compare import compare  # noqa: E402

pytestmark = pytest.mark.torch

RULES = rules_of("f10-manual-attention-sdpa")


def _rearrange(t: torch.Tensor, pattern: str, **sizes: int) -> torch.Tensor:
    """The einops patterns these sources use, in torch (einops is not a dependency of the test suite)."""
    if pattern == "b c h w -> b (h w) c":
        return t.flatten(2).transpose(1, 2)
    if pattern == "b c h w -> b c (h w)":
        return t.flatten(2)
    if pattern in ("b i j -> b j i", "... i j -> ... j i"):
        return t.transpose(-2, -1)
    if pattern == "b c (h w) -> b c h w":
        return t.unflatten(2, (sizes["h"], -1))
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


SPATIAL = """
import torch
from einops import rearrange
from torch import nn


class SpatialSelfAttention(nn.Module):
    def __init__(self, in_channels):
        super().__init__()
        self.in_channels = in_channels
        self.norm = nn.GroupNorm(4, in_channels)
        self.q = torch.nn.Conv2d(in_channels, in_channels, kernel_size=1, stride=1, padding=0)
        self.k = torch.nn.Conv2d(in_channels, in_channels, kernel_size=1, stride=1, padding=0)
        self.v = torch.nn.Conv2d(in_channels, in_channels, kernel_size=1, stride=1, padding=0)
        self.proj_out = torch.nn.Conv2d(in_channels, in_channels, kernel_size=1, stride=1, padding=0)

    def forward(self, x):
        h_ = x
        h_ = self.norm(h_)
        q = self.q(h_)
        k = self.k(h_)
        v = self.v(h_)

        # compute attention
        b, c, h, w = q.shape
        q = rearrange(q, "b c h w -> b (h w) c")
        k = rearrange(k, "b c h w -> b c (h w)")
        w_ = torch.einsum("bij,bjk->bik", q, k)

        w_ = w_ * (int(c) ** (-0.5))
        w_ = torch.nn.functional.softmax(w_, dim=2)

        # attend to values
        v = rearrange(v, "b c h w -> b c (h w)")
        w_ = rearrange(w_, "b i j -> b j i")
        h_ = torch.einsum("bij,bjk->bik", v, w_)
        h_ = rearrange(h_, "b c (h w) -> b c h w", h=h)
        h_ = self.proj_out(h_)

        return x + h_
"""


LUCIDRAINS_TRANSPOSED = """
import torch
from einops import rearrange
from torch import einsum, nn


class Attention(nn.Module):
    def __init__(self, dim, heads=8):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5

    def forward(self, q, k, v):
        sim = einsum("b h i d, b h j d -> b h i j", q, k) * self.scale
        attn = sim.softmax(dim=-1)
        attn = rearrange(attn, "b h i j -> b h j i")
        return einsum("b h i j, b h j d -> b h i d", attn, v)
"""


def _attention(source: str) -> list[tuple[bool, str | None]]:
    return [(f.fixable, f.no_fix_reason) for f in findings_of(source, RULES)]


@pytest.mark.parametrize("source", [
    SPATIAL,
    SPATIAL.replace('"b i j -> b j i"', '"... i j -> ... j i"'),
    SPATIAL.replace("from einops import rearrange", "import einops\nfrom einops import rearrange").replace(
        'w_ = rearrange(w_, "b i j -> b j i")', 'w_ = einops.rearrange(w_, "b i j -> b j i")'),
], ids=["compvis", "ellipsis", "module-attribute"])
def test_probabilities_transposed_by_rearrange_are_rewritten_and_equivalent(source: str) -> None:
    assert _attention(source) == [(True, None)]
    new = fixed(source, RULES, applied=1)
    assert "rearrange(w_" not in new and "scaled_dot_product_attention(" in new
    torch.manual_seed(0)
    original = load(source, "orig")["SpatialSelfAttention"](8)
    rewritten = load(new, "new")["SpatialSelfAttention"](8)
    for p in original.parameters():
        torch.nn.init.normal_(p, std=0.3)
    rewritten.load_state_dict(original.state_dict(), strict=True)
    original.load_state_dict(rewritten.state_dict(), strict=True)
    for train in (False, True):
        original.train(train)
        rewritten.train(train)
        for seed in (0, 1):
            torch.manual_seed(seed)
            result = compare(original, rewritten, ((torch.randn(2, 8, 3, 5),), {}), seed=seed, dtype=torch.float32)
            assert result.equivalent, (train, seed, result)


@pytest.mark.parametrize("source", [
    # the probabilities not transposed: `v @ p` contracts over the queries' axis, another product
    SPATIAL.replace('        w_ = rearrange(w_, "b i j -> b j i")\n', ""),
    # a rearrange that is no swap of the last two axes (the batch axis moved): not `pᵀ`
    SPATIAL.replace('"b i j -> b j i"', '"b i j -> i b j"'),
    # the softmax over the queries' axis, then transposed: not attention over the keys
    SPATIAL.replace("softmax(w_, dim=2)", "softmax(w_, dim=1)"),
    # lucidrains-style heads with the probabilities transposed before `p @ v`: `pᵀ @ v` contracts over the queries
    LUCIDRAINS_TRANSPOSED,
], ids=["untransposed", "other-permutation", "softmax-over-queries", "transposed-then-left"])
def test_other_rearranges_of_the_probabilities_are_not_attention(source: str) -> None:
    assert _attention(source) == []


def test_transposed_probabilities_read_after_the_chain_are_reported_without_a_fix() -> None:
    source = SPATIAL.replace("return x + h_", "return x + h_, w_")
    [reason] = skip_reasons(source, RULES)
    assert "the attention probabilities `w_` are returned" in reason, reason


@pytest.mark.parametrize(("pattern", "swaps"), [
    ('"b i j -> b j i"', True),
    ("'b h i j->b h j i'", True),
    ('"... i j -> ... j i"', True),
    ('"b i j -> b i j"', False),
    ('"b i j -> j i b"', False),
    ('"b (h i) j -> b j (h i)"', False),
    ('"b i j -> b j i k"', False),
    ('"b i i -> b i i"', False),
    ('f"b i j -> b j i"', False),
    ('"bij -> bji"', False),
])
def test_a_rearrange_is_a_transpose_only_when_it_swaps_the_last_two_axes(pattern: str, swaps: bool) -> None:
    assert swaps_last_two(pattern) is swaps
