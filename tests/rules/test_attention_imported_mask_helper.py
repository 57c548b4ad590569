"""An attention mask added by a helper of another file (`attn = maybe_add_mask(attn, attn_mask)`, timm ≥ 1.0.2x's
ViT `Attention`, `AttentionPoolLatent` and EVA; the helper in `timm/layers/attention.py`, re-exported by
`timm/layers/__init__.py`): `adopter.analysis.crossfile.additive` reads the helper's body and binds the name to
`torch.add` when it returns its first argument plus its second (`a + b`, `a if b is None else a + b`), so the
chain keeps its mask step; the fix hands the mask to `scaled_dot_product_attention(attn_mask=...)`, and the
rewritten module computes the same with no mask and with a float mask (outputs, input and parameter gradients,
eval and training mode; `equivalence.compare_modules`, float64, the state dict loaded with `strict=True`).
Helpers that compute anything else (a product, a masked fill, a third term, a third required argument) stay
opaque calls: no site."""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

import pytest

from adopter.analysis import analyse
from adopter.analysis.crossfile.additive import returns_sum_of_first_two
from adopter.analysis.crossfile.reach import CrossFileReach
from adopter.analysis.crossfile.resolver import ModuleResolver
from adopter.engine import Environment, find, load_rules

ENV = Environment("cpu", frozenset(), "2.13.0")
RULES = load_rules(select=["f10-manual-attention-sdpa"]).rules

HELPERS = '''
from typing import Optional

import torch


def maybe_add_mask(scores: torch.Tensor, attn_mask: Optional[torch.Tensor] = None):
    """Add the mask when there is one."""
    return scores if attn_mask is None else scores + attn_mask
'''

MODEL = '''
from typing import Optional

import torch
import torch.nn as nn

from {pkg}.layers import maybe_add_mask


class Attention(nn.Module):
    def __init__(self, dim, num_heads=2, attn_drop=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, attn_mask: Optional[torch.Tensor] = None):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        q = q * self.scale
        attn = q @ k.transpose(-2, -1)
        attn = maybe_add_mask(attn, attn_mask)
        attn = attn.softmax(dim=-1)
        attn = self.attn_drop(attn)
        x = attn @ v
        x = x.transpose(1, 2).reshape(B, N, C)
        return self.proj(x)
'''


def _package(tmp_path: Path, name: str, helpers: str = HELPERS) -> Path:
    pkg = tmp_path / name
    layers = pkg / "layers"
    layers.mkdir(parents=True)
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    # re-exported as timm does: `from .attention import maybe_add_mask` in the package's `__init__.py`
    (layers / "__init__.py").write_text("from .attention import maybe_add_mask\n", encoding="utf-8")
    (layers / "attention.py").write_text(helpers, encoding="utf-8")
    model = pkg / "model.py"
    model.write_text(MODEL.format(pkg=name), encoding="utf-8")
    return model


def _reach(tmp_path: Path) -> CrossFileReach:
    return CrossFileReach(ModuleResolver(search_paths=[str(tmp_path)]), root=str(tmp_path))


def _findings(tmp_path: Path, name: str, helpers: str = HELPERS) -> list[tuple[str, int, bool]]:
    model = _package(tmp_path, name, helpers)
    mf = analyse(model.read_text(encoding="utf-8"), str(model), reach=_reach(tmp_path))
    return [(f.rule_id, f.span.start_line + 1, f.fixable) for f in find(mf, RULES, ENV)]


def test_a_mask_added_by_a_helper_of_another_file_is_a_fixable_site(tmp_path: Path) -> None:
    assert _findings(tmp_path, "maskpkg") == [("f10-manual-attention-sdpa", 25, True)]


@pytest.mark.torch
def test_the_fix_hands_the_mask_to_sdpa_and_computes_the_same(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from adopter.session import RuleContext, Session
    from equivalence import compare_modules

    model = _package(tmp_path, "maskfix")
    session = Session(RuleContext(RULES, (), ENV), reach=_reach(tmp_path))
    fixed = session.fix(model.read_text(encoding="utf-8"), str(model))
    assert "attn_mask=attn_mask" in fixed.new_source and "maybe_add_mask(" not in fixed.new_source.split("class")[1]
    (model.parent / "fixed.py").write_text(fixed.new_source, encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        original = importlib.import_module("maskfix.model")
        rewritten = importlib.import_module("maskfix.fixed")
        mask = torch.randn(1, 1, 5, 5, dtype=torch.float64)
        for kwargs in ({}, {"attn_mask": mask}):
            torch.manual_seed(0)
            a = original.Attention(8).double()
            b = rewritten.Attention(8).double()
            compare_modules(a, b, lambda: (torch.randn(2, 5, 8, dtype=torch.float64, requires_grad=True),),
                            kwargs=kwargs, atol=1e-9, rtol=1e-6)
    finally:
        sys.path.remove(str(tmp_path))
        for name in ("maskfix.model", "maskfix.fixed", "maskfix.layers.attention", "maskfix.layers", "maskfix"):
            sys.modules.pop(name, None)


def test_an_unconditional_sum_helper_is_read_too(tmp_path: Path) -> None:
    helpers = "def add_bias(scores, bias):\n    return bias + scores\n\n\nmaybe_add_mask = add_bias\n"
    # `maybe_add_mask` is then an assigned name, not a function definition: not read (no site)
    assert _findings(tmp_path, "aliaspkg", helpers) == []
    helpers = "def maybe_add_mask(scores, bias):\n    return bias + scores\n"
    assert _findings(tmp_path, "sumpkg", helpers) == [("f10-manual-attention-sdpa", 25, True)]


@pytest.mark.parametrize("body", [
    "return scores * attn_mask",  # a product: not an additive mask
    "return scores.masked_fill(attn_mask, float('-inf'))",  # a fill (not read: no site rather than a guess)
    "return scores + attn_mask + 1.0",  # a third term
    "return scores if attn_mask is not None else scores + attn_mask",  # the alternatives swapped
    "scores = scores + attn_mask\n    return scores",  # two statements
])
def test_helpers_that_compute_anything_else_stay_opaque(tmp_path: Path, body: str) -> None:
    helpers = f"def maybe_add_mask(scores, attn_mask=None):\n    {body}\n"
    assert _findings(tmp_path, "otherpkg", helpers) == []


@pytest.mark.parametrize(("source", "expected"), [
    ("def f(a, b):\n    return a + b\n", True),
    ("def f(a, b=None):\n    return a + b if b is not None else a\n", True),
    ("def f(a, b=None, *, scale=1.0):\n    'doc'\n    return a if b is None else a + b\n", True),
    ("def f(a, b, c):\n    return a + b\n", False),  # a third required argument
    ("def f(a, b, *, c):\n    return a + b\n", False),  # a required keyword
    ("def f(a, b):\n    return a - b\n", False),
    ("def f(a, b):\n    return a + a\n", False),
    ("def f(a, b, c=None):\n    return a + c\n", False),  # the second parameter is not the one added
    ("def f(a, *bs):\n    return a + bs\n", False),
    ("def f(a):\n    return a + a\n", False),
])
def test_what_reads_as_the_first_argument_plus_the_second(source: str, expected: bool) -> None:
    fn = ast.parse(source).body[0]
    assert isinstance(fn, ast.FunctionDef)
    assert returns_sum_of_first_two(fn) is expected
