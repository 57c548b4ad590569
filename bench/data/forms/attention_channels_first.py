# ruff: noqa
"""The channels-first attention block (the CompVis VAE's `AttnBlock` and its 1-D copies) in spellings the f10
chain did not read before stop 23 (mech59): the transposed probabilities made contiguous, the scale from a size
unpacked from `.shape`, the scores computed per query slice in a loop."""

import torch
import torch.nn.functional as F
from torch import nn


class ContiguousAttnBlock(nn.Module):
    # audioldm, diffsynth: `.contiguous()` after every reshape and permute
    def __init__(self, channels):
        super().__init__()
        self.q = nn.Conv2d(channels, channels, kernel_size=1)
        self.k = nn.Conv2d(channels, channels, kernel_size=1)
        self.v = nn.Conv2d(channels, channels, kernel_size=1)

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        b, c, h, w = q.shape
        q = q.reshape(b, c, h * w).permute(0, 2, 1).contiguous()
        k = k.reshape(b, c, h * w).contiguous()
        attn = torch.bmm(q, k).contiguous() * (int(c) ** (-0.5))  # site: 10
        attn = torch.nn.functional.softmax(attn, dim=2)
        v = v.reshape(b, c, h * w).contiguous()
        attn = attn.permute(0, 2, 1).contiguous()
        out = torch.bmm(v, attn).contiguous()
        return x + out.reshape(b, c, h, w)


class SizeScaledAttnBlock1d(nn.Module):
    # WavTokenizer / Vocos-style decoders: 1-D convolutions, the scale from the unpacked shape
    def __init__(self, dim):
        super().__init__()
        self.q = nn.Conv1d(dim, dim, kernel_size=1)
        self.k = nn.Conv1d(dim, dim, kernel_size=1)
        self.v = nn.Conv1d(dim, dim, kernel_size=1)

    def forward(self, x):
        query, key, value = self.q(x), self.k(x), self.v(x)
        batch, channels, length = query.shape
        weights = torch.bmm(query.permute(0, 2, 1), key) * channels**-0.5  # site: 10
        weights = F.softmax(weights, dim=2)
        return x + torch.bmm(value, weights.permute(0, 2, 1))


class SlicedAttnBlock(nn.Module):
    # imaginAIry's memory-saving path: the queries taken a slice at a time
    def __init__(self, channels, slice_size=64):
        super().__init__()
        self.slice_size = slice_size
        self.q = nn.Conv2d(channels, channels, kernel_size=1)
        self.k = nn.Conv2d(channels, channels, kernel_size=1)
        self.v = nn.Conv2d(channels, channels, kernel_size=1)

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        b, c, h, w = q.shape
        q = q.reshape(b, c, h * w).permute(0, 2, 1)
        k = k.reshape(b, c, h * w)
        v = v.reshape(b, c, h * w)
        out = torch.zeros_like(v)
        for i in range(0, q.shape[1], self.slice_size):
            end = i + self.slice_size
            s = torch.bmm(q[:, i:end], k) * (int(c) ** (-0.5))  # site: 10
            p = torch.nn.functional.softmax(s, dim=2)
            out[:, :, i:end] = torch.bmm(v, p.permute(0, 2, 1))
        return x + out.reshape(b, c, h, w)
