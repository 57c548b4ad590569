"""Imported constructors written among a container's items are read through as one stored alone is (issue 20,
family 7). torchvision's `Conv2dNormActivation` (an `nn.Sequential` subclass building Conv2d, its norm and an
activation) read through when stored alone (`self.c = Conv2dNormActivation(...)`) was left as written inside
`nn.Sequential(Conv2dNormActivation(...), Conv2dNormActivation(...))`, the way birder (78 of its files: darknet,
the inception and mobilenet families, regnet, ...) and torchvision's own models assemble blocks: the fresh2 oracle
slice's birder conv -> BN sites in `self.block(x)` were missed. The same holds for a package's own Sequential
subclass or builder imported from another of its files. A norm the call replaces (`norm_layer=None`, another norm)
is read as the call builds it: no conv -> BN there."""

from __future__ import annotations

import textwrap
from pathlib import Path

from adopter.analysis import analyse
from adopter.analysis.crossfile.reach import CrossFileReach
from adopter.analysis.crossfile.resolver import ModuleResolver
from adopter.engine import check, detect_environment, load_rules

PARTS = '''
from torch import nn


class ConvNormAct(nn.Sequential):
    def __init__(self, cin, cout, kernel_size=3, norm_layer=nn.BatchNorm2d, act_layer=nn.ReLU):
        layers = [nn.Conv2d(cin, cout, kernel_size, padding=kernel_size // 2, bias=norm_layer is None)]
        if norm_layer is not None:
            layers.append(norm_layer(cout))
        layers.append(act_layer())
        super().__init__(*layers)
'''

MODEL = '''
from torch import nn

from .parts import ConvNormAct


class Residual(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.block = nn.Sequential(
            ConvNormAct(c, c // 2, kernel_size=1),
            ConvNormAct(c // 2, c, kernel_size=3),
        )

    def forward(self, x):
        return x + self.block(x)


class Branches(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.pool = nn.Sequential(nn.AvgPool2d(3, 1, 1), nn.Sequential(ConvNormAct(c, c, kernel_size=1)))

    def forward(self, x):
        return self.pool(x)


class NoNorm(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.block = nn.Sequential(
            ConvNormAct(c, c, kernel_size=1, norm_layer=None),
            ConvNormAct(c, c, kernel_size=3, norm_layer=nn.GroupNorm),
        )

    def forward(self, x):
        return self.block(x)
'''


def _conv_bn(tmp_path: Path) -> dict[str, int]:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "parts.py").write_text(textwrap.dedent(PARTS), encoding="utf-8")
    model = pkg / "model.py"
    model.write_text(MODEL, encoding="utf-8")
    reach = CrossFileReach(ModuleResolver(search_paths=[str(tmp_path)]), root=str(tmp_path))
    mf = analyse(model.read_text(encoding="utf-8"), str(model), reach=reach)
    rules = [r for r in load_rules().rules if r.family == 7]
    counts = {"Residual": 0, "Branches": 0, "NoNorm": 0}
    for f in check(mf, rules, detect_environment("cpu")).findings:
        counts[f.scope_name.split(".")[0]] += 1
    return counts


def test_imported_sequential_blocks_inside_a_sequential_are_read_through(tmp_path: Path) -> None:
    counts = _conv_bn(tmp_path)
    assert counts["Residual"] == 2  # one conv -> BN per block
    assert counts["Branches"] == 1  # a container inside a container
    assert counts["NoNorm"] == 0  # no norm, and a GroupNorm: not conv -> BN
