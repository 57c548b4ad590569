"""Attention whose matrix products are written in another operand order or layout (the canonical pass's
`product_layouts`): reported by f10 and rewritten to SDPA with the operands transposed to (..., n, d).

- taming-transformers-rom1504 0.0.6 `taming/modules/diffusionmodules/model.py` `AttnBlock` (the
  channels-first attention block of VQGAN / latent-diffusion code): `bmm(q.permute(0, 2, 1), k)` with
  `k` reshaped `(b, c, hw)`, softmax over the keys, then `bmm(v, w_.permute(0, 2, 1))`;
- timm 1.0.12 `timm/models/efficientformer_v2.py` `Attention2dDownsample`: keys reshaped
  `(B, heads, d, N)` and left in place by an identity `permute(0, 1, 2, 3)`, `(q @ k) * scale`, an
  additive bias, softmax, `attn @ v`.
- torchcfm 1.0.7 `torchcfm/models/unet/unet.py` `QKVAttentionLegacy` (guided-diffusion's channels-first
  attention, copied into many diffusion UNets): `einsum("bct,bcs->bts", q * scale, k * scale)`, softmax
  in fp32 and cast back, `einsum("bts,bcs->bct", weight, v)`: the einsum pass transposes `q`, and the keys
  `(b, c, s)` are read through two transposes; `sdpa_chain` permutes the einsum's operands (helper `fixcov5`).
"""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules

HEADER = "import torch\nfrom torch import nn\n\n\n"

CHANNELS_FIRST = '''
class AttnBlock(nn.Module):
    def __init__(self, in_channels):
        super().__init__()
        self.q = torch.nn.Conv2d(in_channels, in_channels, kernel_size=1, stride=1, padding=0)
        self.k = torch.nn.Conv2d(in_channels, in_channels, kernel_size=1, stride=1, padding=0)
        self.v = torch.nn.Conv2d(in_channels, in_channels, kernel_size=1, stride=1, padding=0)
        self.proj_out = torch.nn.Conv2d(in_channels, in_channels, kernel_size=1, stride=1, padding=0)

    def forward(self, x):
        h_ = x
        q = self.q(h_)
        k = self.k(h_)
        v = self.v(h_)

        # compute attention
        b,c,h,w = q.shape
        q = q.reshape(b,c,h*w)
        q = q.permute(0,2,1)   # b,hw,c
        k = k.reshape(b,c,h*w) # b,c,hw
        w_ = torch.bmm(q,k)     # b,hw,hw    w[b,i,j]=sum_c q[b,i,c]k[b,c,j]
        w_ = w_ * (int(c)**(-0.5))
        w_ = torch.nn.functional.softmax(w_, dim=2)

        # attend to values
        v = v.reshape(b,c,h*w)
        w_ = w_.permute(0,2,1)   # b,hw,hw (first hw of k, second of q)
        h_ = torch.bmm(v,w_)     # b, c,hw (hw of q) h_[b,c,j] = sum_i v[b,c,i] w_[b,i,j]
        h_ = h_.reshape(b,c,h,w)

        h_ = self.proj_out(h_)

        return x+h_
'''

KEYS_D_FIRST = '''
class Attention2dDownsample(nn.Module):
    def __init__(self, dim=384, key_dim=16, num_heads=8, attn_ratio=4, resolution=7):
        super().__init__()
        self.num_heads = num_heads
        self.scale = key_dim ** -0.5
        self.N = resolution ** 2
        self.q = nn.Conv2d(dim, key_dim * num_heads, 1)
        self.k = nn.Conv2d(dim, key_dim * num_heads, 1)
        self.v = nn.Conv2d(dim, key_dim * num_heads * attn_ratio, 1)
        self.attention_biases = nn.Parameter(torch.zeros(num_heads, self.N))

    def forward(self, x):
        B, C, H, W = x.shape

        q = self.q(x).reshape(B, self.num_heads, -1, self.N).permute(0, 1, 3, 2)
        k = self.k(x).reshape(B, self.num_heads, -1, self.N).permute(0, 1, 2, 3)
        v = self.v(x)
        v = v.reshape(B, self.num_heads, -1, self.N).permute(0, 1, 3, 2)

        attn = (q @ k) * self.scale
        attn = attn + self.attention_biases
        attn = attn.softmax(dim=-1)

        x = (attn @ v).transpose(2, 3)
        return x
'''


QKV_LEGACY = '''
import math


class QKVAttentionLegacy(nn.Module):
    def __init__(self, n_heads):
        super().__init__()
        self.n_heads = n_heads

    def forward(self, qkv):
        bs, width, length = qkv.shape
        assert width % (3 * self.n_heads) == 0
        ch = width // (3 * self.n_heads)
        q, k, v = qkv.reshape(bs * self.n_heads, ch * 3, length).split(ch, dim=1)
        scale = 1 / math.sqrt(math.sqrt(ch))
        weight = torch.einsum(
            "bct,bcs->bts", q * scale, k * scale
        )  # More stable with f16 than dividing afterwards
        weight = torch.softmax(weight.float(), dim=-1).type(weight.dtype)
        a = torch.einsum("bts,bcs->bct", weight, v)
        return a.reshape(bs, -1, length)
'''

# The keys handed in already laid out (bs, heads, d_k, n) by the caller (PatchTST's
# `_ScaledDotProductAttention`, copied into tsai, neuralforecast, nnts: `k_s = W_K(K).view(...).permute(0, 2, 3, 1)`
# in another class): the product's right operand is a forward input, not a local.
KEYS_HANDED_IN = '''
class ScaledDotProductAttention(nn.Module):
    def __init__(self, d_model, n_heads, attn_dropout=0.0):
        super().__init__()
        self.attn_dropout = nn.Dropout(attn_dropout)
        self.scale = (d_model // n_heads) ** -0.5

    def forward(self, q, k, v, prev=None):
        attn_scores = torch.matmul(q, k) * self.scale
        if prev is not None:
            attn_scores = attn_scores + prev
        attn_weights = torch.nn.functional.softmax(attn_scores, dim=-1)
        attn_weights = self.attn_dropout(attn_weights)
        return torch.matmul(attn_weights, v)
'''


def test_keys_handed_in_laid_out_are_reported() -> None:
    assert [rule for rule, _, _ in attention(KEYS_HANDED_IN)] == ["f10-manual-attention-sdpa"]
    # counter-examples: the softmax over the queries; the keys a learned table, not an input
    assert attention(KEYS_HANDED_IN.replace("dim=-1", "dim=-2")) == []
    assert attention(KEYS_HANDED_IN.replace("torch.matmul(q, k)", "torch.matmul(q, self.table)").replace(
        "self.scale = ", "self.table = nn.Parameter(torch.zeros(8, 8))\n        self.scale = ")) == []


def test_keys_handed_in_laid_out_are_rewritten_and_equivalent() -> None:
    # SDPA gets the handed-in keys as `k.transpose(-2, -1)`; compared as `adopter verify` compares, on the
    # layout PatchTST's caller hands in: q (bs, h, n, d), k (bs, h, d, n), v (bs, h, n, d)
    torch = pytest.importorskip("torch")
    import sys
    import types

    from adopter.session import rewrite
    from adopter.synth import Rewritten
    from adopter.verify.compare import compare

    assert [(rule, fixable) for rule, fixable, _ in attention(KEYS_HANDED_IN)] == [("f10-manual-attention-sdpa", True)]
    env = Environment("cpu", frozenset(), "2.13.0")
    rules = [r for r in load_rules().rules if r.family == 10]
    source = HEADER + KEYS_HANDED_IN
    findings = [f for f in check(analyse(source, "m.py"), rules, env).findings if f.family == 10]
    out = rewrite(source, findings, rules=rules, env=env, path="m.py")
    assert isinstance(out, Rewritten) and len(out.applied) == 1 and "scaled_dot_product_attention(" in out.new_source
    assert "k.transpose(-2, -1)" in out.new_source, out.new_source
    modules = []
    for name, text in (("orig", source), ("new", out.new_source)):
        module = types.ModuleType(f"handed_{name}")
        sys.modules[module.__name__] = module
        exec(compile(text, f"<{name}>", "exec"), module.__dict__)
        modules.append(module.ScaledDotProductAttention(16, 4))
    original, rewritten = modules
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 4, 5, 4), torch.randn(2, 4, 4, 7), torch.randn(2, 4, 7, 3)
    for train in (False, True):
        original.train(train)
        rewritten.train(train)
        result = compare(original, rewritten, ((q, k, v), {}), seed=0, dtype=torch.float32)
        assert result.equivalent, result


def test_channels_first_einsum_attention_is_reported() -> None:
    assert [rule for rule, _, _ in attention(QKV_LEGACY)] == ["f10-manual-attention-sdpa"]
    # counter-example: the probabilities contracted over the queries' axis, not the keys'
    assert attention(QKV_LEGACY.replace('"bts,bcs->bct", weight, v', '"bts,bct->bcs", weight, v')) == []


def attention(code: str) -> list[tuple[str, bool, str | None]]:
    env = Environment("cpu", frozenset(), "2.13.0")
    found = check(analyse(HEADER + code, "m.py"), load_rules().rules, env).findings
    return [(f.rule_id, f.fixable, f.no_fix_reason) for f in found if f.family == 10]


@pytest.mark.parametrize(("code", "cls", "make", "shape"), [
    (CHANNELS_FIRST, "AttnBlock", lambda c: c(8), (2, 8, 4, 5)),
    (KEYS_D_FIRST, "Attention2dDownsample", lambda c: c(dim=16, key_dim=2, num_heads=9, attn_ratio=2, resolution=3),
     (2, 16, 3, 3)),
    (QKV_LEGACY, "QKVAttentionLegacy", lambda c: c(2), (2, 24, 7)),
], ids=["channels-first-bmm", "keys-d-first", "channels-first-einsum"])
def test_attention_in_another_layout_is_rewritten_and_equivalent(code: str, cls: str, make, shape) -> None:
    # fixcov5: SDPA gets the keys as `k.transpose(-2, -1)` (and the values and output transposed for
    # `bmm(v, pᵀ)`, the einsum's operands permuted), compared as `adopter verify` compares (fp32, CPU, strict load).
    torch = pytest.importorskip("torch")
    import sys
    import types

    from adopter.session import rewrite
    from adopter.synth import Rewritten
    from adopter.verify.compare import compare

    found = attention(code)
    assert [(rule, fixable) for rule, fixable, _ in found] == [("f10-manual-attention-sdpa", True)], found
    env = Environment("cpu", frozenset(), "2.13.0")
    rules = [r for r in load_rules().rules if r.family == 10]
    source = HEADER + code
    findings = [f for f in check(analyse(source, "m.py"), rules, env).findings if f.family == 10]
    out = rewrite(source, findings, rules=rules, env=env, path="m.py")
    assert isinstance(out, Rewritten) and len(out.applied) == 1 and "scaled_dot_product_attention(" in out.new_source
    modules = []
    for name, text in (("orig", source), ("new", out.new_source)):
        module = types.ModuleType(f"layouts_{name}")
        sys.modules[module.__name__] = module
        exec(compile(text, f"<{name}>", "exec"), module.__dict__)
        torch.manual_seed(0)
        modules.append(make(getattr(module, cls)))
    original, rewritten = modules
    for p in original.parameters():
        torch.nn.init.normal_(p, std=0.3)  # the biases table starts at zero
    rewritten.load_state_dict(original.state_dict(), strict=True)
    for train in (False, True):
        original.train(train)
        rewritten.train(train)
        result = compare(original, rewritten, ((torch.randn(*shape),), {}), seed=0, dtype=torch.float32)
        assert result.equivalent, result


@pytest.mark.parametrize("code", [
    # the right operand is a parameter, not a local the forward computes (a learned query/key table)
    KEYS_D_FIRST.replace("attn = (q @ k) * self.scale", "attn = (q @ self.attention_biases) * self.scale"),
    # a mixing layer between the scores and the softmax (talking heads): not one attention kernel
    KEYS_D_FIRST.replace("attn = attn.softmax(dim=-1)", "attn = self.q(attn).softmax(dim=-1)"),
    # the probabilities over the other axis (a softmax over the queries) multiplied from the left
    CHANNELS_FIRST.replace("softmax(w_, dim=2)", "softmax(w_, dim=1)"),
    # the values multiplied by the probabilities untransposed from the left: another contraction
    CHANNELS_FIRST.replace("w_ = w_.permute(0,2,1)   # b,hw,hw (first hw of k, second of q)\n", ""),
], ids=["parameter-keys", "talking-heads", "softmax-over-queries", "probabilities-untransposed"])
def test_products_that_are_not_attention_are_not_reported(code: str) -> None:
    assert attention(code) == []
