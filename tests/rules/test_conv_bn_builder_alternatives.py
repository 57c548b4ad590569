"""The conv -> BN fix where the conv comes from an imported builder that may build another class.

`create_conv2d(in, out, kernel_size)` with the caller's required `kernel_size` builds `nn.Conv2d` for an int
and `MixedConv2d` (an `nn.ModuleDict` with its own forward) for a list (timm 1.0.12, geffnet 1.0.2, effdet
0.4.1): the site is reported (`adopter.analysis.crossfile.builders.possible_layer`) and fixed with
`folded_conv_bn`, which folds only a stock convolution at run time. Both constructions of the rewritten
module compute what the original computes, in eval mode (folded for the int, unfolded for the list) and in
training mode, outputs and gradients (float64, CPU, seed 0, `torch.allclose` at rtol 1e-6 / atol 1e-9).
"""

from __future__ import annotations

import importlib
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from adopter.analysis import analyse  # noqa: E402
from adopter.analysis.crossfile.reach import CrossFileReach  # noqa: E402
from adopter.analysis.crossfile.resolver import ModuleResolver  # noqa: E402
from adopter.engine import Environment, find, load_rules  # noqa: E402
from adopter.session import rewrite  # noqa: E402
from adopter.synth import Rewritten  # noqa: E402
from equivalence import compare_modules, trained_statistics  # noqa: E402

pytestmark = pytest.mark.torch

CREATE_CONV2D = '''
import torch
import torch.nn as nn


class MixedConv2d(nn.ModuleDict):
    def __init__(self, in_channels, out_channels, kernel_size, **kwargs):
        super().__init__()
        splits = [out_channels // len(kernel_size)] * len(kernel_size)
        splits[0] += out_channels - sum(splits)
        for i, (k, c) in enumerate(zip(kernel_size, splits)):
            self[str(i)] = nn.Conv2d(in_channels, c, k, padding=k // 2, **kwargs)

    def forward(self, x):
        return torch.cat([conv(x) for conv in self.values()], 1)


def create_conv2d(in_channels, out_channels, kernel_size, **kwargs):
    if isinstance(kernel_size, list):
        m = MixedConv2d(in_channels, out_channels, kernel_size, **kwargs)
    else:
        m = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2, **kwargs)
    return m
'''

MODEL = '''
import torch.nn as nn
from convpkg.create_conv2d import create_conv2d


class ConvBnAct(nn.Module):
    def __init__(self, in_chs, out_chs, kernel_size):
        super().__init__()
        self.conv = create_conv2d(in_chs, out_chs, kernel_size, bias=False)
        self.bn1 = nn.BatchNorm2d(out_chs)
        self.act1 = nn.ReLU()

    def forward(self, x):
        x = self.conv(x)
        x = self.bn1(x)
        x = self.act1(x)
        return x
'''


def _package(root: Path, model: str) -> Path:
    pkg = root / "convpkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "create_conv2d.py").write_text(textwrap.dedent(CREATE_CONV2D), encoding="utf-8")
    path = pkg / "model.py"
    path.write_text(model, encoding="utf-8")
    return path


def _fixed(tmp_path: Path) -> str:
    path = _package(tmp_path / "before", MODEL)
    reach = CrossFileReach(ModuleResolver(search_paths=[str(tmp_path / "before")]), root=str(tmp_path / "before"))
    env = Environment("cpu", frozenset(), "2.13.0")
    rules = [r for r in load_rules().rules if r.family == 7]
    findings = find(analyse(MODEL, str(path), reach=reach), rules, env)
    assert [(f.rule_id, f.fixable) for f in findings] == [("f07-conv-bn", True)]
    result = rewrite(MODEL, findings, rules=rules, env=env, path=str(path))
    assert isinstance(result, Rewritten), result
    assert "folded_conv_bn(x, self.conv, self.bn1)" in result.new_source
    return result.new_source


def _load(root: Path, name: str) -> type:
    sys.path.insert(0, str(root))
    try:
        for mod in [m for m in sys.modules if m == "convpkg" or m.startswith("convpkg.")]:
            del sys.modules[mod]
        return importlib.import_module("convpkg.model").ConvBnAct  # type: ignore[no-any-return]
    finally:
        sys.path.remove(str(root))


@pytest.mark.parametrize("kernel", [3, [3, 5]])
def test_the_fix_computes_what_the_original_computes_whichever_class_the_builder_built(
        tmp_path: Path, kernel: object) -> None:
    new_source = _fixed(tmp_path)
    _package(tmp_path / "after", new_source)
    original_cls = _load(tmp_path / "before", "before")
    fixed_cls = _load(tmp_path / "after", "after")
    torch.manual_seed(0)
    original = original_cls(4, 6, kernel).double()
    fixed = fixed_cls(4, 6, kernel).double()
    trained_statistics(original.bn1, weight=(0.5, 2))
    compare_modules(original, fixed, lambda: (torch.randn(2, 4, 8, 8, dtype=torch.float64),),
                    atol=1e-9, rtol=1e-6, grad_atol=1e-9, same_parameters=True)
