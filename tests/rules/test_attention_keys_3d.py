"""Family 10 forms of helper `mech62` (issue 20): keys transposed with positive axes, `q @ k.transpose(1, 2)`, on
3-D tensors whose rank the code shows only through a `flatten` or an unpacking.

`k.transpose(1, 2)` is `k.transpose(-2, -1)` only when `k` is 3-D: on a 4-D `(b, d, h, n)` tensor it swaps the
feature and head axes, and `q @ k.transpose(1, 2)` is still a valid product, so the axes are read as the last two
only where a rank is proven:

- `K.flatten(start_dim=2)` is 3-D whatever `K` was (clearvoice's MossFormer-GAN folds the heads into the batch,
  flattens, then `softmax(·, dim=2)`); `Q.shape[-1]` is a number, so `/ emb_dim ** 0.5` keeps the scores' rank;
- `q, k, v = qkv.reshape(n, 3, h, -1).permute(1, 0, 2, 3).unbind(0)`: each part has one axis fewer (Qwen2.5-VL's
  vision attention, un-batched `(heads, seq, dim)` tensors).

Found by the census of every function holding a softmax between two products (dev corpora, fresh1;
docs/notes/mech62.md). The fixable forms are rewritten (SDPA takes `(N, L, E)` inputs), exec'd next to the
original and compared through `adopter.verify.compare.compare` (outputs, input and parameter gradients, float32 on
CPU) after a strict state-dict load both ways, in eval and train mode. Near forms whose rank nothing proves, or
whose softmax is over another axis, stay silent.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attention_harness import equivalent_classes as _equivalent  # noqa: E402
from attention_harness import findings_of, fixed, rules_of, skip_reasons  # noqa: E402

pytestmark = pytest.mark.torch

RULES = rules_of("f10-manual-attention-sdpa", "f04-softmax")
F10 = tuple(r for r in RULES if r.id == "f10-manual-attention-sdpa")


FLATTENED = """
import torch
import torch.nn.functional as F
from torch import nn


class HeadsInBatch(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.q = nn.Conv2d(dim, dim * heads, kernel_size=1)
        self.k = nn.Conv2d(dim, dim * heads, kernel_size=1)
        self.v = nn.Conv2d(dim, dim * heads, kernel_size=1)

    def forward(self, x):
        b, c, t, f = x.shape
        q = torch.cat(self.q(x).chunk(self.heads, dim=1), dim=0).transpose(1, 2)
        k = torch.cat(self.k(x).chunk(self.heads, dim=1), dim=0).transpose(1, 2)
        v = torch.cat(self.v(x).chunk(self.heads, dim=1), dim=0).transpose(1, 2)
        q = q.flatten(start_dim=2)
        k = k.flatten(start_dim=2)
        v = v.flatten(start_dim=2)
        emb_dim = q.shape[-1]
        scores = torch.matmul(q, k.transpose(1, 2)) / (emb_dim**0.5)
        probs = F.softmax(scores, dim=2)
        out = torch.matmul(probs, v)
        return out.reshape(self.heads, b, t, c, f).sum(0).transpose(1, 2)
"""

UNBOUND = """
import math

import torch
from torch import nn


class VisionAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, hidden_states):
        n = hidden_states.shape[0]
        q, k, v = self.qkv(hidden_states).reshape(n, 3, self.heads, -1).permute(1, 0, 2, 3).unbind(0)
        q = q.transpose(0, 1)
        k = k.transpose(0, 1)
        v = v.transpose(0, 1)
        weights = torch.matmul(q, k.transpose(1, 2)) / math.sqrt(self.head_dim)
        weights = nn.functional.softmax(weights, dim=-1, dtype=torch.float32).to(q.dtype)
        out = torch.matmul(weights, v)
        out = out.transpose(0, 1).reshape(n, -1)
        return self.proj(out)
"""


def test_flattened_heads_in_the_batch_are_rewritten_and_equivalent() -> None:
    new = fixed(FLATTENED, F10, applied=1)
    assert "scaled_dot_product_attention(" in new and "softmax" not in new, new
    _equivalent(FLATTENED, new, "HeadsInBatch", lambda cls: cls(4, 2), lambda: (torch.randn(2, 4, 5, 3),))


def test_parts_unbound_from_a_4d_tensor_are_rewritten_and_equivalent() -> None:
    new = fixed(UNBOUND, F10, applied=1)
    assert "scaled_dot_product_attention(" in new and "softmax" not in new, new
    _equivalent(UNBOUND, new, "VisionAttention", lambda cls: cls(8, 2), lambda: (torch.randn(7, 8),))


# The output rebinds the values' own name (clearvoice: `V = torch.matmul(attn_mat, V)`): found, the fix declined.
REBOUND = FLATTENED.replace("out = torch.matmul(probs, v)\n        return out.", "v = torch.matmul(probs, v)\n"
                            "        return v.")


def test_values_rebound_by_the_output_are_found_and_declined() -> None:
    assert REBOUND != FLATTENED
    assert [f.rule_id for f in findings_of(REBOUND, F10)] == ["f10-manual-attention-sdpa"]
    assert skip_reasons(REBOUND, F10)


# -- near forms: nothing proves the keys 3-D, or the softmax is over another axis ------------------------------

# Queries of unknown rank: the product may broadcast them to more axes, so `dim=2` is not known to be the last.
QUERIES_UNRANKED = FLATTENED.replace("q = q.flatten(start_dim=2)\n", "")
# Unpacked from a 5-D permute, the parts are 4-D: `k.transpose(1, 2)` swaps the heads with the sequence.
PARTS_4D = UNBOUND.replace(
    "self.qkv(hidden_states).reshape(n, 3, self.heads, -1).permute(1, 0, 2, 3).unbind(0)",
    "self.qkv(hidden_states).reshape(1, n, 3, self.heads, -1).permute(2, 0, 3, 1, 4)").replace(
    "q = q.transpose(0, 1)\n        k = k.transpose(0, 1)\n        v = v.transpose(0, 1)\n", "")
# Keys flattened over the first axes only: the rank is the input's, which nothing shows.
FLATTENED_FRONT = FLATTENED.replace("k = k.flatten(start_dim=2)", "k = k.flatten(0, 1)")
OTHER_AXIS = FLATTENED.replace("F.softmax(scores, dim=2)", "F.softmax(scores, dim=1)")


@pytest.mark.parametrize("source", [QUERIES_UNRANKED, PARTS_4D, FLATTENED_FRONT, OTHER_AXIS],
                         ids=["queries-unranked", "parts-4d", "flattened-front", "softmax-axis-1"])
def test_keys_not_proven_3d_or_another_axis_are_not_attention(source: str) -> None:
    assert source not in (FLATTENED, UNBOUND)
    assert [f for f in findings_of(source, RULES) if f.rule_id.startswith("f10")] == []
