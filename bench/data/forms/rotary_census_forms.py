# ruff: noqa
# Forms of family 15 sites from the stop-28 census of dev code (mech78); `# site: N` marks the line a labeller would mark.
import torch
from torch import nn
from einops import rearrange


def apply_rotary_complex(x, freqs_cis):
    x_ = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))  # site: 15
    return torch.view_as_real(x_ * freqs_cis.unsqueeze(2)).flatten(3).type_as(x)


def rotate_half_pairs(x):
    x = rearrange(x, "... (d r) -> ... d r", r=2)
    x1, x2 = x.unbind(dim=-1)
    x = torch.stack((-x2, x1), dim=-1)
    return rearrange(x, "... d r -> ... (d r)")


def apply_rotary_scaled(t, freqs, scale=1.0):
    return (t * freqs.cos() * scale) + (rotate_half_pairs(t) * freqs.sin() * scale)  # site: 15


def rotate_half_listed(x):
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


def rotate_half_by_rank(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=x1.ndim - 1)


class ListedRotary(nn.Module):
    def forward(self, x, cos, sin):
        return cos * x + sin * rotate_half_listed(x)  # site: 15


class RankedRotary(nn.Module):
    def forward(self, q, k, cos, sin):
        q = (q * cos) + (rotate_half_by_rank(q) * sin)  # site: 15
        k = (k * cos) + (rotate_half_by_rank(k) * sin)
        return q, k


class ComplexRotary(nn.Module):
    def forward(self, q, k, freqs_cis):
        return apply_rotary_complex(q, freqs_cis), apply_rotary_complex(k, freqs_cis)


class ScaledRotary(nn.Module):
    def forward(self, q, k, freqs, scale):
        return apply_rotary_scaled(q, freqs, scale), apply_rotary_scaled(k, freqs, scale ** -1)


class SpectralFilter(nn.Module):
    """Not a site: a complex product with a filter's weights, not a rotation by position."""

    def __init__(self, n, d):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n, d, 2))

    def forward(self, x):
        spectrum = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(spectrum * torch.view_as_complex(self.weight)).flatten(-2)
