"""A site's ops computed by torch layers held in a container count the lines where the model constructs those
layers (`oracle/built.py`): a conv and a BatchNorm added to an `nn.Sequential` subclass with no `forward` of
its own (ultralytics' `Conv2d_BN`, reduced) are placed at the caller's `self.conv1(x)` by their stack and
made where the subclass adds them; ops written in the model's own module keep their own lines only."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

from oracle.built import record_construction  # noqa: E402
from oracle.match import find_sites  # noqa: E402
from oracle.trace import trace_step  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.slow]

MODELS = '''import torch
from torch import nn


class Conv2d_BN(nn.Sequential):
    def __init__(self, a, b):
        super().__init__()
        self.add_module("c", nn.Conv2d(a, b, 3, 1, 1, bias=False))
        self.add_module("bn", nn.BatchNorm2d(b))


class Stem(nn.Module):
    def __init__(self, c=4):
        super().__init__()
        self.conv1 = Conv2d_BN(c, c)
        self.act = nn.GELU()

    def forward(self, x):
        x = self.conv1(x)
        return torch.softmax(self.act(x), dim=-1)
'''


def _line(what: str) -> int:
    return next(i for i, ln in enumerate(MODELS.splitlines(), 1) if what in ln)


def test_layers_in_a_container_count_where_they_are_constructed(tmp_path: Path) -> None:
    path = tmp_path / "m_built.py"
    path.write_text(MODELS, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("m_built", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    where = str(path.resolve())
    stop = record_construction(lambda f: f == where)
    try:
        model = mod.Stem()
    finally:
        stop()
    traced = trace_step(model, (torch.randn(2, 4, 8, 8),), {})
    sites = {s.family: s for g in traced.graphs for s in find_sites(g, lambda f: f == where)}
    conv_bn = sites[7]
    assert conv_bn.anchor == (where, _line("x = self.conv1(x)"))
    assert {(where, _line('"c", nn.Conv2d')), (where, _line('"bn", nn.BatchNorm2d'))} <= set(conv_bn.lines)
    # the softmax is the model's own op: its lines are where it is written, not where Stem was constructed
    assert set(sites[4].lines) == {(where, _line("torch.softmax"))}
