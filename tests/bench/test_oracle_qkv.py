"""Family 9 in the oracle as bench/data/LABELLING.md defines it (pass 10): three projections of one value of
the forward, feeding attention however heads are split; no site where only a caller makes them one tensor."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from oracle.match import find_sites  # noqa: E402
from oracle.trace import trace_step  # noqa: E402

FORMS = '''import torch
from torch import nn


class Inner(nn.Module):  # gliner's own MultiheadAttention: projects again, splits, attends
    def __init__(self, dim=16, heads=2):
        super().__init__()
        self.h = heads
        self.a, self.b, self.c = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)

    def split(self, t):
        B, T, C = t.shape
        return t.view(B, T, self.h, C // self.h).permute(0, 2, 1, 3)

    def forward(self, q, k, v):
        q, k, v = self.split(self.a(q)), self.split(self.b(k)), self.split(self.c(v))
        w = torch.matmul(q, k.transpose(-1, -2)).softmax(-1)
        return torch.matmul(w, v).transpose(1, 2).flatten(2)


class ProjectedTwice(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.q_proj, self.k_proj, self.v_proj = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.attn = Inner(dim)

    def forward(self, x):
        q = self.q_proj(x)
        k = self.k_proj(x)
        v = self.v_proj(x)
        return self.attn(q, k, v)


class TimeFirst(nn.Module):  # (T, B, C) layout, heads folded into the batch: fairseq / FSMT
    def __init__(self, dim=16, heads=2):
        super().__init__()
        self.h = heads
        self.q_proj, self.k_proj, self.v_proj = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)

    def forward(self, x):
        T, B, C = x.shape
        q = self.q_proj(x).contiguous().view(T, B * self.h, C // self.h).transpose(0, 1)
        k = self.k_proj(x).contiguous().view(-1, B * self.h, C // self.h).transpose(0, 1)
        v = self.v_proj(x).contiguous().view(-1, B * self.h, C // self.h).transpose(0, 1)
        w = torch.bmm(q, k.transpose(1, 2)).softmax(-1)
        return torch.bmm(w, v).transpose(0, 1).reshape(T, B, C)


class ThreeHeads(nn.Module):  # three Linears of one input that feed no attention
    def __init__(self, dim=16):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)

    def forward(self, x):
        return torch.tanh(self.a(x)) * torch.sigmoid(self.b(x)) + self.c(x)


class Attention(nn.Module):  # SAM's: three parameters, each projected
    def __init__(self, dim=16, heads=2):
        super().__init__()
        self.h = heads
        self.q_proj, self.k_proj, self.v_proj = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)

    def split(self, t):
        B, T, C = t.shape
        return t.reshape(B, T, self.h, C // self.h).transpose(1, 2)

    def forward(self, q, k, v):
        q = self.q_proj(q)
        k = self.k_proj(k)
        v = self.v_proj(v)
        q, k, v = self.split(q), self.split(k), self.split(v)
        w = (q @ k.transpose(-1, -2)).softmax(-1)
        return (w @ v).transpose(1, 2).flatten(2)


class Block(nn.Module):  # calls it with one tensor for all three
    def __init__(self, dim=16):
        super().__init__()
        self.self_attn = Attention(dim)

    def forward(self, x):
        return self.self_attn(q=x, k=x, v=x) + x


class Triangle(nn.Module):  # gated projections multiplied by an einsum: no softmax, no attention
    def __init__(self, dim=16):
        super().__init__()
        self.left, self.right, self.left_gate = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)

    def forward(self, x):
        left = self.left(x) * self.left_gate(x).sigmoid()
        right = self.right(x)
        return torch.einsum('bid,bjd->bij', left, right)


class TorchAttention(nn.Module):  # ultralytics' TransformerLayer: q/k/v Linears handed to nn.MultiheadAttention
    def __init__(self, dim=16, heads=2):
        super().__init__()
        self.q, self.k, self.v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.ma = nn.MultiheadAttention(dim, heads, batch_first=True)

    def forward(self, x):
        return self.ma(self.q(x), self.k(x), self.v(x))[0] + x


class AttentionPool(nn.Module):  # CLIP's: the weights go to torch's function, which makes the projections
    def __init__(self, dim=16, heads=2):
        super().__init__()
        self.h = heads
        self.q_proj, self.k_proj, self.v_proj = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.c_proj = nn.Linear(dim, dim)

    def forward(self, x):
        x = x.transpose(0, 1)
        out, _ = torch.nn.functional.multi_head_attention_forward(
            query=x, key=x, value=x, embed_dim_to_check=x.shape[-1], num_heads=self.h,
            q_proj_weight=self.q_proj.weight, k_proj_weight=self.k_proj.weight, v_proj_weight=self.v_proj.weight,
            in_proj_weight=None, in_proj_bias=torch.cat([self.q_proj.bias, self.k_proj.bias, self.v_proj.bias]),
            bias_k=None, bias_v=None, add_zero_attn=False, dropout_p=0.0, out_proj_weight=self.c_proj.weight,
            out_proj_bias=self.c_proj.bias, use_separate_proj_weight=True, training=self.training,
            need_weights=False)
        return out


class KeyDefaults(nn.Module):  # the class's own code makes them one: key and value default to the query
    def __init__(self, dim=16):
        super().__init__()
        self.inner = Attention(dim)
        self.q_proj, self.k_proj, self.v_proj = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)

    def forward(self, q, k=None):
        k = q if k is None else k
        return self.inner.split(self.q_proj(q)), self.inner.split(self.k_proj(k)), self.inner.split(self.v_proj(k))
'''


def _qkv_lines(tmp_path: Path, name: str, shape: tuple[int, ...]) -> tuple[list[set[int]], list[str]]:
    path = tmp_path / "oracle_qkv_forms.py"
    path.write_text(FORMS, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("oracle_qkv_forms", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with torch.device("meta"):
        model = getattr(module, name)()
    traced = trace_step(model, (torch.randn(*shape, device="meta"),), {})
    where = str(path.resolve())
    sites = [s for s in find_sites(traced.forward, lambda f: f == where) if s.family == 9]
    return [{ln for _, ln in s.lines} for s in sites], FORMS.splitlines()


def _line(lines: list[str], text: str) -> int:
    return next(i for i, ln in enumerate(lines, 1) if text in ln)


def test_projections_fed_to_another_projection_that_attends_are_a_site(tmp_path: Path) -> None:
    sites, lines = _qkv_lines(tmp_path, "ProjectedTwice", (2, 4, 16))
    assert any(_line(lines, "q = self.q_proj(x)") in s and _line(lines, "v = self.v_proj(x)") in s for s in sites)


def test_projections_split_time_first_into_a_bmm_are_a_site(tmp_path: Path) -> None:
    sites, lines = _qkv_lines(tmp_path, "TimeFirst", (4, 2, 16))
    assert [s for s in sites if _line(lines, "q = self.q_proj(x).contiguous()") in s]


def test_three_projections_that_feed_no_attention_are_no_site(tmp_path: Path) -> None:
    sites, _ = _qkv_lines(tmp_path, "ThreeHeads", (2, 4, 16))
    assert sites == []


def test_one_tensor_a_caller_passes_for_three_parameters_is_no_site(tmp_path: Path) -> None:
    sites, lines = _qkv_lines(tmp_path, "Block", (2, 4, 16))
    assert not [s for s in sites if _line(lines, "q = self.q_proj(q)") in s]


def test_one_value_the_class_makes_from_a_default_is_a_site(tmp_path: Path) -> None:
    sites, lines = _qkv_lines(tmp_path, "KeyDefaults", (2, 4, 16))
    assert [s for s in sites if _line(lines, "return self.inner.split(self.q_proj(q))") in s]


def test_gated_projections_multiplied_without_a_softmax_are_no_site(tmp_path: Path) -> None:
    sites, _ = _qkv_lines(tmp_path, "Triangle", (2, 4, 16))
    assert sites == []


def test_projections_handed_to_torch_multihead_attention_are_a_site(tmp_path: Path) -> None:
    sites, lines = _qkv_lines(tmp_path, "TorchAttention", (2, 4, 16))
    assert [s for s in sites if _line(lines, "return self.ma(self.q(x)") in s]


def test_projections_torch_makes_from_the_model_weights_are_no_site(tmp_path: Path) -> None:
    sites, _ = _qkv_lines(tmp_path, "AttentionPool", (2, 4, 16))
    assert sites == []
