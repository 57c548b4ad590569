# ruff: noqa
# Forms of family 15 sites written for bench/forms.py (mech2); `# site: N` marks the line a labeller would mark.
import torch
from torch import nn
from einops import rearrange, repeat


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    q = q * cos + rotate_half(q) * sin  # site: 15
    k = k * cos + rotate_half(k) * sin
    return q, k


def rotate_half_einops(x):
    x = rearrange(x, "... (d r) -> ... d r", r=2)
    x1, x2 = x.unbind(dim=-1)
    x = torch.stack((-x2, x1), dim=-1)
    return rearrange(x, "... d r -> ... (d r)")


def apply_rotary_emb(freqs, t):
    return t * freqs.cos() + rotate_half_einops(t) * freqs.sin()  # site: 15


def rotate_every_two(x):
    x1 = x[..., ::2]
    x2 = x[..., 1::2]
    x = torch.stack((-x2, x1), dim=-1)
    return x.flatten(-2)


def apply_rotary_interleaved(x, sin, cos):
    return (x * cos) + (rotate_every_two(x) * sin)  # site: 15


def apply_rotary_split(x, cos, sin):
    x1 = x[..., ::2]
    x2 = x[..., 1::2]
    o1 = x1 * cos - x2 * sin  # site: 15
    o2 = x2 * cos + x1 * sin
    return torch.stack((o1, o2), dim=-1).flatten(-2)


def apply_rotary_halves(x, cos, sin):
    d = x.shape[-1] // 2
    x1, x2 = x[..., :d], x[..., d:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)  # site: 15


class RotaryEmbedding(nn.Module):
    def __init__(self, dim, base=10000):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
        self.register_buffer("inv_freq", inv_freq)

    def forward(self, q, k):
        t = torch.arange(q.shape[-2], device=q.device).type_as(self.inv_freq)
        freqs = torch.einsum("i,j->ij", t, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        q = (q * cos) + (self.rotate_half(q) * sin)  # site: 15
        k = (k * cos) + (self.rotate_half(k) * sin)
        return q, k

    @staticmethod
    def rotate_half(x):
        x1 = x[..., : x.shape[-1] // 2]
        x2 = x[..., x.shape[-1] // 2 :]
        return torch.cat((-x2, x1), dim=-1)


def apply_complex(x, freqs_cis):
    x_ = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(x_ * freqs_cis).flatten(3).type_as(x)  # site: 15


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.qkv = nn.Linear(dim, dim * 3)
        self.heads = heads

    def forward(self, x, freqs_cis):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = apply_complex(q, freqs_cis)
        k = apply_complex(k, freqs_cis)
        return q, k, v
