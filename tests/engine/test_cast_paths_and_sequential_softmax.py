"""Two dev2 misses of issue 20 (helper `mech33`), each with a near form that must stay silent.

- tortoise-tts 3.0.0 `tortoise/models/arch_util.py:65` (guided-diffusion's `QKVAttentionLegacy`): the
  probabilities are cast back after an fp32 softmax (`torch.softmax(w.float(), -1).type(w.dtype)`) and then
  multiplied by a mask under `if mask is not None:`. On the path without a mask the chain holds, as it already
  did when the softmax was not cast: the value a branch may replace is now followed through the cast. Reported
  without a fix (the mask multiplies the probabilities, which SDPA cannot express).
- vformer 0.1.3 `vformer/attention/window.py:56`: `nn.Sequential(nn.Softmax(dim=-1), nn.Dropout(p))` called on
  the scores. The softmax item is read as `F.softmax` at the call; its finding now also names where the item was
  built (its `__init__` span), as the Sequential children matched as layers do.
"""

from __future__ import annotations

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules
from adopter.session import rewrite
from adopter.synth.types import RewriteFailed

CPU = Environment(device="cpu", packages=frozenset(), torch_version="2.13.0")

LEGACY = '''
import math
import torch
from torch import nn


class QKVAttentionLegacy(nn.Module):
    def __init__(self, n_heads):
        super().__init__()
        self.n_heads = n_heads

    def forward(self, qkv, mask=None):
        bs, width, length = qkv.shape
        ch = width // (3 * self.n_heads)
        q, k, v = qkv.reshape(bs * self.n_heads, ch * 3, length).split(ch, dim=1)
        scale = 1 / math.sqrt(math.sqrt(ch))
        weight = torch.einsum("bct,bcs->bts", q * scale, k * scale)
        weight = torch.softmax(weight.float(), dim=-1).type(weight.dtype)
        if mask is not None:
            mask = mask.repeat(self.n_heads, 1).unsqueeze(1)
            weight = weight * mask
        a = torch.einsum("bts,bcs->bct", weight, v)
        return a.reshape(bs, -1, length)
'''

# The same mask, multiplied on every path: the probabilities that reach `· v` are never the softmax's own.
ALWAYS_MASKED = LEGACY.replace("        if mask is not None:\n            mask = mask", "        mask = mask").replace(
    "            weight = weight * mask", "        weight = weight * mask").replace("mask=None", "mask")

WINDOW = '''
import torch
from torch import nn


class WindowAttention(nn.Module):
    def __init__(self, dim, num_heads, attn_dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.to_out_1 = nn.Sequential(nn.Softmax(dim=-1), nn.Dropout(attn_dropout))
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.num_heads, c // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q * self.scale) @ k.transpose(-2, -1)
        attn = self.to_out_1(attn)
        return self.proj((attn @ v).transpose(1, 2).reshape(b, n, c))
'''


def _findings(source: str, family: int) -> list:
    rules = [r for r in load_rules().rules if r.family == family]
    return list(check(analyse(source, "case.py"), rules, CPU).findings)


def _line(source: str, text: str) -> int:
    """The 0-based line of `text` in `source`."""
    return next(i for i, line in enumerate(source.split("\n")) if text in line)


def test_a_cast_softmax_then_masked_on_one_path_is_attention_without_a_fix() -> None:
    found = [f for f in _findings(LEGACY, 10) if f.rule_id == "f10-manual-attention-sdpa"]
    assert len(found) == 1, found
    f = found[0]
    assert f.span.start_line == _line(LEGACY, 'torch.einsum("bct,bcs->bts"')
    rules = [r for r in load_rules().rules if r.family == 10]
    result = rewrite(LEGACY, (f,), rules=rules, env=CPU, path="case.py")
    assert isinstance(result, RewriteFailed) and len(result.skipped) == 1, result
    assert "`if mask is not None:`" in result.skipped[0].reason, result.skipped[0].reason
    # Near form: the mask multiplies the probabilities on every path, so no path holds the chain.
    assert [f for f in _findings(ALWAYS_MASKED, 10) if f.rule_id == "f10-manual-attention-sdpa"] == []


def test_a_softmax_item_of_a_sequential_is_reported_with_its_constructor() -> None:
    found = [f for f in _findings(WINDOW, 4) if f.rule_id == "f04-softmax"]
    assert len(found) == 1, found
    built = _line(WINDOW, "nn.Sequential(nn.Softmax(dim=-1)")
    called = _line(WINDOW, "attn = self.to_out_1(attn)")
    assert found[0].span.start_line == called
    assert [s.start_line for s in found[0].init_spans] == [built], found[0].init_spans
    # the item's own span, not the whole statement
    assert found[0].init_spans[0].start_col == WINDOW.split("\n")[built].index("nn.Softmax")
    # Near form: a softmax item over another axis of the 4-D scores is no family-4 site, at either line.
    assert _findings(WINDOW.replace("nn.Softmax(dim=-1)", "nn.Softmax(dim=1)"), 4) == []
    # A softmax bound on its own keeps its site at the call alone.
    alone = WINDOW.replace("nn.Sequential(nn.Softmax(dim=-1), nn.Dropout(attn_dropout))", "nn.Softmax(dim=-1)")
    found = [f for f in _findings(alone, 4) if f.rule_id == "f04-softmax"]
    assert len(found) == 1 and found[0].init_spans == (), found
