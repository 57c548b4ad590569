"""Family 5 (dropout -> residual add -> LayerNorm) counts only what the rule's rewrite can fuse: the dropout,
the add and the norm each called from one function of the model (`match.one_forward`). Three modules' ops
that trace next to each other (a FeedForward block ending in a Dropout, the add in its caller, the norm
after the loop) and ops inside a torch layer (`nn.TransformerEncoderLayer._sa_block`'s dropout) are not
sites. Fixtures are reduced from the packages named on each class."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

torch = pytest.importorskip("torch")

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

from oracle.match import enclosing_function, find_sites  # noqa: E402
from oracle.trace import trace_step  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.slow]

MODELS = '''import torch
from torch import nn


# transformers 4.35, models/xlm_roberta/modeling_xlm_roberta.py: XLMRobertaSelfOutput (a site)
class SelfOutput(nn.Module):
    def __init__(self, hidden=16):
        super().__init__()
        self.dense = nn.Linear(hidden, hidden)
        self.LayerNorm = nn.LayerNorm(hidden)
        self.dropout = nn.Dropout(0.1)

    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dense(hidden_states)
        hidden_states = self.dropout(hidden_states)
        hidden_states = self.LayerNorm(hidden_states + input_tensor)
        return hidden_states


# a helper method of the same class holds the dropout (a site: the helper is the class's own code)
class HelperBlock(nn.Module):
    def __init__(self, hidden=16):
        super().__init__()
        self.dense = nn.Linear(hidden, hidden)
        self.drop = nn.Dropout(0.1)
        self.norm = nn.LayerNorm(hidden)

    def _ff_block(self, x):
        return self.drop(self.dense(x))

    def forward(self, x):
        return self.norm(x + self._ff_block(x))


# demucs 4.1.0, demucs/transformer.py: MyTransformerEncoderLayer (post-norm branch): the dropout runs
# inside torch's inherited `_sa_block`, which the user's code cannot pass to a fused call (not a site)
class MyTransformerEncoderLayer(nn.TransformerEncoderLayer):
    def forward(self, x):
        x = self.norm1(x + self._sa_block(x, None, None))
        return x


# vit-pytorch 1.8.9, vit_pytorch/cross_vit.py: FeedForward ends in a Dropout, Transformer adds the residual
# and applies its final norm after the loop (three modules' ops in a row, not a site)
class FeedForward(nn.Module):
    def __init__(self, dim=16, hidden_dim=32, dropout=0.1):
        super().__init__()
        self.net = nn.Sequential(
            nn.LayerNorm(dim),
            nn.Linear(dim, hidden_dim),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(hidden_dim, dim),
            nn.Dropout(dropout)
        )

    def forward(self, x):
        return self.net(x)


class Transformer(nn.Module):
    def __init__(self, dim=16, depth=1):
        super().__init__()
        self.layers = nn.ModuleList([FeedForward(dim) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        for ff in self.layers:
            x = ff(x) + x
        return self.norm(x)
'''


def _module(tmp_path: Path, name: str, text: str) -> tuple[ModuleType, str]:
    path = tmp_path / f"{name}.py"
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module, str(path.resolve())


def _family5(model: object, args: tuple[object, ...], path: str) -> list[int]:
    traced = trace_step(model, args, {})
    sites = [s for g in traced.graphs for s in find_sites(g, lambda f: f == path)]
    return sorted(s.anchor[1] for s in sites if s.family == 5)


def _line(text: str, what: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if what in ln)


def test_sites_in_one_function_count(tmp_path: Path) -> None:
    mod, path = _module(tmp_path, "m7_family5_sites", MODELS)
    x = torch.randn(2, 4, 16)
    assert _family5(mod.SelfOutput(), (x, x), path) == [_line(MODELS, "self.LayerNorm(hidden_states + input_tensor)")]
    assert _family5(mod.HelperBlock(), (x,), path) == [_line(MODELS, "return self.norm(x + self._ff_block(x))")]


def test_ops_across_modules_or_inside_a_torch_layer_do_not(tmp_path: Path) -> None:
    mod, path = _module(tmp_path, "m7_family5_not", MODELS)
    x = torch.randn(2, 4, 16)
    assert _family5(mod.MyTransformerEncoderLayer(16, 2, 32, batch_first=True), (x,), path) == []
    assert _family5(mod.Transformer(), (x,), path) == []


def test_enclosing_function(tmp_path: Path) -> None:
    _, path = _module(tmp_path, "m7_family5_defs", MODELS)
    inner = _line(MODELS, "return self.drop(self.dense(x))")
    assert enclosing_function(path, inner) == (path, inner - 1)
    assert enclosing_function(path, 1) == (path, 0)
