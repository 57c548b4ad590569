"""One rotary site per function that rotates (issue 20, family 15; helper `prec8`'s census of the checker's
own findings over the dev corpora, `engine.rotary_sites`).

The one-tensor rules match each rotation statement alone, so a function that rotates more than once was
reported once per statement, where the labels count one site per q/k pair (or per application of a helper
that rotates one tensor). The shapes below are the forms the census found, written anew:

- alternative returns of one helper: the partial-rotary branch and the full one (diffsynth's MiniMax VAE
  `apply_rotary_pos_emb`), the tables broadcast or not (birder `layers/rope.py`);
- rotate-half or interleaved chosen by a flag inside one helper (timm `pos_embed_sincos.apply_rot_embed`);
- q and k rotated one statement at a time, the keys with their own repeated tables (transformers 5.0's SAM 2
  video / SAM 3 tracker / EdgeTAM video 2-D rotary);
- v rotated beside the q/k pair in one helper (transformers 5.0's CLVP).

Each of those is one site, at the first rotation. What stays: a helper rotating one tensor applied to q and k
(one site in the helper), two helpers of one attention rotating a pair each (two sites), a helper applied on
several paths (one site per path, `test_rotary_applications.py`).
"""

from __future__ import annotations

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules
from adopter.engine.types import Finding

HEADER = "import torch\nfrom torch import nn\n\n\n"

ROTATE_HALF = '''
def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)
'''

# The partial-rotary branch and the full one: two returns of one helper.
PARTIAL = ROTATE_HALF + '''

def apply_rotary(t, rotary):
    cos, sin = rotary
    cos, sin = cos.to(t.dtype), sin.to(t.dtype)
    rot_dim = cos.shape[-1]
    if rot_dim < t.shape[-1]:
        t_rot, t_pass = t[..., :rot_dim], t[..., rot_dim:]
        return torch.cat(((t_rot * cos) + (rotate_half(t_rot) * sin), t_pass), dim=-1)
    return (t * cos) + (rotate_half(t) * sin)


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x, rotary):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = apply_rotary(q, rotary)
        k = apply_rotary(k, rotary)
        return torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v
'''

# The tables broadcast over heads or not: two returns of one helper, the same form.
BROADCAST = ROTATE_HALF + '''

def apply_rotary_embed(x, embed):
    sin_emb, cos_emb = embed.tensor_split(2, dim=-1)
    if cos_emb.ndim == 3:
        return x * cos_emb.unsqueeze(1).expand_as(x) + rotate_half(x) * sin_emb.unsqueeze(1).expand_as(x)
    return x * cos_emb + rotate_half(x) * sin_emb


class Attention(nn.Module):
    def forward(self, q, k, embed):
        q = apply_rotary_embed(q, embed)
        k = apply_rotary_embed(k, embed)
        return q @ k.transpose(-2, -1)
'''

# Rotate-half or interleaved pairs chosen by a flag.
FLAG = ROTATE_HALF + '''

def rotate_pairs(x):
    return torch.stack([-x[..., 1::2], x[..., ::2]], -1).reshape(x.shape)


def apply_rot(x, sin_emb, cos_emb, half=False):
    if half:
        out = x * cos_emb + rotate_half(x) * sin_emb
    else:
        out = x * cos_emb + rotate_pairs(x) * sin_emb
    return out.to(dtype=x.dtype)


class RotaryEmbedding(nn.Module):
    def __init__(self, half=False):
        super().__init__()
        self.half = half

    def forward(self, x, sin_emb, cos_emb):
        return apply_rot(x, sin_emb, cos_emb, half=self.half)
'''

# q and k rotated one statement at a time; the keys' tables repeated for a longer key sequence.
SEPARATE = '''
def rotate_pairwise(x):
    x = x.view(*x.shape[:-1], -1, 2)
    x1, x2 = x.unbind(dim=-1)
    x = torch.stack((-x2, x1), dim=-1)
    return x.flatten(start_dim=-2)


def apply_rotary_2d(q, k, cos, sin, repeat_freqs_k=False):
    q_embed = q.float()
    q_embed = (q_embed * cos) + (rotate_pairwise(q_embed) * sin)
    if repeat_freqs_k and k.shape[-2] != q.shape[-2]:
        factor = k.shape[-2] // q.shape[-2]
        cos_k = cos.repeat(1, 1, factor, 1)
        sin_k = sin.repeat(1, 1, factor, 1)
    else:
        cos_k = cos
        sin_k = sin
    k_embed = k.float()
    k_embed = (k_embed * cos_k) + (rotate_pairwise(k_embed) * sin_k)
    return q_embed.type_as(q), k_embed.type_as(k)


class RoPEAttention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.q_proj = nn.Linear(dim, dim)
        self.k_proj = nn.Linear(dim, dim)

    def forward(self, x, memory, cos, sin):
        q = self.q_proj(x)
        k = self.k_proj(memory)
        q, k = apply_rotary_2d(q, k, cos, sin, repeat_freqs_k=True)
        return q @ k.transpose(-2, -1)
'''

# v rotated beside the q/k pair in one helper.
WITH_V = ROTATE_HALF + '''

def apply_rotary_pos_emb(q, k, v, cos, sin):
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    v_embed = (v * cos) + (rotate_half(v) * sin)
    return q_embed, k_embed, v_embed


class SelfAttention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x, cos, sin):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = apply_rotary_pos_emb(q, k, v, cos, sin)
        return torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v
'''

# Two helpers, each rotating the q/k pair (the plain and the interleaved rotary of one attention): two sites.
TWO_HELPERS = ROTATE_HALF + '''

def apply_rotary(q, k, cos, sin):
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


def apply_rotary_interleaved(q, k, cos, sin):
    b, h, s, d = q.shape
    q = q.view(b, h, s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d)
    k = k.view(b, h, s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


class Attention(nn.Module):
    def __init__(self, interleave):
        super().__init__()
        self.interleave = interleave

    def forward(self, q, k, cos, sin):
        if self.interleave:
            q, k = apply_rotary_interleaved(q, k, cos, sin)
        else:
            q, k = apply_rotary(q, k, cos, sin)
        return q @ k.transpose(-2, -1)
'''

# One helper rotating one tensor, applied to q and to k: one site, in the helper.
ONE_TENSOR = ROTATE_HALF + '''

def apply_rotary(t, cos, sin):
    return (t * cos) + (rotate_half(t) * sin)


class Attention(nn.Module):
    def forward(self, q, k, cos, sin):
        q = apply_rotary(q, cos, sin)
        k = apply_rotary(k, cos, sin)
        return q @ k.transpose(-2, -1)
'''


def rotary(code: str) -> list[Finding]:
    env = Environment("cpu", frozenset(), "2.13.0")
    found = check(analyse(HEADER + code, "m.py"), load_rules().rules, env).findings
    return [f for f in found if f.family == 15]


def line(code: str, needle: str, nth: int = 0) -> int:
    """0-based line of the `nth` line holding `needle` in HEADER + code."""
    return [i for i, text in enumerate((HEADER + code).splitlines()) if needle in text][nth]


def at(found: list[Finding]) -> list[int]:
    return sorted(f.span.start_line for f in found)


def test_alternative_returns_of_one_helper_are_one_site() -> None:
    assert at(rotary(PARTIAL)) == [line(PARTIAL, "return torch.cat(((t_rot * cos)")]
    assert at(rotary(BROADCAST)) == [line(BROADCAST, "return x * cos_emb.unsqueeze(1)")]


def test_two_forms_behind_a_flag_are_one_site() -> None:
    assert at(rotary(FLAG)) == [line(FLAG, "out = x * cos_emb + rotate_half(x)")]


def test_q_and_k_rotated_one_at_a_time_are_one_pair() -> None:
    assert at(rotary(SEPARATE)) == [line(SEPARATE, "q_embed = (q_embed * cos)")]


def test_v_rotated_beside_the_pair_is_that_pair() -> None:
    found = rotary(WITH_V)
    assert at(found) == [line(WITH_V, "q_embed = (q * cos)")]
    assert not found[0].rule_id.endswith("-single")  # the pair's rule, not v's


def test_sites_the_refusal_could_hit_are_still_found() -> None:
    # Two helpers rotating a pair each are two sites; a one-tensor helper applied to q and k is one.
    assert at(rotary(TWO_HELPERS)) == [line(TWO_HELPERS, "q_embed = (q * cos)", 0),
                                       line(TWO_HELPERS, "q_embed = (q * cos)", 1)]
    assert at(rotary(ONE_TENSOR)) == [line(ONE_TENSOR, "return (t * cos)")]
