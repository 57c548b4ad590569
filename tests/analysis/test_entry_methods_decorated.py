"""Public methods under a gradient-mode or TorchScript marker are entry methods like undecorated ones.

`@torch.no_grad()` / `@torch.inference_mode()` on `generate`, `sample` or a visualisation method
(`get_attention_map`, as lightzero's UniZero attention writes it, a copy of its forward's attention returning
the probabilities) change nothing the method computes: its sites are read as an undecorated method's are. A
decorator that may change the call (`@property`, `@staticmethod`, a user's own) still keeps a method out.
"""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, find, load_rules

TEMPLATE = '''import math

import torch
import torch.nn.functional as F
from torch import nn, no_grad


class SelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(dim, dim)
        self.key = nn.Linear(dim, dim)
        self.value = nn.Linear(dim, dim)

    def forward(self, x):
        return x

    DECORATOR
    def get_attention_map(self, x):
        B, T, C = x.size()
        q = self.query(x).view(B, T, self.heads, C // self.heads).transpose(1, 2)
        k = self.key(x).view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = self.value(x).view(B, T, self.heads, C // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = F.softmax(att, dim=-1)
        return att, v
'''

ENV = Environment("cpu", frozenset(), "2.13.0")


def _families(decorator: str) -> list[tuple[int, str]]:
    text = TEMPLATE.replace("DECORATOR", decorator)
    found = find(analyse(text, "m.py"), load_rules().rules, ENV)
    return sorted((f.family, f.scope_name) for f in found)


@pytest.mark.parametrize("decorator", ["@torch.no_grad()", "@torch.inference_mode()", "@no_grad()",
                                       "@torch.no_grad", "@torch.jit.export", "@torch.no_grad()\n    @torch.jit.export"])
def test_a_method_under_a_transparent_decorator_is_read(decorator: str) -> None:
    assert _families(decorator) == [(4, "SelfAttention.get_attention_map"), (9, "SelfAttention.get_attention_map")]


@pytest.mark.parametrize("decorator", ["@property", "@staticmethod", "@my_cache", "@torch.no_grad()\n    @my_cache"])
def test_a_method_under_another_decorator_is_not(decorator: str) -> None:
    assert _families(decorator) == []
