"""A conv then a BatchNorm built by mmcv's builders from a config dict (`adopter.analysis.scope.config_registry`):
the ResNet block shape of OpenMMLab's model code (`build_conv_layer(conv_cfg, ...)`, `self.norm1_name, norm1 =
build_norm_layer(norm_cfg, c, postfix=1)`, `self.add_module(self.norm1_name, norm1)`, a `norm1` property) and the
`build_norm_layer(norm_cfg, c)[1]` form are `f07-conv-bn` sites fixed with the existing `folded_conv_bn`, which
folds only a stock BatchNorm in eval mode and runs the modules as they are otherwise. mmcv is not installed here:
the test runs the rewritten code against a small stand-in `mmcv.cnn` written in this file with mmcv 2.2.0's
semantics for these names (the analysis reads only the import, never the stand-in). The rewritten module computes
what the original computes with the default (a BatchNorm, folded in eval mode) and with a GroupNorm config passed
(no fold at run time): outputs, input and parameter gradients in eval and training mode, the state dict loading
with `strict=True` (`equivalence.compare_modules`: float64, CPU, seed 0, outputs rtol 1e-6 / atol 1e-9).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from adopter.analysis import analyse  # noqa: E402
from adopter.engine import Environment, find, load_rules  # noqa: E402
from adopter.session import RuleContext, Session  # noqa: E402
from equivalence import compare_modules  # noqa: E402

pytestmark = pytest.mark.torch

ENV = Environment("cpu", frozenset(), "2.13.0")
RULES = tuple(r for r in load_rules().rules if r.family in (7, 8))

# What mmcv 2.2.0's builders do for these configs (cnn/bricks/norm.py:73-130, conv.py:14-50), in a few lines.
STAND_IN = '''
import torch.nn as nn

_NORMS = {"BN": nn.BatchNorm2d, "GN": nn.GroupNorm}


def build_norm_layer(cfg, num_features, postfix=""):
    cfg_ = dict(cfg)
    layer_type = cfg_.pop("type")
    requires_grad = cfg_.pop("requires_grad", True)
    norm = _NORMS[layer_type]
    cfg_.setdefault("eps", 1e-5)
    layer = norm(num_channels=num_features, **cfg_) if norm is nn.GroupNorm else norm(num_features, **cfg_)
    for p in layer.parameters():
        p.requires_grad = requires_grad
    return ("gn" if norm is nn.GroupNorm else "bn") + str(postfix), layer


def build_conv_layer(cfg, *args, **kwargs):
    cfg_ = dict(type="Conv2d") if cfg is None else dict(cfg)
    assert cfg_.pop("type") in ("Conv", "Conv2d")
    return nn.Conv2d(*args, **kwargs, **cfg_)
'''

MODEL = '''
import torch.nn as nn
from mmcv.cnn import build_conv_layer, build_norm_layer


class BasicBlock(nn.Module):
    def __init__(self, planes, conv_cfg=None, norm_cfg=dict(type='BN', requires_grad=True)):
        super().__init__()
        self.norm1_name, norm1 = build_norm_layer(norm_cfg, planes, postfix=1)
        self.conv1 = build_conv_layer(conv_cfg, planes, planes, 3, padding=1, bias=False)
        self.add_module(self.norm1_name, norm1)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = build_conv_layer(conv_cfg, planes, planes, 3, padding=1, bias=False)
        self.bn2 = build_norm_layer(norm_cfg, planes)[1]

    @property
    def norm1(self):
        return getattr(self, self.norm1_name)

    def forward(self, x):
        out = self.relu(self.norm1(self.conv1(x)))
        out = self.conv2(out)
        out = self.bn2(out)
        return self.relu(out + x)
'''


def _trained(model: torch.nn.Module) -> torch.nn.Module:
    with torch.no_grad():  # statistics a trained model would have
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-1, 1)
                m.running_var.uniform_(0.5, 2)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-1, 1)
    return model


def test_a_config_dict_batchnorm_is_folded_and_computes_the_same(tmp_path: Path) -> None:
    pkg = tmp_path / "mmblock"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    model = pkg / "model.py"
    model.write_text(MODEL, encoding="utf-8")
    findings = find(analyse(MODEL, str(model)), RULES, ENV)
    assert [(f.rule_id, f.span.start_line + 1, f.fixable) for f in findings] == [
        ("f07-conv-bn", 21, True), ("f07-conv-bn", 22, True)]
    fixed = Session(RuleContext(RULES, (), ENV)).fix(MODEL, str(model))
    assert "folded_conv_bn(x, self.conv1, self.norm1)" in fixed.new_source
    assert "folded_conv_bn(out, self.conv2, self.bn2)" in fixed.new_source
    (pkg / "fixed.py").write_text(fixed.new_source, encoding="utf-8")
    mmcv = tmp_path / "mmcv"
    (mmcv / "cnn").mkdir(parents=True)
    (mmcv / "__init__.py").write_text("", encoding="utf-8")
    (mmcv / "cnn" / "__init__.py").write_text(STAND_IN, encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        original = importlib.import_module("mmblock.model")
        rewritten = importlib.import_module("mmblock.fixed")
        for kwargs in ({}, {"norm_cfg": {"type": "GN", "num_groups": 2}}):
            torch.manual_seed(0)
            a = _trained(original.BasicBlock(4, **kwargs).double())
            b = rewritten.BasicBlock(4, **kwargs).double()
            assert sorted(a.state_dict()) == sorted(b.state_dict())
            compare_modules(a, b, lambda: (torch.randn(2, 4, 6, 6, dtype=torch.float64),), atol=1e-9, rtol=1e-6)
    finally:
        sys.path.remove(str(tmp_path))
        for name in ("mmblock.model", "mmblock.fixed", "mmblock", "mmcv.cnn", "mmcv"):
            sys.modules.pop(name, None)
