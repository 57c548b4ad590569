# ruff: noqa
"""Hand-written attention over 3-D tensors (heads folded into the batch, or un-batched `(heads, seq, dim)`) whose
keys are transposed with positive axes, `q @ k.transpose(1, 2)`, the rank shown only by a `flatten` or an
unpacking; the f10 chain did not read them before stop 24 (mech62)."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class FlattenedHeadsAttention(nn.Module):
    # clearvoice's MossFormer-GAN: per-head convolutions concatenated on the batch, flattened to (N, L, E)
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.q = nn.Conv2d(dim, dim * heads, kernel_size=1)
        self.k = nn.Conv2d(dim, dim * heads, kernel_size=1)
        self.v = nn.Conv2d(dim, dim * heads, kernel_size=1)

    def forward(self, x):
        q = torch.cat(self.q(x).chunk(self.heads, dim=1), dim=0).transpose(1, 2).flatten(start_dim=2)
        k = torch.cat(self.k(x).chunk(self.heads, dim=1), dim=0).transpose(1, 2).flatten(start_dim=2)
        v = torch.cat(self.v(x).chunk(self.heads, dim=1), dim=0).transpose(1, 2).flatten(start_dim=2)
        emb_dim = q.shape[-1]
        scores = torch.matmul(q, k.transpose(1, 2)) / (emb_dim**0.5)  # site: 10
        probs = F.softmax(scores, dim=2)
        return torch.matmul(probs, v)


class UnbatchedVisionAttention(nn.Module):
    # Qwen2.5-VL's vision attention: q, k, v unbound from a 4-D projection, (heads, seq, dim) each
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, hidden_states):
        n = hidden_states.shape[0]
        q, k, v = self.qkv(hidden_states).reshape(n, 3, self.heads, -1).permute(1, 0, 2, 3).unbind(0)
        q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)
        weights = torch.matmul(q, k.transpose(1, 2)) / math.sqrt(self.head_dim)  # site: 10
        weights = F.softmax(weights, dim=-1, dtype=torch.float32).to(q.dtype)
        out = torch.matmul(weights, v).transpose(0, 1).reshape(n, -1)
        return self.proj(out)


class FourDimPartsSwapped(nn.Module):
    # not attention over the keys: parts of a 5-D permute are 4-D, so `k.transpose(1, 2)` swaps heads and sequence
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, dim * 3)

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        scores = torch.matmul(q, k.transpose(1, 2))
        return torch.matmul(scores.softmax(dim=-1), v)
