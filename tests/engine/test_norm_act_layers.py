"""A convolution followed by a BatchNorm-then-activation norm (`adopter.analysis.crossfile.norm_act`,
`crossfile.builders.returned_sequential`) is an `f07-conv-bn` site, reported without an automatic fix.

The forms, each reached as the libraries reach them (a parameter's default, in this file or another):
- a BatchNorm subclass whose forward normalises its input (`F.batch_norm` of its own buffers after
  BatchNorm's bookkeeping, `super().forward(x)`) and then activates (an activation function, pointwise
  children such as `self.drop` / `self.act`): gluoncv-torch's and in-place-ABN's `ABN`, timm's
  `BatchNormAct2d` / `SyncBatchNormAct`;
- a function of another file returning `nn.Sequential(OrderedDict([("bn", bn), (activation, act)]))` with its
  layers in locals and the activation from a builder the analysis cannot read (pytorch-toolbelt's `ABN`).

Not sites (each asserted beside its site twin): a residual in the norm's forward, a dropout or a transpose
before the norm, a convolution applied after it, a GroupNorm subclass, a Sequential whose opaque item comes
before the BatchNorm, a builder with a branch before its return. The sites get no fix: the fold folds a stock
BatchNorm only (`folded_conv_bn` would run the norm-act module unfolded), so `fix` leaves the file as it is.
"""

from __future__ import annotations

from pathlib import Path

from adopter.analysis import analyse
from adopter.analysis.crossfile.reach import CrossFileReach
from adopter.analysis.crossfile.resolver import ModuleResolver
from adopter.engine import Environment, find, load_rules
from adopter.session import RuleContext, Session

ENV = Environment("cpu", frozenset(), "2.13.0")
RULES = tuple(r for r in load_rules().rules if r.family in (7, 8))

BN_THEN_LEAKY = '''
    def forward(self, x):
        y = F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                         self.training or not self.track_running_stats, self.momentum, self.eps)
        return F.leaky_relu_(y, self.slope)
'''

SAME_FILE = '''
from collections import OrderedDict

import torch.nn.functional as F
from torch import nn


class ABN(nn.BatchNorm2d):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, slope=0.01):
        super(ABN, self).__init__(num_features, eps=eps, momentum=momentum)
        self.slope = slope
{forward}

class ResidualBlock(nn.Module):
    def __init__(self, c_in, c_mid, norm_act=ABN):
        super().__init__()
        self.bn1 = norm_act(c_in)
        self.convs = nn.Sequential(OrderedDict([
            ("conv1", nn.Conv2d(c_in, c_mid, 3, padding=1, bias=False)),
            ("bn2", norm_act(c_mid)),
            ("conv2", nn.Conv2d(c_mid, c_in, 3, padding=1, bias=False)),
        ]))

    def forward(self, x):
        return x + self.convs(self.bn1(x))


class Head(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, 1, bias=False)
        self.norm = ABN(c_out)

    def forward(self, x):
        return self.norm(self.conv(x))
'''

SUPER_THEN_CHILD = '''
from torch import nn


class BNAct(nn.BatchNorm2d):
    def __init__(self, num_features, act_layer=nn.ReLU):
        super().__init__(num_features)
        self.act = {act}

    def forward(self, x):
        x = super().forward(x)
        return self.act(x)


class Block(nn.Module):
    def __init__(self, c_in, c_out, norm_layer=BNAct):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, 3, padding=1, bias=False)
        self.bn = norm_layer(c_out)

    def forward(self, x):
        x = self.conv(x)
        x = self.bn(x)
        return x
'''

# timm's form: BatchNorm's own forward copied (its bookkeeping), then a dropout and an activation child
NORM_ACT_FILE = '''
import torch.nn.functional as F
from torch import nn


def _create_act(act_layer, inplace=False, apply_act=True):
    return act_layer(inplace=inplace) if apply_act else nn.Identity()


class BatchNormAct2d(nn.BatchNorm2d):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, apply_act=True, act_layer=nn.ReLU,
                 inplace=True, drop_layer=None):
        super(BatchNormAct2d, self).__init__(num_features, eps=eps, momentum=momentum)
        self.drop = drop_layer() if drop_layer is not None else nn.Identity()
        self.act = _create_act(act_layer, inplace=inplace, apply_act=apply_act)

    def forward(self, x):
        assert x.ndim == 4
        if self.momentum is None:
            factor = 0.0
        else:
            factor = self.momentum
        if self.training and self.track_running_stats:
            if self.num_batches_tracked is not None:
                self.num_batches_tracked.add_(1)
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        x = F.batch_norm(
            x,
            self.running_mean if not self.training or self.track_running_stats else None,
            self.running_var if not self.training or self.track_running_stats else None,
            self.weight,
            self.bias,
            bn_training,
            factor,
            self.eps,
        )
        {after}
        return x


class SyncBatchNormAct(nn.SyncBatchNorm):
    def __init__(self, num_features, act_layer=nn.SiLU):
        super().__init__(num_features)
        self.act = act_layer()

    def forward(self, x):
        x = super().forward(x)
        x = self.act(x)
        return x


class GroupNormAct(nn.GroupNorm):
    def __init__(self, num_channels, num_groups=8):
        super().__init__(num_groups, num_channels)
        self.act = nn.ReLU()

    def forward(self, x):
        x = F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)
        return self.act(x)
'''

NORM_ACT_USER = '''
from torch import nn

from .norm_act import {norm}


class ConvNormAct(nn.Module):
    def __init__(self, c_in, c_out, norm_layer={norm}):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, 3, padding=1, bias=False)
        self.bn = norm_layer(c_out)

    def forward(self, x):
        x = self.conv(x)
        x = self.bn(x)
        return x
'''

# pytorch-toolbelt's form: a function of another file, its activation from a registry builder
ABN_FUNCTION_FILE = '''
from collections import OrderedDict

from torch import nn

ACTIVATIONS = {{"relu": nn.ReLU, "leaky_relu": nn.LeakyReLU}}


def instantiate_activation_block(name, **kwargs):
    return ACTIVATIONS[name](**kwargs)


def ABN(num_features, eps=1e-5, momentum=0.1, activation="relu", inplace=True):
{body}
'''

ABN_BODY = '''    bn = nn.BatchNorm2d(num_features, eps=eps, momentum=momentum)
    act = instantiate_activation_block(activation, inplace=inplace)
    return nn.Sequential(OrderedDict([("bn", bn), (activation, act)]))'''

ABN_USER = '''
from torch import nn

from .activations import ABN


class ContextBlock(nn.Module):
    def __init__(self, c_in, c_out, abn_block=ABN):
        super().__init__()
        self.f_key = nn.Sequential(nn.Conv2d(c_in, c_out, 1), abn_block(c_out))
        self.conv = nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
        self.abn = abn_block(c_out)

    def forward(self, x):
        x = self.f_key(x)
        return self.abn(self.conv(x))
'''


def _reach(tmp_path: Path) -> CrossFileReach:
    return CrossFileReach(ModuleResolver(search_paths=[str(tmp_path)]), root=str(tmp_path))


def _package(tmp_path: Path, name: str, files: dict[str, str], model: str) -> Path:
    pkg = tmp_path / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    for file, text in files.items():
        (pkg / file).write_text(text, encoding="utf-8")
    return pkg / model


def _sites(text: str, path: str | None = None, reach: CrossFileReach | None = None) -> list[tuple[str, int, bool]]:
    """(rule, 1-based line, whether `check` / `fix` call it fixable) of each site."""
    assert find(analyse(text, path, reach=reach), RULES, ENV) is not None
    session = Session(RuleContext(RULES, (), ENV), reach=reach)
    analysed = session.analysed(text, path)
    return [(f.rule_id, f.span.start_line + 1, session.planned(analysed, f).fixable) for f in analysed.findings]


def _line(text: str, code: str) -> int:
    """The 1-based line of the one statement holding `code` (where a site is reported: its forward call)."""
    found = [i + 1 for i, line in enumerate(text.splitlines()) if code in line]
    assert len(found) == 1, code
    return found[0]


def _unfixed(text: str, path: str | None = None, reach: CrossFileReach | None = None) -> None:
    """`fix` writes nothing: every site is reported without an automatic fix."""
    session = Session(RuleContext(RULES, (), ENV), reach=reach)
    assert session.fix(text, path).new_source == text


def test_a_same_file_batchnorm_then_leaky_relu_reached_through_a_default_is_a_site() -> None:
    text = SAME_FILE.format(forward=BN_THEN_LEAKY)
    sites = _sites(text)
    # the Sequential's conv1 -> bn2 (norm_act's default) and Head's conv -> ABN; conv2 feeds nothing
    assert sites == [("f07-conv-bn", _line(text, "x + self.convs("), False),
                     ("f07-conv-bn", _line(text, "self.norm(self.conv(x))"), False)]
    _unfixed(text)


def test_a_same_file_norm_with_anything_but_activations_after_it_is_no_site() -> None:
    refused = {
        "a residual": BN_THEN_LEAKY.replace("return F.leaky_relu_(y, self.slope)", "return F.leaky_relu_(y + x)"),
        "a dropout before the norm": BN_THEN_LEAKY.replace(
            "        y = F.batch_norm(x,", "        x = F.dropout(x, 0.1, self.training)\n        y = F.batch_norm(x,"),
        "a method of the value": BN_THEN_LEAKY.replace("F.leaky_relu_(y, self.slope)", "y.transpose(1, 2)"),
        "another tensor to the activation": BN_THEN_LEAKY.replace("(y, self.slope)", "(y, x)"),
        "the norm of other buffers": BN_THEN_LEAKY.replace("self.running_var,", "self.other_var,"),
    }
    for why, forward in refused.items():
        assert _sites(SAME_FILE.format(forward=forward)) == [], why


def test_super_forward_then_an_activation_child_is_a_site_and_a_conv_child_is_not() -> None:
    site = [("f07-conv-bn", _line(SUPER_THEN_CHILD, "x = self.conv(x)"), False)]
    assert _sites(SUPER_THEN_CHILD.format(act="act_layer()")) == site
    assert _sites(SUPER_THEN_CHILD.format(act="nn.Dropout(0.1)")) == site
    _unfixed(SUPER_THEN_CHILD.format(act="act_layer()"))
    # a child that is a convolution, or one the class never sets: not a BatchNorm then activations
    assert _sites(SUPER_THEN_CHILD.format(act="nn.Conv2d(num_features, num_features, 1)")) == []
    assert _sites(SUPER_THEN_CHILD.format(act="act_layer()").replace("self.act = act_layer()", "pass")) == []


def test_a_norm_act_class_of_another_file_is_a_site(tmp_path: Path) -> None:
    after = "x = self.drop(x)\n        x = self.act(x)"
    for i, norm in enumerate(("BatchNormAct2d", "SyncBatchNormAct")):
        model = _package(tmp_path, f"timmlike{i}", {
            "norm_act.py": NORM_ACT_FILE.format(after=after), "blocks.py": NORM_ACT_USER.format(norm=norm)},
            "blocks.py")
        text = model.read_text(encoding="utf-8")
        site = [("f07-conv-bn", _line(text, "x = self.conv(x)"), False)]
        assert _sites(text, str(model), _reach(tmp_path)) == site, norm
        _unfixed(text, str(model), _reach(tmp_path))


def test_a_norm_act_class_of_another_files_registry_is_a_site(tmp_path: Path) -> None:
    after = "x = self.act(x)"
    registry = '\nNORM_ACT_LAYERS = {"batchnorm": BatchNormAct2d, "groupnorm": GroupNormAct}\n'
    user = NORM_ACT_USER.format(norm="NORM_ACT_LAYERS").replace(
        "norm_layer=NORM_ACT_LAYERS", 'norm="batchnorm"').replace("norm_layer(c_out)", "NORM_ACT_LAYERS[norm](c_out)")
    model = _package(tmp_path, "timmlike_registry", {
        "norm_act.py": NORM_ACT_FILE.format(after=after) + registry, "blocks.py": user}, "blocks.py")
    text = model.read_text(encoding="utf-8")
    assert _sites(text, str(model), _reach(tmp_path)) == [("f07-conv-bn", _line(text, "x = self.conv(x)"), False)]
    _unfixed(text, str(model), _reach(tmp_path))
    # the same registry's GroupNorm that activates: no BatchNorm
    gn = model.parent / "gn.py"
    gn.write_text(text.replace('norm="batchnorm"', 'norm="groupnorm"'), encoding="utf-8")
    assert _sites(gn.read_text(encoding="utf-8"), str(gn), _reach(tmp_path)) == []


def test_another_files_norm_act_that_is_no_batchnorm_then_activation_is_no_site(tmp_path: Path) -> None:
    refused = {
        "GroupNormAct": "x = self.act(x)",  # a GroupNorm: no BatchNorm at all
        "BatchNormAct2d": "x = self.act(x) + self.drop(x)",  # two children combined
    }
    for i, (norm, after) in enumerate(refused.items()):
        model = _package(tmp_path, f"timmlike_no{i}", {
            "norm_act.py": NORM_ACT_FILE.format(after=after), "blocks.py": NORM_ACT_USER.format(norm=norm)},
            "blocks.py")
        assert _sites(model.read_text(encoding="utf-8"), str(model), _reach(tmp_path)) == [], norm


def test_an_abn_function_of_another_file_through_a_default_is_a_site(tmp_path: Path) -> None:
    model = _package(tmp_path, "toolbeltlike", {
        "activations.py": ABN_FUNCTION_FILE.format(body=ABN_BODY), "context.py": ABN_USER}, "context.py")
    text = model.read_text(encoding="utf-8")
    # the conv of f_key's Sequential, and the conv whose output goes into self.abn
    assert _sites(text, str(model), _reach(tmp_path)) == [
        ("f07-conv-bn", _line(text, "x = self.f_key(x)"), False), ("f07-conv-bn", _line(text, "self.abn("), False)]
    _unfixed(text, str(model), _reach(tmp_path))


def test_an_abn_function_that_activates_first_or_branches_is_no_site(tmp_path: Path) -> None:
    refused = {
        "activation first": ABN_BODY.replace('[("bn", bn), (activation, act)]', '[(activation, act), ("bn", bn)]'),
        "a branch before the return": ABN_BODY.replace(
            "    act = instantiate", "    if inplace:\n        eps = 1e-3\n    act = instantiate"),
        "a local assigned twice": ABN_BODY.replace(
            "    act = instantiate", "    bn = nn.BatchNorm2d(num_features)\n    act = instantiate"),
    }
    for i, (why, body) in enumerate(refused.items()):
        model = _package(tmp_path, f"toolbeltlike_no{i}", {
            "activations.py": ABN_FUNCTION_FILE.format(body=body), "context.py": ABN_USER}, "context.py")
        assert _sites(model.read_text(encoding="utf-8"), str(model), _reach(tmp_path)) == [], why
