"""Rotary forms from the stop-28 census of dev code (helper `mech78`): each a reading of the algebra, not a name.

- a rotation applied to one tensor as a complex product, in a helper called once for q and once for k whose
  table is broadcast again at each call (`freqs_cis.unsqueeze(2)`): the pair rule needs one table value for
  both, so nothing read the two calls (`f15-rope-complex-single`; diffsynth, nanotron, fairseq2, diffusers,
  transformers' Llama 4, torchao's SAM 2 in the census);
- both terms of the rotation scaled by one factor, `(t * cos * scale) + (rotate_half(t) * sin * scale)`: the
  rotation times a scale (xPos; the helper of rotary-embedding-torch as copied into x-transformers,
  zetascale, k-diffusion, autogluon's Toto, TabICL, audio-separator);
- rotate_half concatenating a list, `torch.cat([-x2, x1], dim=-1)`: `cat` reads any sequence, so a list is
  the tuple (curated-transformers, labml's RETRO; the interleaved and unbind rules already read both);
- rotate_half concatenating on `dim=x1.ndim - 1` (GPT-NeoX's "dim=-1 triggers a bug in earlier torch versions",
  copied through fairseq's wav2vec 2: SwissArmyTransformer, s3prl, transformers' wav2vec2-conformer, SeamlessM4T
  and wav2vec2-BERT): one less than the rank of a concatenated tensor is the last axis
  (`analysis.canonical.normalise`).

Each shape is written anew in the census's form (no copy). The look-alikes below must stay silent.
"""

from __future__ import annotations

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules

COMPLEX_HELPER = '''import torch
from torch import nn


def apply_rotary_emb(x, freqs_cis):
    x_ = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(x_ * freqs_cis.unsqueeze(2)).flatten(3).type_as(x)


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.to_q = nn.Linear(dim, dim)
        self.to_k = nn.Linear(dim, dim)

    def forward(self, x, freqs_cis):
        q = apply_rotary_emb(self.to_q(x), freqs_cis)
        k = apply_rotary_emb(self.to_k(x), freqs_cis)
        return q @ k.transpose(-1, -2)
'''

COMPLEX_LOOP = '''import torch
from torch import nn


class Rope(nn.Module):
    def forward(self, x, grid_sizes, freqs):
        n, c = x.size(2), x.size(3) // 2
        output = []
        for i, (f, h, w) in enumerate(grid_sizes.tolist()):
            seq_len = f * h * w
            x_i = torch.view_as_complex(x[i, :seq_len].to(torch.float64).reshape(seq_len, n, -1, 2))
            freqs_i = freqs[:seq_len].reshape(seq_len, 1, -1)
            x_i = torch.view_as_real(x_i * freqs_i).flatten(2)
            output.append(x_i)
        return torch.stack(output).float()
'''

SCALED = '''import torch
from torch import nn
from einops import rearrange


def rotate_half(x):
    x = rearrange(x, "... (d r) -> ... d r", r=2)
    x1, x2 = x.unbind(dim=-1)
    x = torch.stack((-x2, x1), dim=-1)
    return rearrange(x, "... d r -> ... (d r)")


def apply_rotary_pos_emb(t, freqs, scale=1):
    rot_dim = freqs.shape[-1]
    t, t_unrotated = t[..., :rot_dim], t[..., rot_dim:]
    t = (t * freqs.cos() * scale) + (rotate_half(t) * freqs.sin() * scale)
    return torch.cat((t, t_unrotated), dim=-1)


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.to_q = nn.Linear(dim, dim)
        self.to_k = nn.Linear(dim, dim)

    def forward(self, x, freqs, xpos_scale):
        q = apply_rotary_pos_emb(self.to_q(x), freqs, xpos_scale)
        k = apply_rotary_pos_emb(self.to_k(x), freqs, xpos_scale ** -1)
        return q @ k.transpose(-1, -2)
'''

HALVES_SCALED = '''import torch


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_emb(freqs, t, scale=1.0):
    return (t * freqs.cos() * scale) + (rotate_half(t) * freqs.sin() * scale)


class Rotary(torch.nn.Module):
    def forward(self, t, freqs):
        return apply_rotary_emb(freqs, t, 0.5)
'''

LISTED = '''import torch
from torch import nn


class Rotary(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.register_buffer("cos", torch.ones(16, width))
        self.register_buffer("sin", torch.ones(16, width))

    def _rotate(self, input):
        half_idx = input.shape[-1] // 2
        input_1 = -input[..., half_idx:]
        input_2 = input[..., :half_idx]
        return torch.cat([input_1, input_2], dim=-1)

    def forward(self, input):
        seq_len, width = input.shape[-2], input.shape[-1]
        rot_cos = self.cos[:seq_len, :].view(1, 1, seq_len, width)
        rot_sin = self.sin[:seq_len, :].view(1, 1, seq_len, width)
        return rot_cos * input + rot_sin * self._rotate(input)
'''


NEOX = '''import torch
from torch import nn


def rotate_half(x):
    x1, x2 = x[..., :x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=x1.ndim - 1)


def apply_rotary_pos_emb(q, k, cos, sin, offset: int = 0):
    cos, sin = cos[offset:q.shape[0] + offset, ...], sin[offset:q.shape[0] + offset, ...]
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.to_q = nn.Linear(dim, dim)
        self.to_k = nn.Linear(dim, dim)

    def forward(self, x, cos, sin):
        q, k = apply_rotary_pos_emb(self.to_q(x), self.to_k(x), cos, sin)
        return q @ k.transpose(-1, -2)
'''


def rotary(code: str) -> list[str]:
    env = Environment("cuda", frozenset({"liger_kernel"}), "2.5.0")
    return [f.rule_id for f in check(analyse(code, "m.py"), load_rules().rules, env).findings if f.family == 15]


def test_complex_rotation_of_one_tensor_per_call() -> None:
    assert rotary(COMPLEX_HELPER) == ["f15-rope-complex-single"]


def test_complex_rotation_inside_a_loop_over_the_batch() -> None:
    assert rotary(COMPLEX_LOOP) == ["f15-rope-complex-single"]


def test_complex_rotation_of_q_and_k_with_one_table_stays_the_pair() -> None:
    pair = COMPLEX_HELPER.replace("freqs_cis.unsqueeze(2)", "freqs_cis")
    assert rotary(pair) == ["f15-rope-complex"]


def test_complex_product_with_a_filter_is_not_a_rotation() -> None:
    spectral = COMPLEX_HELPER.replace("freqs_cis.unsqueeze(2)", "torch.view_as_complex(self_weight)").replace(
        "def apply_rotary_emb(x, freqs_cis):", "def apply_rotary_emb(x, self_weight):")
    assert rotary(spectral) == []


def test_complex_product_of_two_inputs_is_not_a_rotation() -> None:
    product = COMPLEX_HELPER.replace("freqs_cis.unsqueeze(2)", "torch.view_as_complex(y.reshape(*y.shape[:-1], -1, 2))")
    product = product.replace("def apply_rotary_emb(x, freqs_cis):", "def apply_rotary_emb(x, y):")
    assert rotary(product) == []


def test_rotation_scaled_by_one_factor() -> None:
    assert rotary(SCALED) == ["f15-rope-unbind-single"]


def test_rotate_half_rotation_scaled_by_one_factor() -> None:
    assert rotary(HALVES_SCALED) == ["f15-rope-chunk-single"]


def test_terms_scaled_by_different_factors_are_not_a_rotation() -> None:
    uneven = HALVES_SCALED.replace("(rotate_half(t) * freqs.sin() * scale)", "(rotate_half(t) * freqs.sin() * 2.0)")
    assert rotary(uneven) == []


def test_only_the_rotated_term_scaled_is_not_a_rotation() -> None:
    uneven = HALVES_SCALED.replace("(t * freqs.cos() * scale)", "(t * freqs.cos())")
    assert rotary(uneven) == []


def test_rotate_half_concatenating_a_list() -> None:
    assert rotary(LISTED) == ["f15-rope-single"]


def test_halves_swapped_without_negation_in_a_list_is_not_a_rotation() -> None:
    assert rotary(LISTED.replace("input_1 = -input[..., half_idx:]", "input_1 = input[..., half_idx:]")) == []


def test_rotate_half_on_the_last_axis_by_rank() -> None:
    assert rotary(NEOX) == ["f15-rope"]
    assert rotary(NEOX.replace("dim=x1.ndim - 1", "dim=x1.dim() - 1")) == ["f15-rope"]


def test_rank_of_a_tensor_not_concatenated_says_nothing() -> None:
    other = NEOX.replace("def rotate_half(x):", "def rotate_half(x, m=torch.zeros(2, 2)):").replace(
        "dim=x1.ndim - 1", "dim=m.ndim - 1")
    assert rotary(other) == []


def test_rank_less_two_is_not_the_last_axis() -> None:
    assert rotary(NEOX.replace("dim=x1.ndim - 1", "dim=x1.ndim - 2")) == []
