# ruff: noqa
"""Attention in layouts and mask forms the f10 chain did not read before stop 21 (mech53): scores kept in an
einsum's own axis order (Transformer-XL, labml), and a mask subtracted before the softmax (GPT-2, XLNet)."""

import math

import torch
from torch import nn


class RelPartialAttention(nn.Module):
    # Transformer-XL (transformers, pytorch-pretrained-bert, labml): scores (queries, keys, batch, heads), dim=1
    def __init__(self, n_head, d_head, dropatt):
        super().__init__()
        self.scale = 1 / (d_head ** 0.5)
        self.dropatt = nn.Dropout(dropatt)

    def forward(self, q, k, v, pos_scores, attn_mask=None):
        ac = torch.einsum("ibnd,jbnd->ijbn", (q, k))  # site: 10
        attn_score = (ac + pos_scores) * self.scale
        if attn_mask is not None:
            attn_score = attn_score.float().masked_fill(attn_mask[:, :, :, None], -float("inf")).type_as(attn_score)
        attn_prob = nn.functional.softmax(attn_score, dim=1)
        attn_prob = self.dropatt(attn_prob)
        return torch.einsum("ijbn,jbnd->ibnd", (attn_prob, v))


class UNetAttention(nn.Module):
    # labml's DDPM U-Net and GPT-NeoX: scores (batch, queries, keys, heads), softmax over dim=2
    def __init__(self, n_channels, n_heads, d_k):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_k
        self.projection = nn.Linear(n_channels, n_heads * d_k * 3)
        self.scale = d_k ** -0.5

    def forward(self, x):
        batch_size = x.shape[0]
        qkv = self.projection(x).view(batch_size, -1, self.n_heads, 3 * self.d_k)
        q, k, v = torch.chunk(qkv, 3, dim=-1)
        attn = torch.einsum("bihd,bjhd->bijh", q, k) * self.scale  # site: 10
        attn = attn.softmax(dim=2)
        res = torch.einsum("bijh,bjhd->bihd", attn, v)
        return res.reshape(batch_size, -1, self.n_heads * self.d_k)


class QueryNormalised(nn.Module):
    # not attention: the softmax runs over the queries' axis of (queries, keys, batch, heads)
    def forward(self, q, k, v):
        scores = torch.einsum("ibhd,jbhd->ijbh", q, k)
        weights = scores.softmax(dim=0)
        return torch.einsum("ijbh,jbhd->ibhd", weights, v)


class SubtractedMaskAttention(nn.Module):
    # pytorch-pretrained-bert's GPT-2: the causal mask multiplied in and a large term subtracted
    def __init__(self, n_ctx, scale=False):
        super().__init__()
        self.scale = scale
        self.register_buffer("bias", torch.tril(torch.ones(n_ctx, n_ctx)).view(1, 1, n_ctx, n_ctx))
        self.attn_dropout = nn.Dropout(0.1)

    def forward(self, q, k, v):
        w = torch.matmul(q, k.transpose(-1, -2))  # site: 10
        if self.scale:
            w = w / math.sqrt(v.size(-1))
        nd, ns = w.size(-2), w.size(-1)
        b = self.bias[:, :, ns - nd:ns, :ns]
        w = w * b - 1e4 * (1 - b)
        w = nn.Softmax(dim=-1)(w)
        w = self.attn_dropout(w)
        return torch.matmul(w, v)


class PaddingMaskAttention(nn.Module):
    # XLNet / MixMIM: a padding mask (1 = masked) subtracted, times a large constant
    def __init__(self, head_dim):
        super().__init__()
        self.scale = head_dim ** -0.5
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, q, k, v, mask):
        attn = (q * self.scale) @ k.transpose(-2, -1)  # site: 10
        attn = attn - 1e30 * mask
        attn = self.softmax(attn)
        return attn @ v
