"""bench/metamorphic.py: every rewrite keeps what the model computes, and the comparison counts a planted loss."""

from __future__ import annotations

import ast
import importlib
import random
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import metamorphic  # noqa: E402
import metamorphic_rewrites as rw  # noqa: E402
from metamorphic import Found  # noqa: E402
from metamorphic_algebra import ALGEBRA  # noqa: E402
from metamorphic_config import CONFIG  # noqa: E402

# the first round's rewrites (the second round's, registered by `metamorphic`, are tested on two fixtures in
# test_metamorphic_algebra.py: not every one finds its form in this fixture)
FIRST_ROUND = sorted(set(rw.REWRITES) - set(ALGEBRA) - set(CONFIG))

# Shaped on timm 1.0.12 timm/models/vision_transformer.py:59-170 (Attention, Block) and timm/layers/mlp.py:13-50
# (Mlp), with an RMSNorm written out as torchtune 0.4.0 torchtune/modules/rms_norm.py:40-50 does; rewritten at
# fixture size, with one form of each rewrite (a Sequential called as a statement, a softmax whose `dim` is
# positional and one whose `dim` is a keyword, `@` and `torch.matmul`, a module-level helper, a helper method).
FIXTURE = '''
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled(x, dim):
    return x * math.sqrt(1.0 / dim)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.scale = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        norm = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return x * norm * self.scale


class Attention(nn.Module):
    def __init__(self, dim, heads=4):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def _scores(self, q, k):
        return scaled(q, self.head_dim) @ k.transpose(-2, -1)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = self._scores(q, k)
        attn = attn.softmax(dim=-1)
        x = torch.matmul(attn, v)
        x = x.transpose(1, 2).reshape(B, N, C)
        return self.proj(x)


class Mlp(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))

    def forward(self, x):
        x = self.net(x)
        return x


class Block(nn.Module):
    def __init__(self, dim, heads=4):
        super().__init__()
        self.norm1 = RMSNorm(dim)
        self.attn = Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = Mlp(dim, 2 * dim)
        self.pool = nn.Linear(dim, 1)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        h = self.norm2(x)
        x = x + self.mlp(h)
        weights = F.softmax(self.pool(x), 1)
        return (weights * x).sum(1)
'''


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


@pytest.mark.parametrize("name", FIRST_ROUND)
def test_rewrite_applies_to_the_fixture_and_keeps_outputs_and_gradients(name: str, tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    variants = rw.apply(name, ast.unparse(ast.parse(FIXTURE)), random.Random(0))
    assert variants, f"{name} found nothing to rewrite in the fixture"
    sys.path.insert(0, str(tmp_path))
    try:
        original = _run(_load(tmp_path, f"orig_{name}", {rw.MAIN: FIXTURE}), "Block")
        for i, v in enumerate(variants):
            assert v.files[rw.MAIN] != ast.unparse(ast.parse(FIXTURE)) or name == "normalise"
            block = next((new for new, old in v.classes.items() if old == "Block"), "Block")
            out, grad, params = _run(_load(tmp_path, f"new_{name}_{i}", v.files), block)
            # the same parameters drawn in the same order, the same float64 arithmetic: equal to 1e-12
            torch.testing.assert_close(out, original[0], rtol=1e-12, atol=1e-12)
            torch.testing.assert_close(grad, original[1], rtol=1e-12, atol=1e-12)
            assert len(params) == len(original[2])
    finally:
        sys.path.remove(str(tmp_path))


def test_rewrites_skip_a_file_without_their_form() -> None:
    text = "import os\n\n\ndef main():\n    return os.getcwd()\n"
    for name in ("nn_alias", "functional_spelled_out", "method_to_function", "matmul_operator_to_call",
                 "sequential_modulelist", "split_base_class", "extract_method", "builder_method"):
        assert rw.apply(name, text, random.Random(0)) == [], name


def test_renaming_keeps_attributes_read_off_self_only() -> None:
    # `eps` is an attribute a LayerNorm base owns, `other.k` is read off something else: both kept
    text = ("class A:\n    def __init__(self, other):\n        self.k = 1\n        self.eps = 2\n        self.q = 3\n"
            "        self.r = other.k\n")
    (v,) = rw.apply("rename_attributes", text, random.Random(0))
    out = v.files[rw.MAIN]
    assert "self.q_r = 3" in out and "self.k = 1" in out and "self.eps = 2" in out


def test_split_base_class_puts_init_and_forward_in_two_files() -> None:
    variants = rw.apply("split_base_class", ast.unparse(ast.parse(FIXTURE)), random.Random(0))
    assert len(variants) == 3  # at most three classes drawn per file
    for v in variants:
        assert set(v.files) == {rw.MAIN, "base.py", "__init__.py"}
        assert "from .base import" in v.files[rw.MAIN]


def test_compare_counts_a_planted_loss_and_gain_through_the_class_map() -> None:
    base = [Found("Attention", "forward", 10, "f10", 30), Found("Attention", "forward", 10, "f10", 40),
            Found("RMSNorm", "forward", 12, "f12", 10)]
    new = [Found("AttentionR", "forward", 10, "f10", 31), Found("RMSNorm", "forward", 12, "f12", 10),
           Found("Mlp", "forward", 5, "f5", 50)]
    kept, lost, gained = metamorphic.compare(base, new, {"AttentionR": "Attention"})
    assert kept == 2
    assert [(f.scope, f.line) for f in lost] == [("Attention", 40)]
    assert [(f.scope, f.family) for f in gained] == [("Mlp", 5)]


def test_run_file_reports_a_planted_loss(monkeypatch: pytest.MonkeyPatch) -> None:
    def drop_softmax(tree: ast.Module, rng: random.Random) -> list[rw.Variant]:
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and "softmax(dim=-1)" in ast.unparse(node):
                node.value = ast.Name("attn", ast.Load())
        return [rw.Variant({rw.MAIN: ast.unparse(tree)})]

    monkeypatch.setitem(rw.REWRITES, "drop_softmax", drop_softmax)
    outcomes = metamorphic.run_file("fixture/model.py", FIXTURE, ("normalise", "drop_softmax"), 0, 120.0)
    by_name = {o.rewrite: o for o in outcomes}
    assert by_name["normalise"].lost == [] and by_name["normalise"].base > 0
    lost = by_name["drop_softmax"].lost
    assert lost and {f["scope"] for f in lost} == {"Attention"}
    assert "attn = attn" in lost[0]["snippet"]
    rows = metamorphic.table(outcomes)
    assert rows["drop_softmax"]["lost"] == len(lost) and rows["normalise"]["file_rate"] == 1.0


def test_compare_maps_dotted_scopes_and_net_pairs_a_moved_site() -> None:
    base = [Found("ResNet._make_layer", "_make_layer", 7, "f07", 134), Found("Bert", "helper", 4, "f04", 60)]
    new = [Found("ResNetR._make_layer_r", "_make_layer_r", 7, "f07", 134), Found("Other", "helper", 4, "f04", 90)]
    kept, lost, gained = metamorphic.compare(base, new, {"ResNetR": "ResNet"}, {"_make_layer_r": "_make_layer"})
    assert kept == 1 and [f.scope for f in lost] == ["Bert"] and [f.scope for f in gained] == ["Other"]
    # the softmax of a shared helper now credited to another class: moved, not lost
    o = metamorphic.Outcome("f", "reorder_classes", 0, 2, kept, [metamorphic.asdict(f) for f in lost],
                            [metamorphic.asdict(f) for f in gained])
    assert metamorphic.net(o) == ([], [], 1)
    assert metamorphic.table([o])["reorder_classes"]["invariant"] == 1


def test_helpers_to_sibling_checks_both_files() -> None:
    (v,) = rw.apply("helpers_to_sibling", ast.unparse(ast.parse(FIXTURE)), random.Random(0))
    assert v.checked == (rw.MAIN, "helpers.py") and "def scaled" in v.files["helpers.py"]
    assert "from .helpers import scaled" in v.files[rw.MAIN]


def test_a_later_run_replaces_the_outcomes_of_the_same_file_and_rewrite() -> None:
    first = [metamorphic.Outcome("a", "x", 0, 1, 0, [{"family": 4}]), metamorphic.Outcome("a", "y", 0, 1, 1)]
    later = [metamorphic.Outcome("a", "x", 0, 1, 1)]
    merged = metamorphic._merged([first, later])
    assert sorted((o.rewrite, o.kept) for o in merged) == [("x", 1), ("y", 1)]


def test_a_rewrite_that_raises_is_an_error_of_its_file_not_of_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(tree: ast.Module, rng: random.Random) -> list[rw.Variant]:
        raise StopIteration

    monkeypatch.setitem(rw.REWRITES, "broken", broken)
    outcomes = metamorphic.run_file("fixture/model.py", FIXTURE, ("broken",), 0, 120.0)
    assert [o.error for o in outcomes] == ["rewrite: StopIteration: "]


def test_a_later_run_drops_a_rewrite_that_no_longer_applies_to_a_file_it_read() -> None:
    first = [metamorphic.Outcome("a", "normalise", 0, 1, 1), metamorphic.Outcome("a", "x", 0, 1, 0, [{"family": 4}])]
    later = [metamorphic.Outcome("a", "normalise", 0, 1, 1), metamorphic.Outcome("b", "x", 0, 1, 1)]
    merged = metamorphic._merged([first, later])
    assert sorted((o.file, o.rewrite) for o in merged) == [("a", "normalise"), ("b", "x")]
