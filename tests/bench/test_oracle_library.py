"""Ops torch's own code computes are not the user's chain (`match.torch_composed`, `match.calls_sdpa`):
`nn.MultiheadAttention` and `F.multi_head_attention_forward` (projections, scores, softmax, weighted sum),
`nn.TransformerEncoderLayer`'s feed-forward, and SDPA's math path are no sites; the same ops written in the
model, or torch layers the model chains itself (`nn.Linear` then `nn.GELU`, an `nn.Sequential` of a conv and
a BatchNorm), are."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

torch = pytest.importorskip("torch")

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

from oracle.match import find_sites  # noqa: E402
from oracle.trace import trace_step  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.slow]

MODELS = '''import math

import torch
import torch.nn.functional as F
from torch import nn


class TorchAttention(nn.Module):  # ultralytics' TransformerLayer, reduced: q, k, v into nn.MultiheadAttention
    def __init__(self, c=16, heads=2):
        super().__init__()
        self.q = nn.Linear(c, c, bias=False)
        self.k = nn.Linear(c, c, bias=False)
        self.v = nn.Linear(c, c, bias=False)
        self.ma = nn.MultiheadAttention(embed_dim=c, num_heads=heads, dropout=0.1)

    def forward(self, x):
        return self.ma(self.q(x), self.k(x), self.v(x))[0] + x


class PoolAttention(nn.Module):  # CLIP's AttentionPool2d, reduced: separate weights into F.multi_head_attention_forward
    def __init__(self, c=16, heads=2):
        super().__init__()
        self.q_proj = nn.Linear(c, c)
        self.k_proj = nn.Linear(c, c)
        self.v_proj = nn.Linear(c, c)
        self.c_proj = nn.Linear(c, c)
        self.heads = heads

    def forward(self, x):
        x, _ = F.multi_head_attention_forward(
            query=x, key=x, value=x, embed_dim_to_check=x.shape[-1], num_heads=self.heads,
            q_proj_weight=self.q_proj.weight, k_proj_weight=self.k_proj.weight, v_proj_weight=self.v_proj.weight,
            in_proj_weight=None, in_proj_bias=torch.cat([self.q_proj.bias, self.k_proj.bias, self.v_proj.bias]),
            bias_k=None, bias_v=None, add_zero_attn=False, dropout_p=0.0, out_proj_weight=self.c_proj.weight,
            out_proj_bias=self.c_proj.bias, use_separate_proj_weight=True, training=self.training,
            need_weights=False)
        return x


class FusedAttention(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v)


class Encoder(nn.Module):
    def __init__(self, c=16):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(c, 2, 32, activation="gelu", batch_first=True)

    def forward(self, x):
        return self.layer(x)


class ManualAttention(nn.Module):
    def __init__(self, c=16, heads=2):
        super().__init__()
        self.query = nn.Linear(c, c)
        self.key = nn.Linear(c, c)
        self.value = nn.Linear(c, c)
        self.heads = heads

    def split(self, t):
        b, n, c = t.shape
        return t.view(b, n, self.heads, c // self.heads).transpose(1, 2)

    def forward(self, x):
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        probs = F.softmax(scores, dim=-1)
        return torch.matmul(probs, v)


class Mlp(nn.Module):
    def __init__(self, c=16):
        super().__init__()
        self.fc = nn.Linear(c, 4 * c)
        self.act = nn.GELU()

    def forward(self, x):
        return self.act(self.fc(x))


class SeparateInputs(ManualAttention):  # SAM's Attention, reduced: q, k, v are the caller's to choose
    def forward(self, q_in, k_in, v_in):
        q, k, v = self.split(self.query(q_in)), self.split(self.key(k_in)), self.split(self.value(v_in))
        return torch.matmul(F.softmax(torch.matmul(q, k.transpose(-1, -2)), dim=-1), v)


class OwnDefault(SeparateInputs):  # the class's own code makes them one input
    def forward(self, q_in, k_in=None, v_in=None):
        k_in = q_in if k_in is None else k_in
        v_in = q_in if v_in is None else v_in
        return super().forward(q_in, k_in, v_in)


class ConvBN(nn.Module):
    def __init__(self, c=4):
        super().__init__()
        self.block = nn.Sequential(nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c))

    def forward(self, x):
        return self.block(x)
'''


def _module(tmp_path: Path, name: str) -> tuple[ModuleType, str]:
    path = tmp_path / f"{name}.py"
    path.write_text(MODELS, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod, str(path.resolve())


def _families(model: object, args: tuple[object, ...], path: str) -> set[int]:
    traced = trace_step(model, args, {})
    return {s.family for g in traced.graphs for s in find_sites(g, lambda f: f == path)}


def test_what_torch_computes_is_not_a_site(tmp_path: Path) -> None:
    mod, path = _module(tmp_path, "m_library_not")
    x = torch.randn(5, 2, 16)
    assert _families(mod.TorchAttention(), (x,), path) - {9} == set()  # the model's own q, k, v stay family 9
    assert _families(mod.PoolAttention(), (x,), path) == set()
    q = torch.randn(2, 2, 5, 8)
    assert _families(mod.FusedAttention(), (q, q, q), path) == set()
    assert _families(mod.Encoder(), (torch.randn(2, 5, 16),), path) & {5, 6, 10, 4} == set()


def test_what_the_model_writes_or_chains_is(tmp_path: Path) -> None:
    mod, path = _module(tmp_path, "m_library_sites")
    x = torch.randn(2, 5, 16)
    assert {4, 9, 10} <= _families(mod.ManualAttention(), (x,), path)
    assert 6 in _families(mod.Mlp(), (x,), path)
    assert 7 in _families(mod.ConvBN(), (torch.randn(2, 4, 8, 8),), path)


def test_one_tensor_passed_as_three_arguments_is_three_inputs(tmp_path: Path) -> None:
    mod, path = _module(tmp_path, "m_library_inputs")
    x = torch.randn(2, 5, 16)
    assert 9 not in _families(mod.SeparateInputs(), (x, x, x), path)  # construction's choice, not the class's
    assert 9 in _families(mod.OwnDefault(), (x,), path)
