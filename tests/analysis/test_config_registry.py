"""Layers built by mmcv's builders from a config dict (`adopter.analysis.scope.config_registry`): the forms of
OpenMMLab's model code (mmpretrain, mmsegmentation, mmdet, mmpose, mmaction2, mmagic, mmdet3d, mmocr, mmflow):
`build_norm_layer(norm_cfg, c)[1]`, `self.norm1_name, norm1 = build_norm_layer(norm_cfg, c, postfix=1)` then
`self.add_module(self.norm1_name, norm1)` read through a `norm1` property, `build_activation_layer(act_cfg)` and
`build_conv_layer(conv_cfg, ...)` (None: `nn.Conv2d`). The `type` is read from a literal dict only (written in the
call, or a parameter's default that `__init__` does not rebind); each near form stays as written. The classes
are small files in those shapes, not copies; none of the positive cases is read on the base (`b70e5c3`).
"""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.dsl.types import Ctor, Init
from adopter.engine import Environment, check, load_rules

ENV = Environment("cpu", frozenset(), "2.13.0")

NORM = '''
import torch.nn as nn
{imports}


class ConvNorm(nn.Module):
    def __init__(self, cin, cout, norm_cfg={default}):
        super().__init__()
        {before}
        self.conv = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
        self.bn = {value}

    def forward(self, x):
        return self.bn(self.conv(x))
'''

MMCV = "from mmcv.cnn import build_norm_layer"


def _init(source: str) -> Init:
    init = analyse(source, "model.py").architectures[0].init
    assert init is not None
    return init


def _value(init: Init, attr: str) -> object:
    return next((b.value for b in init.bindings if b.attr == attr), None)


def _rules(*families: int) -> list:
    return [r for r in load_rules().rules if r.family in families]


@pytest.mark.parametrize(("imports", "default", "before", "value", "expected"), [
    # the parameter's literal dict default (mmcv norm.py:11 'BN' -> BatchNorm2d; :15 'SyncBN')
    (MMCV, "dict(type='BN', requires_grad=True)", "", "build_norm_layer(norm_cfg, cout)[1]", "torch.nn.BatchNorm2d"),
    (MMCV, "dict(type='SyncBN')", "", "build_norm_layer(norm_cfg, cout)[1]", "torch.nn.SyncBatchNorm"),
    (MMCV, "{'type': 'BN2d'}", "", "build_norm_layer(norm_cfg, cout)[1]", "torch.nn.BatchNorm2d"),
    (MMCV, "None", "", "build_norm_layer(dict(type='BN'), cout)[1]", "torch.nn.BatchNorm2d"),  # written in the call
    ("from mmcv.cnn.bricks import build_norm_layer", "dict(type='BN')", "", "build_norm_layer(norm_cfg, cout)[1]",
     "torch.nn.BatchNorm2d"),
    ("from mmcv.cnn import build_norm_layer as make_norm", "dict(type='BN')", "", "make_norm(norm_cfg, cout)[1]",
     "torch.nn.BatchNorm2d"),
    ("import mmcv.cnn", "dict(type='BN')", "", "mmcv.cnn.build_norm_layer(norm_cfg, cout)[1]", "torch.nn.BatchNorm2d"),
    (MMCV, "dict(type='GN', num_groups=2)", "", "build_norm_layer(norm_cfg, cout)[1]", "torch.nn.GroupNorm"),
    (MMCV, "dict(type='LN')", "", "build_norm_layer(norm_cfg, cout)[1]", "torch.nn.LayerNorm"),
    # near forms, left as written
    (MMCV, "dict(type='BN')", "", "build_norm_layer(norm_cfg, cout)[0]", None),  # the name, not the layer
    (MMCV, "dict(type='BN')", "", "build_norm_layer(norm_cfg, cout)", None),  # the (name, layer) pair
    (MMCV, "dict(type='BN')", "norm_cfg = dict(norm_cfg)", "build_norm_layer(norm_cfg, cout)[1]", None),  # rebound
    (MMCV, "dict(type='BN')", "if norm_cfg is None: norm_cfg = dict(type='GN')",
     "build_norm_layer(norm_cfg, cout)[1]", None),  # rebound on a path
    (MMCV, "None", "", "build_norm_layer(norm_cfg, cout)[1]", None),  # the caller's choice
    # the default dict changed in place before the call (a `*_cfg` changed so in 33 places of the census)
    (MMCV, "dict(type='BN')", "norm_cfg.update(type='GN', num_groups=2)", "build_norm_layer(norm_cfg, cout)[1]", None),
    (MMCV, "dict(type='BN')", "norm_cfg['type'] = 'GN'", "build_norm_layer(norm_cfg, cout)[1]", None),
    (MMCV, "dict(type='BN')", "kind = norm_cfg.pop('type')", "build_norm_layer(norm_cfg, cout)[1]", None),
    (MMCV, "dict(type='BN', **extra)", "", "build_norm_layer(norm_cfg, cout)[1]", None),  # a splat may set the type
    (MMCV, "dict(type='MyBN')", "", "build_norm_layer(norm_cfg, cout)[1]", None),  # not in mmcv's registry
    (MMCV, "dict(type=nn.BatchNorm2d)", "", "build_norm_layer(norm_cfg, cout)[1]", None),  # not a string
    ("from mylib.cnn import build_norm_layer", "dict(type='BN')", "", "build_norm_layer(norm_cfg, cout)[1]", None),
])
def test_a_norm_built_from_a_config_dict(imports: str, default: str, before: str, value: str,
                                         expected: str | None) -> None:
    source = NORM.format(imports=imports, default=default, before=before or "pass", value=value)
    mf = analyse(source, "model.py")
    init = mf.architectures[0].init
    assert init is not None
    bn = _value(init, "bn")
    if expected is None:
        assert not (isinstance(bn, Ctor) and bn.callee.startswith("torch.nn."))
    else:
        assert isinstance(bn, Ctor) and bn.callee == expected
        assert bn.origin is not None and "mmcv's registry" in bn.origin
    found = [f.rule_id for f in check(mf, _rules(7), ENV).findings]
    assert ("f07-conv-bn" in found) == (expected in ("torch.nn.BatchNorm2d", "torch.nn.SyncBatchNorm"))


def test_a_group_norm_takes_its_channels_by_keyword() -> None:
    init = _init(NORM.format(imports=MMCV, default="dict(type='GN', num_groups=2)", before="pass",
                             value="build_norm_layer(norm_cfg, cout)[1]"))
    bn = _value(init, "bn")
    assert isinstance(bn, Ctor) and not bn.args
    assert sorted(k.name for k in bn.kwargs) == ["num_channels", "num_groups"]


def test_a_same_file_function_of_that_name_is_not_mmcv() -> None:
    source = NORM.format(imports="", default="dict(type='BN')", before="pass",
                         value="build_norm_layer(norm_cfg, cout)[1]") + '''

def build_norm_layer(cfg, c):
    return "gn", nn.GroupNorm(2, c)
'''
    bn = _value(_init(source), "bn")
    assert not (isinstance(bn, Ctor) and bn.callee == "torch.nn.BatchNorm2d")


BLOCK = '''
import torch.nn as nn
from mmcv.cnn import build_conv_layer, build_norm_layer


class BasicBlock(nn.Module):
    def __init__(self, inplanes, planes, stride=1, conv_cfg=None, norm_cfg={default}):
        super().__init__()
        self.norm1_name, norm1 = build_norm_layer(norm_cfg, planes, postfix=1)
        self.norm2_name, norm2 = build_norm_layer(norm_cfg, planes, postfix=2)
        self.conv1 = build_conv_layer(conv_cfg, inplanes, planes, 3, stride=stride, padding=1, bias=False)
        self.add_module(self.norm1_name, norm1)
        self.conv2 = build_conv_layer(conv_cfg, planes, planes, 3, padding=1, bias=False)
        self.add_module(self.norm2_name, norm2)
        self.relu = nn.ReLU(inplace=True)

    @property
    def norm1(self):
        """nn.Module: the normalization layer named "norm1" """
        return getattr(self, self.norm1_name)

    @property
    def norm2(self):
        return {norm2_body}

    def forward(self, x):
        out = self.conv1(x)
        out = self.norm1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.norm2(out)
        return self.relu(out + x)
'''


def test_a_norm_added_under_its_built_name_and_read_through_a_property() -> None:
    mf = analyse(BLOCK.format(default="dict(type='BN', requires_grad=True)",
                              norm2_body="getattr(self, self.norm2_name)"), "model.py")
    init = mf.architectures[0].init
    assert init is not None
    assert {a: getattr(_value(init, a), "callee", None) for a in ("conv1", "norm1", "conv2", "norm2")} == {
        "conv1": "torch.nn.Conv2d", "norm1": "torch.nn.BatchNorm2d",
        "conv2": "torch.nn.Conv2d", "norm2": "torch.nn.BatchNorm2d"}
    found = check(mf, _rules(7), ENV).findings
    assert [(f.rule_id, f.span.start_line + 1) for f in found] == [("f07-conv-bn", 27), ("f07-conv-bn", 30)]


def test_a_property_returning_something_else_binds_nothing() -> None:
    mf = analyse(BLOCK.format(default="dict(type='BN')", norm2_body="self.relu"), "model.py")
    init = mf.architectures[0].init
    assert init is not None
    assert _value(init, "norm2") is None
    assert [f.span.start_line + 1 for f in check(mf, _rules(7), ENV).findings] == [27]


def test_a_norm_config_the_caller_passes_binds_nothing() -> None:
    mf = analyse(BLOCK.format(default="None", norm2_body="getattr(self, self.norm2_name)"), "model.py")
    init = mf.architectures[0].init
    assert init is not None
    assert _value(init, "norm1") is None and _value(init, "norm2") is None
    assert check(mf, _rules(7), ENV).findings == ()


MLP = '''
import torch.nn as nn
from mmcv.cnn import build_activation_layer, build_norm_layer


class Mlp(nn.Module):
    def __init__(self, dim, hidden, act_cfg={act}, norm_cfg=dict(type='BN1d')):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = build_activation_layer(act_cfg)
        self.fc2 = nn.Linear(hidden, dim)
        self.norm = build_norm_layer(norm_cfg, dim)[1]

    def forward(self, x):
        return self.norm(self.fc2(self.act(self.fc1(x))))
'''


@pytest.mark.parametrize(("act", "expected"), [
    ("dict(type='GELU')", "torch.nn.GELU"),  # mmcv activation.py:99
    ("dict(type='ReLU', inplace=True)", "torch.nn.ReLU"),  # activation.py:12-15
    ("dict(type='HSwish')", "torch.nn.Hardswish"),  # hswish.py:39
    ("dict(type='SiLU')", None),  # a package's registry may shadow it (mmagic): left out
    ("dict(type='Swish')", None),  # mmcv's own class
    ("None", None),
])
def test_an_activation_and_a_linear_norm_from_config_dicts(act: str, expected: str | None) -> None:
    mf = analyse(MLP.format(act=act), "model.py")
    init = mf.architectures[0].init
    assert init is not None
    value = _value(init, "act")
    assert (value.callee if isinstance(value, Ctor) and value.callee.startswith("torch.nn.") else None) == expected
    found = sorted(f.rule_id for f in check(mf, _rules(6, 8), ENV).findings)
    assert found == sorted(["f08-linear-bn", *(["f06-linear-gelu"] if expected == "torch.nn.GELU" else [])])


# A package's own registry (mmpretrain `EdgeNeXt`'s `SDTAEncoder`, mmagic, mmsegmentation: `from <pkg>.registry import
# MODELS`, then `MODELS.build(act_cfg)`): read as the activation builder; a norm config (it needs its sizes in the
# dict), a name that is not an activation of the table, or `build` of another object stay as written.
REGISTRY_MLP = '''
import torch.nn as nn
from mmpretrain.registry import MODELS
from somewhere import TASKS


class Mlp(nn.Module):
    def __init__(self, dim, hidden, act_cfg={act}, norm_cfg=dict(type='LN')):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = MODELS.build(act_cfg)
        self.fc2 = nn.Linear(hidden, dim)
        self.norm = MODELS.build(norm_cfg)
        self.fc3 = nn.Linear(dim, dim)
        self.act3 = TASKS.build(act_cfg)

    def forward(self, x):
        return self.act3(self.fc3(self.norm(self.fc2(self.act(self.fc1(x))))))
'''


@pytest.mark.parametrize(("act", "expected"), [
    ("dict(type='GELU')", "torch.nn.GELU"),
    ("dict(type='ReLU', inplace=True)", "torch.nn.ReLU"),
    ("dict(type='SiLU')", None),
    ("None", None),
])
def test_an_activation_built_by_a_package_registry(act: str, expected: str | None) -> None:
    mf = analyse(REGISTRY_MLP.format(act=act), "model.py")
    init = mf.architectures[0].init
    assert init is not None
    value = _value(init, "act")
    assert (value.callee if isinstance(value, Ctor) and value.callee.startswith("torch.nn.") else None) == expected
    assert not isinstance(_value(init, "norm"), Ctor) or not _value(init, "norm").callee.startswith("torch.nn.")
    assert not isinstance(_value(init, "act3"), Ctor) or not _value(init, "act3").callee.startswith("torch.nn.")
    found = [(f.rule_id, f.span.start_line) for f in check(mf, _rules(6), ENV).findings]
    assert [r for r, _ in found] == (["f06-linear-gelu"] if expected == "torch.nn.GELU" else [])


def test_a_conv_config_of_none_is_a_conv2d_with_the_call_arguments() -> None:
    init = _init(BLOCK.format(default="dict(type='BN')", norm2_body="getattr(self, self.norm2_name)"))
    conv = _value(init, "conv1")
    assert isinstance(conv, Ctor) and [getattr(a, "text", None) for a in conv.args] == ["inplanes", "planes", "3"]
    assert [k.name for k in conv.kwargs] == ["stride", "padding", "bias"]


MIXER = '''
import torch.nn as nn
from mmcv.cnn import build_activation_layer, build_norm_layer


class Mixer(nn.Module):
    def __init__(self, c, act_cfg=dict(type='GELU'), norm_cfg=dict(type='BN')):
        super().__init__()
        self.act = build_activation_layer(act_cfg)
        self.stem = nn.Sequential(nn.Conv2d(3, c, 2, stride=2), self.act, build_norm_layer(norm_cfg, c)[1])

    def forward(self, x):
        return self.stem(x)
'''


def test_an_attribute_item_keeps_its_place_in_a_sequential() -> None:
    """mmpretrain ConvMixer's stem: conv -> the shared activation -> BatchNorm is no conv -> BN pair."""
    mf = analyse(MIXER, "model.py")
    init = mf.architectures[0].init
    assert init is not None
    stem = _value(init, "stem")
    assert isinstance(stem, Ctor)
    assert [i.callee for i in stem.items] == ["torch.nn.Conv2d", "torch.nn.GELU", "torch.nn.BatchNorm2d"]
    assert check(mf, _rules(7), ENV).findings == ()


STEM = '''
import torch.nn as nn
from mmcv.cnn import build_conv_layer, build_norm_layer


class ResNet(nn.Module):
    def __init__(self, in_channels=3, stem_channels=64, conv_cfg=None, norm_cfg=dict(type='BN', requires_grad=True)):
        super().__init__()
        self.conv_cfg = conv_cfg
        {held}
        self._make_stem_layer(in_channels, stem_channels{passed})

    def _make_stem_layer(self, in_channels, stem_channels{own}):
        self.conv1 = build_conv_layer(self.conv_cfg, in_channels, stem_channels, 7, stride=2, padding=3, bias=False)
        self.norm1_name, norm1 = build_norm_layer({cfg}, stem_channels, postfix=1)
        self.add_module(self.norm1_name, norm1)
        self.relu = nn.ReLU(inplace=True)

    @property
    def norm1(self):
        return getattr(self, self.norm1_name)

    def forward(self, x):
        return self.relu(self.norm1(self.conv1(x)))
'''


@pytest.mark.parametrize(("held", "passed", "own", "cfg", "expected"), [
    # `self.norm_cfg = norm_cfg` once in `__init__`, read in a method it calls (the ResNet stem of mmdet/mmseg)
    ("self.norm_cfg = norm_cfg", "", "", "self.norm_cfg", "torch.nn.BatchNorm2d"),
    ("if norm_cfg: self.norm_cfg = norm_cfg", "", "", "self.norm_cfg", None),  # bound on a path
    ("self.norm_cfg = dict(norm_cfg)", "", "", "self.norm_cfg", None),  # not the parameter itself
    ("self.norm_cfg = norm_cfg; self.norm_cfg = None", "", "", "self.norm_cfg", None),  # bound twice
    ("norm_cfg = None; self.norm_cfg = norm_cfg", "", "", "self.norm_cfg", None),  # the parameter rebound first
    ("self.norm_cfg = norm_cfg; self.norm_cfg.update(type='GN', num_groups=2)", "", "", "self.norm_cfg", None),
    ("self.norm_cfg = norm_cfg; norm_cfg['type'] = 'GN'", "", "", "self.norm_cfg", None),  # the same dict
    # the method's own parameter of the same name is what its caller passes, not `__init__`'s default
    ("self.norm_cfg = norm_cfg", ", dict(type='GN', num_groups=2)", ", norm_cfg", "norm_cfg", None),
])
def test_a_config_held_on_self_and_read_in_a_method(held: str, passed: str, own: str, cfg: str,
                                                    expected: str | None) -> None:
    mf = analyse(STEM.format(held=held, passed=passed, own=own, cfg=cfg), "model.py")
    init = mf.architectures[0].init
    assert init is not None
    assert getattr(_value(init, "conv1"), "callee", None) == "torch.nn.Conv2d"
    assert getattr(_value(init, "norm1"), "callee", None) == expected
    assert len(check(mf, _rules(7), ENV).findings) == (expected is not None)
