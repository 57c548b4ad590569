"""Reach: sites in module-level functions (also `@torch.jit.script` ones, and ones only called through a
variable, a dict or `functools.partial`) are found where their code is."""

from __future__ import annotations

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules

SOURCE = '''\
import functools
import torch
import torch.nn.functional as F
from torch import nn


@torch.jit.script
def gelu_fast(x):
    return 0.5 * x * (1.0 + torch.tanh(0.7978845608 * (x + 0.044715 * torch.pow(x, 3.0))))


def attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    return scores.softmax(dim=-1) @ v


ATTENTION = {"eager": attention}


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.attn_fn = functools.partial(ATTENTION["eager"], mask=None)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return gelu_fast(self.attn_fn(q, k, v))
'''


def test_sites_in_module_level_functions_are_found_once_where_the_code_is() -> None:
    result = check(analyse(SOURCE, "reach.py"), load_rules().rules, Environment("cpu", frozenset(), "2.13.0"))
    assert not result.problems
    got = sorted((f.family, f.span.start_line + 1) for f in result.findings)
    assert got == [(4, 16), (10, 13), (13, 9)]  # each once, at the function's own lines
