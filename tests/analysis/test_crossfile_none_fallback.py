"""Cross-file reach: a caller's parameter that defaults to None and is given its value by `if p is None: p
= V` is V when handed to an imported `nn.Sequential` subclass (torchvision 0.28 `mobilenetv2.py`,
`efficientnet.py`, `mnasnet.py`: `if norm_layer is None: norm_layer = nn.BatchNorm2d`, then
`Conv2dNormActivation(..., norm_layer=norm_layer)`). Read as None before, the subclass's `if norm_layer is not
None: layers.append(norm_layer(...))` dropped the BatchNorm and the conv -> BN pair went unseen."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from adopter.analysis import analyse
from adopter.analysis.crossfile.reach import CrossFileReach
from adopter.analysis.crossfile.resolver import ModuleResolver
from adopter.dsl.types import Ctor
from adopter.engine import check, detect_environment, load_rules

BLOCKS = '''
from torch import nn


class ConvNormActivation(nn.Sequential):
    def __init__(self, in_channels, out_channels, kernel_size=3, norm_layer=nn.BatchNorm2d,
                 activation_layer=nn.ReLU):
        layers = [nn.Conv2d(in_channels, out_channels, kernel_size, bias=norm_layer is None)]
        if norm_layer is not None:
            layers.append(norm_layer(out_channels))
        if activation_layer is not None:
            layers.append(activation_layer())
        super().__init__(*layers)


class Conv2dNormActivation(ConvNormActivation):
    def __init__(self, in_channels, out_channels, kernel_size=3, norm_layer=nn.BatchNorm2d,
                 activation_layer=nn.ReLU):
        super().__init__(in_channels, out_channels, kernel_size, norm_layer, activation_layer)
'''

MODEL = '''
from torch import nn

from .blocks import Conv2dNormActivation


class Stem(nn.Module):
    def __init__(self, norm_layer=None):
        super().__init__()
{fallback}
        self.stem = Conv2dNormActivation(3, 32, norm_layer=norm_layer, activation_layer=nn.ReLU6)

    def forward(self, x):
        return self.stem(x)
'''


def _stem(tmp_path: Path, fallback: str) -> tuple[Ctor, list[str]]:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "blocks.py").write_text(textwrap.dedent(BLOCKS), encoding="utf-8")
    model = pkg / "model.py"
    model.write_text(MODEL.format(fallback=fallback), encoding="utf-8")
    reach = CrossFileReach(ModuleResolver(search_paths=[str(tmp_path)]), root=str(tmp_path))
    mf = analyse(model.read_text(encoding="utf-8"), str(model), reach=reach)
    arch = next(a for a in mf.architectures if a.name == "Stem")
    assert arch.init is not None
    stem = next(b.value for b in arch.init.bindings if b.attr == "stem")
    assert isinstance(stem, Ctor)
    rules = [r for r in load_rules().rules if r.family == 7]
    return stem, [f.rule_id for f in check(mf, rules, detect_environment("cpu")).findings]


def test_the_value_given_for_none_is_the_layer(tmp_path: Path) -> None:
    stem, found = _stem(tmp_path, "        if norm_layer is None:\n            norm_layer = nn.BatchNorm2d")
    assert [i.callee for i in stem.items] == ["torch.nn.Conv2d", "torch.nn.BatchNorm2d", "torch.nn.ReLU6"]
    assert found == ["f07-conv-bn"]


@pytest.mark.parametrize("fallback", [
    "        pass",  # None is what is passed on: no BatchNorm
    "        if norm_layer is None and False:\n            norm_layer = nn.BatchNorm2d",  # not the plain test
    "        if norm_layer is None:\n            norm_layer = nn.BatchNorm2d\n        else:\n            norm_layer = None",
])
def test_without_the_plain_fallback_none_is_passed_on(tmp_path: Path, fallback: str) -> None:
    stem, found = _stem(tmp_path, fallback)
    assert "torch.nn.BatchNorm2d" not in [i.callee for i in stem.items]
    assert found == []
