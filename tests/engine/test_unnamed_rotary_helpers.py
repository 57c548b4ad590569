"""A rotary helper beside module classes that its own file never names is still a family-15 site
(`adopter.engine.unnamed_helpers`): the attention that applies it lives in another file. Other helpers such a
file never names stay out of every forward (`Forward.referenced`), and a rotary rule still needs a rotation."""

from __future__ import annotations

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules

CUDA = Environment("cuda", frozenset(), "2.13.0")
RULES = load_rules().rules

# timesformer-pytorch 0.4.1 `timesformer_pytorch/rotary.py:7-19`: the table module and the helper that applies it,
# called only from `timesformer_pytorch.py:125` (rewritten at fixture size). Read alone, as a file outside its
# package is (the path is not on disk), nothing shows the call.
TIMESFORMER = '''import torch
from torch import nn
from einops import rearrange


def rotate_every_two(x):
    x = rearrange(x, '... (d j) -> ... d j', j=2)
    x1, x2 = x.unbind(dim=-1)
    x = torch.stack((-x2, x1), dim=-1)
    return rearrange(x, '... d j -> ... (d j)')


def apply_rot_emb(q, k, rot_emb):
    sin, cos = rot_emb
    q, k = map(lambda t: t * cos + rotate_every_two(t) * sin, (q, k))
    return q, k


class RotaryEmbedding(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.register_buffer('inv_freq', 1. / (10000 ** (torch.arange(0, dim, 2).float() / dim)))

    def forward(self, n, device):
        seq = torch.arange(n, device=device).type_as(self.inv_freq)
        freqs = torch.einsum('i , j -> i j', seq, self.inv_freq)
        freqs = torch.cat((freqs, freqs), dim=-1)
        return freqs.sin(), freqs.cos()
'''

# sam2 1.1.0 `sam2/modeling/position_encoding.py:204-221`: the complex form beside `PositionEmbeddingSine`, applied
# from `sam2/modeling/sam/transformer.py` (rewritten at fixture size).
SAM2 = '''import torch
from torch import nn


class PositionEmbeddingSine(nn.Module):
    def __init__(self, num_pos_feats):
        super().__init__()
        self.num_pos_feats = num_pos_feats

    def forward(self, x):
        pos = torch.arange(x.shape[-1], device=x.device).float()
        return torch.cat([pos.sin(), pos.cos()], dim=-1)


def apply_rotary_enc(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)
'''


def _found(source: str) -> list[tuple[int, int]]:
    """(family, 1-based line) of each finding, the file read alone (its path is not on disk)."""
    result = check(analyse(source, "outside/rotary.py"), RULES, CUDA)
    return sorted((f.family, f.span.start_line + 1) for f in result.findings)


def test_a_rotary_helper_applied_from_another_file_is_a_site_in_its_own() -> None:
    assert _found(TIMESFORMER) == [(15, 15)]


def test_the_complex_form_beside_a_table_module_is_a_site_in_its_own_file() -> None:
    # where the finding lies when a forward of the file calls the helper (the `xq_` statement)
    named = SAM2 + '''

class Attention(nn.Module):
    def forward(self, q, k, freqs_cis):
        return apply_rotary_enc(q, k, freqs_cis)
'''
    assert [f for f in _found(named) if f[0] == 15] == [(15, 16)]
    assert [f for f in _found(SAM2) if f[0] == 15] == [(15, 16)]


def test_a_softmax_helper_nothing_names_stays_out_of_every_forward() -> None:
    # transformers 4.35 GPT-BigCode's `masked_softmax`: nothing calls it, and it is no site
    source = TIMESFORMER + '''

def masked_softmax(x, mask, mask_value):
    x = torch.where(mask, x, mask_value)
    return torch.nn.functional.softmax(x, dim=-1)
'''
    assert [f for f in _found(source) if f[0] != 15] == []


def test_a_complex_product_with_filter_weights_is_not_a_rotation() -> None:
    # a spectral filter (FNO-style) beside a module: the factor is a learned weight, not a position table
    source = SAM2.replace("def apply_rotary_enc(xq, xk, freqs_cis):", "def spectral_filter(xq, xk, weights):").replace(
        "freqs_cis)", "weights)")
    assert [f for f in _found(source) if f[0] == 15] == []


def test_a_mix_of_two_inputs_by_cos_and_sin_is_not_a_rotation() -> None:
    # `x * cos + y * sin` with `y` another input, not a rotation of `x` (a slerp-like blend)
    source = TIMESFORMER.replace("t * cos + rotate_every_two(t) * sin", "t * cos + q * sin")
    assert [f for f in _found(source) if f[0] == 15] == []


def test_the_table_builder_alone_is_no_site() -> None:
    source = TIMESFORMER[TIMESFORMER.index("class RotaryEmbedding"):]
    assert _found("import torch\nfrom torch import nn\n\n\n" + source) == []


def test_a_complex_product_with_filter_weights_in_a_forward_is_not_a_rotation() -> None:
    # the pair rule (`f15-rope-complex`) needs a rotary table as its one-tensor form does: with the helper called
    # from a forward the base reported the filter pair
    source = SAM2.replace("def apply_rotary_enc(xq, xk, freqs_cis):", "def spectral_filter(xq, xk, weights):").replace(
        "freqs_cis)", "weights)") + '''

class Filter(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weights = nn.Parameter(torch.randn(n, dtype=torch.cfloat))

    def forward(self, q, k):
        return spectral_filter(q, k, self.weights)
'''
    assert [f for f in _found(source) if f[0] == 15] == []
