"""The second round's rewrites (bench/metamorphic_algebra.py, bench/metamorphic_config.py) keep what the model
computes (float64 outputs and input gradients) and refuse the look-alikes where they would not."""

from __future__ import annotations

import ast
import importlib
import random
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

from test_metamorphic import FIXTURE  # noqa: E402

import metamorphic  # noqa: E402  (registers the second round's rewrites)
import metamorphic_rewrites as rw  # noqa: E402
from metamorphic_algebra import ALGEBRA  # noqa: E402
from metamorphic_config import CONFIG  # noqa: E402

# Shaped on lucidrains vit-pytorch 1.8 vit_pytorch/vit.py:30-60 (Attention: `self.scale = dim_head ** -0.5`,
# `nn.Softmax(dim=-1)` as an attribute, q/k/v head splits) written with einsum as x-transformers 1.42
# x_transformers/attend.py:330-360 does (`einsum('b h i d, b h j d -> b h i j', q, k)`), a gated MLP halved by
# `chunk(2, dim=-1)` as x-transformers x_transformers/x_transformers.py:720-740 (GLU), and an RMSNorm written
# `x / torch.sqrt(torch.mean(x * x, -1, keepdim=True) + eps)` as in mamba-ssm-style code; rewritten at fixture
# size so that each new rewrite finds its form here or in test_metamorphic's FIXTURE.
FIXTURE2 = '''
import math
import torch
from torch import nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        var = torch.mean(x * x, dim=-1, keepdim=True)
        return x / torch.sqrt(var + self.eps) * self.weight


class Attention(nn.Module):
    def __init__(self, dim, heads=4):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.scale = self.head_dim ** -0.5
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_kv = nn.Linear(dim, 2 * dim, bias=False)
        self.to_out = nn.Linear(dim, dim)
        self.attend = nn.Softmax(dim=-1)

    def forward(self, x):
        b, n, _ = x.shape
        q = self.to_q(x).view(b, n, self.heads, self.head_dim).transpose(1, 2)
        k, v = self.to_kv(x).chunk(2, dim=-1)
        k = k.view(b, n, self.heads, self.head_dim).permute(0, 2, 1, 3)
        v = v.reshape(b, n, self.heads, self.head_dim).transpose(1, 2)
        q = q * self.scale
        dots = torch.einsum('bhid,bhjd->bhij', q, k)
        attn = self.attend(dots)
        out = torch.einsum('bhij,bhjd->bhid', attn, v)
        out = out.transpose(1, 2).reshape(b, n, -1)
        return self.to_out(out)


class GatedMlp(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w12 = nn.Linear(dim, 2 * hidden)
        self.w3 = nn.Linear(hidden, dim)

    def forward(self, x):
        a, b = self.w12(x).chunk(2, dim=-1)
        return self.w3(F.silu(a) * b)


class Block(nn.Module):
    def __init__(self, dim, heads=4):
        super().__init__()
        self.norm1 = RMSNorm(dim)
        self.attn = Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = GatedMlp(dim, 2 * dim)
        self.head = nn.Linear(16, 16)
        self.act = nn.GELU()

    def forward(self, x):
        x = self.attn(self.norm1(x)) + x
        x = x + self.mlp(self.norm2(x))
        h = x / math.sqrt(x.shape[-1])
        scores = h @ x.transpose(-2, -1)
        ctx = (scores.softmax(-1) @ x) * 0.5
        return self.act(self.head(x)) + ctx
'''

NEW = sorted({**ALGEBRA, **CONFIG})


def _load(root: Path, package: str, files: dict[str, str]):
    pkg = root / package
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    for rel, text in files.items():
        (pkg / rel).write_text(text, encoding="utf-8")
    return importlib.import_module(f"{package}.model")


def _run(module, cls: str):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    block = getattr(module, cls)(16, 4).double()
    x = torch.randn(2, 5, 16, dtype=torch.float64, requires_grad=True)
    out = block(x)
    out.sum().backward()
    return out.detach(), x.grad, [p.grad for p in block.parameters()]


def test_the_new_rewrites_are_registered_with_their_groups() -> None:
    assert set(NEW) <= set(rw.REWRITES)
    assert {metamorphic.GROUPS[n] for n in ALGEBRA} == {9} and {metamorphic.GROUPS[n] for n in CONFIG} == {10}


@pytest.mark.parametrize("name", NEW)
def test_new_rewrite_applies_to_a_fixture_and_keeps_outputs_and_gradients(name: str, tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    applied = 0
    sys.path.insert(0, str(tmp_path))
    try:
        for f, fixture in enumerate((FIXTURE, FIXTURE2)):
            normal = ast.unparse(ast.parse(fixture))
            variants = rw.apply(name, normal, random.Random(0))
            if not variants:
                continue
            original = _run(_load(tmp_path, f"orig_{name}_{f}", {rw.MAIN: fixture}), "Block")
            for i, v in enumerate(variants):
                assert v.files[rw.MAIN] != normal
                out, grad, params = _run(_load(tmp_path, f"new_{name}_{f}_{i}", v.files), "Block")
                # equal parameters drawn in the same order; the algebra may reorder float64 rounding (einsum
                # against matmul, the scale before or after the product, rsqrt against 1 / sqrt): 1e-10
                torch.testing.assert_close(out, original[0], rtol=1e-10, atol=1e-10)
                torch.testing.assert_close(grad, original[1], rtol=1e-10, atol=1e-10)
                assert len(params) == len(original[2])
                for p, q in zip(params, original[2]):
                    torch.testing.assert_close(p, q, rtol=1e-10, atol=1e-10)
                applied += 1
    finally:
        sys.path.remove(str(tmp_path))
    assert applied, f"{name} found nothing to rewrite in either fixture"


def _apply(name: str, text: str) -> str | None:
    variants = rw.apply(name, text, random.Random(0))
    return variants[0].files[rw.MAIN] if variants else None


def test_the_scale_moves_only_when_it_is_a_python_number() -> None:
    text = ("import torch\n\n\ndef attend(q, k, mask):\n    d = q.shape[-1]\n"
            "    a = (q @ k.transpose(-2, -1)) * mask\n    b = (q @ k.transpose(-2, -1)) / d ** 0.5\n    return a + b\n")
    out = _apply("scale_to_query", text)
    assert out is not None and "* mask" in out and "q / d ** 0.5 @" in out
    # a query read again after the product keeps its scaled statement
    kept = "def f(q, k):\n    q = q * 0.125\n    s = q @ k\n    return s + q.sum()\n"
    assert _apply("scale_to_scores", kept) is None


def test_transpose_becomes_a_permute_only_of_a_four_d_view() -> None:
    text = "def f(x, b, n, h, d):\n    y = x.transpose(1, 2)\n    z = x.view(b, n, h * d).transpose(1, 2)\n    return y, z\n"
    assert _apply("transpose_to_permute", text) is None
    assert _apply("permute_to_transpose", "def f(x):\n    return x.permute(0, 2, 3, 1)\n") is None


def test_einsum_refuses_equations_that_are_no_matrix_product() -> None:
    text = ("import torch\n\n\ndef f(a, b):\n    x = torch.einsum('bhid,bhjd->bhji', a, b)\n"
            "    y = torch.einsum('bid,bjd->bij', a, b)\n    z = torch.einsum('bhd,bhd->bh', a, b)\n    return x, y, z\n")
    out = _apply("einsum_to_matmul", text)
    assert out is not None and "bhji" in out and "bhd,bhd->bh" in out and "a @ b.transpose(-2, -1)" in out


def test_operand_order_leaves_sequences_and_chunks_other_than_halves() -> None:
    text = ("def f(x, layer):\n    blocks = [layer()] * 3\n    shape = x.shape[:2] + (4, -1)\n"
            "    a, b, c = x.chunk(3, dim=-1)\n    h, g = x.chunk(2, dim=1)\n    return blocks, shape, a, h\n")
    assert _apply("operand_order", text) is None
    assert _apply("chunk_to_split", text) is None
    res = "def forward(self, x):\n    x = x + (1, 2)\n    y = x + self.f(x)\n    return y\n"
    assert _apply("residual_order", res) is None


def test_config_rewrites_keep_calls_of_the_constructor_as_they_were() -> None:
    text = ("import torch.nn as nn\n\n\nclass M(nn.Module):\n    def __init__(self, dim):\n        super().__init__()\n"
            "        self.fc = nn.Linear(dim, 64)\n        self.act = nn.GELU(approximate='tanh')\n"
            "        self.norm = nn.LayerNorm(64, eps=1e-05)\n")
    out = _apply("act_layer_param", text)
    assert out is not None and "*, act_layer=nn.GELU" in out and "act_layer(approximate='tanh')" in out
    out = _apply("norm_layer_partial", text)
    assert out is not None and "norm_layer=partial(nn.LayerNorm, eps=1e-05)" in out and "norm_layer(64)" in out
    out = _apply("literal_dims_to_parameters", text)
    assert out is not None and "dim_64=64" in out and "nn.Linear(dim, dim_64)" in out
    out = _apply("config_object", text)
    assert out is not None and "config = SimpleNamespace(dim=dim)" in out and "nn.Linear(config.dim, 64)" in out
    # a parameter rebound in the body is left alone
    rebound = text.replace("super().__init__()", "super().__init__()\n        dim = dim * 2")
    out = _apply("config_object", rebound)
    assert out is None


def test_softmax_module_rewrites_refuse_a_softmax_used_otherwise() -> None:
    text = ("import torch.nn as nn\n\n\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.sm = nn.Softmax(dim=-1)\n\n    def forward(self, x):\n        f = self.sm\n        return f(x)\n")
    assert _apply("softmax_to_call", text) is None
    dyn = ("import torch.nn as nn\n\n\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n\n"
           "    def forward(self, x, d):\n        return x.softmax(d)\n")
    assert _apply("softmax_to_module", dyn) is None


def test_a_layer_built_in_a_parameter_default_is_not_made_a_parameter_of_the_same_init() -> None:
    # ultralytics 8.3 ultralytics/nn/modules/transformer.py:24 `def __init__(self, c1, ..., act=nn.GELU(), ...)`: a
    # default runs at definition time, where `act_layer` of the same signature does not exist
    text = ("import torch.nn as nn\n\n\nclass M(nn.Module):\n    def __init__(self, dim, act=nn.GELU()):\n"
            "        super().__init__()\n        self.act = act\n        self.fc = nn.Linear(dim, 64)\n")
    assert _apply("act_layer_param", text) is None
    out = _apply("act_getattr", text)
    assert out is not None and "act=getattr(nn, 'GELU')()" in out
    namespace: dict = {}
    pytest.importorskip("torch")
    exec(compile(_apply("literal_dims_to_parameters", text) or "", "m", "exec"), namespace)
    assert namespace["M"](8).fc.out_features == 64
