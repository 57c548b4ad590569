"""Attention scores biased through a submodule, and softmaxed through lucidrains' `stable_softmax` (families 4/10).

Shaped on dalle2-pytorch 1.15 `dalle2_pytorch/vqgan_vae.py`: `stable_softmax` lines 101-104 (`t / alpha`, the
detached row-max shift, `(t * alpha).softmax(dim)`), `ContinuousPositionBias` lines 185-220 (an MLP over a
buffer of relative positions, forward `return x + bias`) and `VQGanAttention.forward` lines 356-379 (`sim =
self.cpb(sim)` between the einsum product and `stable_softmax(sim, dim=-1)`); nuwa-pytorch 0.7
`nuwa_pytorch/vqgan_vae.py` 97-100 and 265-285 is the same code; timm 1.0 `timm/models/gcvit.py` 198-201
(`attn = self.rel_pos(attn)`, `RelPosBias` imported from `timm.layers`, defined in
`timm/layers/pos_embed_rel.py` 268-300 with forward `return attn + self.get_bias()`). Rewritten at fixture size.

The bias submodule's call reads as `scores + term` (`names.bias_forward`, `idioms.bias_submodules`); the helper's
`/c`, shift, `*c` as its softmax (`canonical.rescaled_shift`). Both are detection only: the term is computed
inside the submodule (no value of the forward to hand SDPA as `attn_mask`), and a chain through a helper is
never fixed. Refusals: submodules that scale, normalise or compute their term from their input, helpers that
renormalise (AllenNLP's masked softmax) or multiply back by another value.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from attention_harness import findings_of, rules_of, skip_reasons

from adopter.analysis import analyse
from adopter.analysis.crossfile.reach import CrossFileReach
from adopter.analysis.crossfile.resolver import ModuleResolver
from adopter.engine import Environment, find
from adopter.session import rewrite
from adopter.synth import Rewritten

RULES = rules_of("f04-softmax", "f10-manual-attention-sdpa")
F10 = rules_of("f10-manual-attention-sdpa")

MODULE = '''
import torch
from torch import nn, einsum


def stable_softmax(t, dim=-1, alpha=32 ** 2):
    t = t / alpha
    t = t - torch.amax(t, dim=dim, keepdim=True).detach()
    return (t * alpha).softmax(dim=dim)


class PositionBias(nn.Module):
    def __init__(self, heads, n):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.1), nn.Linear(16, heads))
        self.register_buffer("rel_pos", torch.randn(n, n, 2), persistent=False)

    def forward(self, x):
        n, device = x.shape[-1], x.device
        rel_pos = self.rel_pos[:n, :n].to(device)
        bias = self.net(rel_pos).permute(2, 0, 1)
        return x + bias


class Attention(nn.Module):
    def __init__(self, dim, heads=2, n=16):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.cpb = PositionBias(heads, n)
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (t.reshape(b, n, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        sim = einsum("b h i d, b h j d -> b h i j", q, k) * self.scale
        sim = self.cpb(sim)
        attn = stable_softmax(sim, dim=-1)
        out = einsum("b h i j, b h j d -> b h i d", attn, v)
        return self.to_out(out.transpose(1, 2).reshape(b, n, -1))
'''

BIAS_FORWARD = '''
    def forward(self, x):
        n, device = x.shape[-1], x.device
        rel_pos = self.rel_pos[:n, :n].to(device)
        bias = self.net(rel_pos).permute(2, 0, 1)
        return x + bias
'''
PLAIN_SOFTMAX = ("attn = stable_softmax(sim, dim=-1)", "attn = sim.softmax(dim=-1)")
NO_BIAS = ("        sim = self.cpb(sim)\n", "")


def line(source: str, needle: str) -> int:
    return next(i for i, text in enumerate(source.splitlines()) if needle in text)


def f10(source: str) -> list[int]:
    return sorted(f.span.start_line for f in findings_of(source, RULES) if f.family == 10)


def test_a_bias_submodule_and_a_stable_softmax_helper_make_the_chain() -> None:
    site = line(MODULE, "sim = einsum")
    assert f10(MODULE) == [site]
    reasons = skip_reasons(MODULE, F10)
    assert len(reasons) == 1 and "adds a bias its submodule's forward computes" in reasons[0]


@pytest.mark.parametrize("change", [PLAIN_SOFTMAX, NO_BIAS], ids=["bias-submodule", "stable-softmax"])
def test_each_fact_alone(change: tuple[str, str]) -> None:
    # the bias submodule before a plain softmax; the stable softmax helper with no bias: each a site, not fixed
    source = MODULE.replace(*change)
    assert change[0] in MODULE
    assert f10(source) == [line(source, "sim = einsum")]
    assert len(skip_reasons(source, F10)) == 1


@pytest.mark.parametrize("forward", [
    "return x * self.net(self.rel_pos).mean()",  # scales its input
    "return torch.nn.functional.layer_norm(x, x.shape[-1:])",  # normalises its input
    "return x + x.mean(dim=-1, keepdim=True)",  # the term computed from the scores
    "return x + self.net(x.unsqueeze(-1)).squeeze(-1)",  # the term computed from the scores, through a layer
    "x = x * 2\n        return x + self.rel_pos.sum()",  # the input rebound before the sum
    "y = x.clamp(min=0)\n        return x + y",  # a term bound from the input
    "if self.training:\n            return x\n        return x + self.rel_pos.sum()",  # a second return
    "x.mul_(0.5)\n        return x + self.rel_pos.sum()",  # the input changed in place
    "return x + self.rel_pos.sum() if self.training else x * 2",  # a product on one branch
], ids=["scale", "norm", "row-mean", "layer-of-scores", "rebound", "term-of-input", "early-return", "in-place",
        "conditional"])
def test_submodules_that_do_more_than_add_a_term_stay_opaque(forward: str) -> None:
    source = MODULE.replace(BIAS_FORWARD, f"\n    def forward(self, x):\n        {forward}\n").replace(*PLAIN_SOFTMAX)
    assert BIAS_FORWARD in MODULE
    assert f10(source) == []


def test_a_submodule_with_its_own_call_method_stays_opaque() -> None:
    source = MODULE.replace(BIAS_FORWARD, BIAS_FORWARD + "\n    def __call__(self, x):\n        return x * 2\n")
    assert f10(source.replace(*PLAIN_SOFTMAX)) == []


ALLENNLP = '''
def stable_softmax(t, dim=-1, alpha=None):
    mask = (t > -1e4).float()
    result = torch.nn.functional.softmax(t * mask, dim=dim)
    result = result * mask
    return result / (result.sum(dim=dim, keepdim=True) + 1e-13)
'''


@pytest.mark.parametrize("helper", [
    # AllenNLP's masked softmax (FastNLP `attention.py` 204): renormalised, not the softmax
    ALLENNLP,
    # multiplied back by another number than it was divided by: a temperature of 1/32 (the rows' constant still
    # cancels, but the scale stays: no cancel to claim)
    "\ndef stable_softmax(t, dim=-1, alpha=32 ** 2):\n    t = t / alpha\n"
    "    t = t - torch.amax(t, dim=dim, keepdim=True).detach()\n    return (t * 32).softmax(dim=dim)\n",
    # multiplied back by a value that is not a number (a tensor could be per-element or zero)
    "\ndef stable_softmax(t, dim=-1, alpha=32 ** 2):\n    t = t / alpha\n"
    "    t = t - torch.amax(t, dim=dim, keepdim=True).detach()\n    return (t * t.std()).softmax(dim=dim)\n",
], ids=["allennlp-renormalised", "other-number", "tensor-factor"])
def test_helpers_that_are_not_the_softmax_stay_silent(helper: str) -> None:
    start = MODULE.index("\ndef stable_softmax")
    end = MODULE.index("\n\nclass PositionBias")
    source = MODULE[:start] + helper.rstrip("\n") + MODULE[end:]
    assert f10(source.replace(*NO_BIAS)) == []


def test_the_rescaled_shift_written_in_the_forward_keeps_its_ops() -> None:
    # Outside a helper the division would be a statement a fix must account for: not read (left as written).
    source = MODULE.replace(*NO_BIAS).replace(
        "attn = stable_softmax(sim, dim=-1)",
        "sim = sim / 1024\n        sim = sim - sim.amax(dim=-1, keepdim=True).detach()\n"
        "        attn = (sim * 1024).softmax(dim=-1)")
    assert f10(source) == []


# timm: the bias module of another file, imported by name through a package that re-exports it
POS_REL = '''
import torch
from torch import nn


class RelPosBias(nn.Module):
    def __init__(self, window_size, num_heads):
        super().__init__()
        n = window_size * window_size
        self.relative_position_bias_table = nn.Parameter(torch.zeros(num_heads, n, n))

    def get_bias(self) -> torch.Tensor:
        return self.relative_position_bias_table.unsqueeze(0)

    def forward(self, attn, shared_rel_pos=None):
        return attn + self.get_bias()
'''

GCVIT = '''
import torch
import torch.nn as nn

from {pkg}.layers import RelPosBias


class WindowAttentionGlobal(nn.Module):
    def __init__(self, dim, num_heads=2, window_size=4):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.rel_pos = RelPosBias(window_size=window_size, num_heads=num_heads)
        self.qkv = nn.Linear(dim, dim * 3)
        self.attn_drop = nn.Dropout(0.0)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        q = q * self.scale
        attn = q @ k.transpose(-2, -1).contiguous()
        attn = self.rel_pos(attn)
        attn = attn.softmax(dim=-1)
        attn = self.attn_drop(attn)
        x = (attn @ v).transpose(1, 2).reshape(B, N, C)
        return self.proj(x)
'''


def _imported(tmp_path: Path, name: str, pos_rel: str = POS_REL, model_text: str = GCVIT) -> list[tuple[int, str]]:
    """(line, the reason no fix is made) of each family-10 site of the model file (none may be fixed)."""
    pkg = tmp_path / name
    (pkg / "layers").mkdir(parents=True)
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "layers" / "__init__.py").write_text("from .pos_embed_rel import RelPosBias\n", encoding="utf-8")
    (pkg / "layers" / "pos_embed_rel.py").write_text(pos_rel, encoding="utf-8")
    model = pkg / "gcvit.py"
    model.write_text(model_text.format(pkg=name), encoding="utf-8")
    reach = CrossFileReach(ModuleResolver(search_paths=[str(tmp_path)]), root=str(tmp_path))
    mf = analyse(model.read_text(encoding="utf-8"), str(model), reach=reach)
    env = Environment("cpu", frozenset(), "2.13.0")
    findings = find(mf, F10, env)
    result = rewrite(model.read_text(encoding="utf-8"), findings, rules=F10, env=env, path=str(model))
    assert not (isinstance(result, Rewritten) and result.applied)
    reasons = [s.reason for s in result.skipped]
    return [(f.span.start_line + 1, reason) for f, reason in zip(findings, reasons, strict=True)]


def test_a_bias_module_of_another_file_is_read_through_its_import(tmp_path: Path) -> None:
    [(site, reason)] = _imported(tmp_path, "biaspkg")
    assert site == 24 and reason  # declined (first for timm's `.contiguous()` key, which the rewrite does not read)
    plain = GCVIT.replace("k.transpose(-2, -1).contiguous()", "k.transpose(-2, -1)")
    [(site, reason)] = _imported(tmp_path, "plainpkg", model_text=plain)
    assert site == 24 and "`self.rel_pos(attn)` adds a bias its submodule's forward computes" in reason


def test_a_module_of_another_file_that_scales_stays_opaque(tmp_path: Path) -> None:
    scaled = POS_REL.replace("return attn + self.get_bias()", "return attn * self.get_bias()")
    assert _imported(tmp_path, "scalepkg", scaled) == []


@pytest.mark.parametrize(("forward", "adds"), [
    ("def forward(self, x):\n    return x + self.bias", True),
    ("def forward(self, x):\n    return self.table[self.index] + x", True),
    ("def forward(self, x):\n    return x.add(self.bias)", True),
    ("def forward(self, x):\n    return torch.add(x, self.bias)", True),
    ("def forward(self, x, shared=None):\n    b = self.mlp(self.coords)\n    return x + b.view(x.size(0), -1)", True),
    ("def forward(self, x):\n    return x - self.bias", False),
    ("def forward(self, x):\n    return x.add(self.bias, alpha=2)", False),
    ("def forward(self, x):\n    return x + x.softmax(-1)", False),
    ("def forward(self, x):\n    for t in x:\n        b = t\n    return x + b", False),
    ("@torch.jit.ignore\ndef forward(self, x):\n    return x + self.bias", False),
    ("def forward(self, x):\n    yield x + self.bias", False),
    ("def forward(self):\n    return self.bias", False),
], ids=["param", "table", "add-method", "torch-add", "shaped", "minus", "alpha", "softmax", "loop", "decorated",
        "generator", "no-input"])
def test_adds_term(forward: str, adds: bool) -> None:
    from adopter.analysis.names.bias_forward import (
        adds_term,  # here: the module is new (the file runs on older trees)
    )

    fn = ast.parse(forward).body[0]
    assert isinstance(fn, ast.FunctionDef)
    assert adds_term(fn) is adds


SHIFT_HELPER = '''
import torch
from torch import nn


def stable_softmax(t, dim=-1):
    t = t - torch.amax(t, dim=dim, keepdim=True).detach()
    return t.softmax(dim=dim)


class Attend(nn.Module):
    def forward(self, sim):
        return stable_softmax(sim, dim=-1)
'''


@pytest.mark.parametrize("source", [SHIFT_HELPER, MODULE[:MODULE.index("\n\nclass PositionBias")] + '''


class Attend(nn.Module):
    def forward(self, sim):
        return stable_softmax(sim, dim=-1)
'''], ids=["shift", "rescaled-shift"])
def test_a_softmax_read_through_a_helper_shift_is_not_rewritten_with_the_callers_name(source: str) -> None:
    # The helper's softmax reads the caller's `sim` through the shift (a cast for the match): base 371a4661 wrote
    # `liger_softmax(sim)` into the helper, where `sim` is no name. Now declined; the site stays reported.
    liger = Environment("cuda", frozenset({"liger_kernel"}), "2.13.0")
    f04 = rules_of("f04-softmax")
    assert [f.rule_id for f in findings_of(source, f04, env=liger)] == ["f04-softmax"]
    reasons = skip_reasons(source, f04, env=liger)
    assert len(reasons) == 1 and "cannot move exactly" in reasons[0]


@pytest.mark.torch
def test_the_rescaled_shift_is_the_softmax_numerically() -> None:
    # The fact the reading rests on (no fix is claimed): float64, seed 0, scores up to ±1e3; `32 ** 2` is a power
    # of two, so `/c` then `*c` is exact and only the shift's rounding remains (atol 1e-12).
    torch = pytest.importorskip("torch")
    namespace: dict[str, object] = {}
    exec(compile(MODULE[:MODULE.index("\n\nclass PositionBias")], "stable_softmax", "exec"), namespace)
    stable = namespace["stable_softmax"]
    assert callable(stable)
    torch.manual_seed(0)
    t = torch.randn(2, 3, 5, 7, dtype=torch.float64) * 1e3
    torch.testing.assert_close(stable(t, dim=-1), t.softmax(dim=-1), atol=1e-12, rtol=0)
