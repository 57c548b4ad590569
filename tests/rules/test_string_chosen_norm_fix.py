"""A conv then a BatchNorm that a builder of another file chooses by a string (`get_norm_layer(norm, c)` with
`norm="bn"`, `if name == "bn": return nn.BatchNorm2d(c)`; `adopter.analysis.crossfile.builders`) is an
`f07-conv-bn` site, fixed with the existing `folded_conv_bn`, which folds only a stock BatchNorm in eval mode and
runs the modules as they are otherwise: the rewritten module computes what the original computes with the
default (a BatchNorm) and with `norm="gn"` (a GroupNorm, no site, run unfolded): outputs, input and parameter
gradients in eval and training mode (`equivalence.compare_modules`: float64, CPU, seed 0, outputs rtol 1e-6 /
atol 1e-9; the state dict loads with `strict=True`). With `norm="gn"` as the default there is no site.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from adopter.analysis import analyse  # noqa: E402
from adopter.analysis.crossfile.reach import CrossFileReach  # noqa: E402
from adopter.analysis.crossfile.resolver import ModuleResolver  # noqa: E402
from adopter.engine import Environment, find, load_rules  # noqa: E402
from adopter.session import RuleContext, Session  # noqa: E402
from equivalence import compare_modules  # noqa: E402

pytestmark = pytest.mark.torch

ENV = Environment("cpu", frozenset(), "2.13.0")
RULES = tuple(r for r in load_rules().rules if r.family in (7, 8))

NORMS = '''
import torch.nn as nn


def get_norm_layer(name, channels):
    if name == "bn":
        return nn.BatchNorm2d(channels)
    if name == "gn":
        return nn.GroupNorm(2, channels)
    raise ValueError(name)
'''

MODEL = '''
import torch.nn as nn
from .norms import get_norm_layer


class ConvNorm(nn.Module):
    def __init__(self, cin, cout, norm={default!r}):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
        self.norm = get_norm_layer(norm, cout)

    def forward(self, x):
        return self.norm(self.conv(x))
'''


def _package(tmp_path: Path, name: str, default: str) -> Path:
    pkg = tmp_path / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "norms.py").write_text(NORMS, encoding="utf-8")
    model = pkg / "model.py"
    model.write_text(MODEL.format(default=default), encoding="utf-8")
    return model


def _reach(tmp_path: Path) -> CrossFileReach:
    return CrossFileReach(ModuleResolver(search_paths=[str(tmp_path)]), root=str(tmp_path))


def _trained(model: torch.nn.Module) -> torch.nn.Module:
    with torch.no_grad():  # statistics a trained model would have
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-1, 1)
                m.running_var.uniform_(0.5, 2)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-1, 1)
    return model


def test_a_string_chosen_batchnorm_is_folded_and_computes_the_same(tmp_path: Path) -> None:
    model = _package(tmp_path, "strpkg", "bn")
    text = model.read_text(encoding="utf-8")
    findings = find(analyse(text, str(model), reach=_reach(tmp_path)), RULES, ENV)
    assert [(f.rule_id, f.fixable) for f in findings] == [("f07-conv-bn", True)]
    session = Session(RuleContext(RULES, (), ENV), reach=_reach(tmp_path))
    fixed = session.fix(text, str(model))
    assert "folded_conv_bn(x, self.conv, self.norm)" in fixed.new_source
    (model.parent / "fixed.py").write_text(fixed.new_source, encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        original = importlib.import_module("strpkg.model")
        rewritten = importlib.import_module("strpkg.fixed")
        for kwargs in ({}, {"norm": "gn"}):
            torch.manual_seed(0)
            a = _trained(original.ConvNorm(3, 4, **kwargs).double())
            b = rewritten.ConvNorm(3, 4, **kwargs).double()
            compare_modules(a, b, lambda: (torch.randn(2, 3, 6, 6, dtype=torch.float64),), atol=1e-9, rtol=1e-6)
    finally:
        sys.path.remove(str(tmp_path))
        for name in ("strpkg.model", "strpkg.fixed", "strpkg.norms", "strpkg"):
            sys.modules.pop(name, None)


def test_a_string_choosing_another_norm_is_no_site(tmp_path: Path) -> None:
    model = _package(tmp_path, "strpkg_gn", "gn")
    findings = find(analyse(model.read_text(encoding="utf-8"), str(model), reach=_reach(tmp_path)), RULES, ENV)
    assert findings == ()
