"""`a, b = map(f, (a, b))`: a lambda of one parameter or a same-file helper applied to each element in turn,
each result under its target's name (phenaki-pytorch 0.5.0 `q, k = map(l2norm, (q, k))`, the lucidrains
`q, k, v = map(lambda t: rearrange(t, 'b n (h d) -> b h n d', h = h), (q, k, v))` head split)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .helpers import forward_lines

CODE = '''
from einops import rearrange


def l2norm(t):
    return F.normalize(t, dim = -1)


class Attention(nn.Module):
    def __init__(self, dim, heads = 8, dim_head = 64):
        super().__init__()
        self.heads = heads
        inner = heads * dim_head
        self.to_q = nn.Linear(dim, inner, bias = False)
        self.to_kv = nn.Linear(dim, inner * 2, bias = False)
        self.q_scale = nn.Parameter(torch.ones(dim_head))
        self.k_scale = nn.Parameter(torch.ones(dim_head))

    def forward(self, x):
        q, k, v = self.to_q(x), *self.to_kv(x).chunk(2, dim = -1)
        q, k, v = map(lambda t: rearrange(t, 'b n (h d) -> b h n d', h = self.heads), (q, k, v))
        q, k = map(l2norm, (q, k))
        q = q * self.q_scale
        k = k * self.k_scale
        sim = torch.einsum('b h i d, b h j d -> b h i j', q, k)
        attn = sim.softmax(dim = -1)
        return torch.einsum('b h i j, b h j d -> b h i d', attn, v)
'''


def test_each_element_gets_the_function() -> None:
    lines = forward_lines(CODE, "Attention")
    for name in "qkv":
        assert f"{name} = function einops.rearrange({name}, 'b n (h d) -> b h n d', h=self.heads)" in lines, lines
    assert "q = function torch.nn.functional.normalize(q, dim=-1)" in lines
    assert "k = function torch.nn.functional.normalize(k, dim=-1)" in lines
    assert "q = operator *(q, self.q_scale)" in lines


@pytest.mark.parametrize("statement", [
    "q, k = map(l2norm, (q, k, v))",            # three elements for two targets
    "q, k = map(torch.sigmoid, (q, k))",        # not a same-file helper
    "q, k = map(lambda a, b: a * b, (q, k))",   # a lambda of two parameters
], ids=["count", "library-function", "two-parameters"])
def test_other_maps_stay_one_call(statement: str) -> None:
    src = CODE.replace("q, k = map(l2norm, (q, k))", statement)
    lines = forward_lines(src, "Attention")
    assert any("function map(" in line for line in lines), lines


NORMS = '''
import torch
from torch import nn


class Norms(nn.Module):
    def __init__(self, eps=1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x, y):
        x, y = map(lambda t: t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + self.eps), (x, y))
        return x + y
'''


def test_a_site_inside_a_mapped_lambda_is_reported_without_a_fix(tmp_path: Path) -> None:
    path = tmp_path / "norms.py"
    path.write_text(textwrap.dedent(NORMS), encoding="utf-8")
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "-m", "adopter", "check", "--format", "json", str(path)],
                          capture_output=True, text=True, cwd=root, check=False)
    findings = [f for f in json.loads(proc.stdout) if f["rule"] == "f12-rmsnorm"]
    assert len(findings) == 1, proc.stdout
    assert not findings[0]["fixable"]
    assert "map(" in findings[0]["no_fix_reason"]
