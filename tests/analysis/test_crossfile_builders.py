"""Cross-file reach: what an imported builder function returns (`analysis/crossfile/builders.py`).

The package is timm 1.0.12's own code, shortened: `create_conv2d` (timm/layers/create_conv2d.py) picks
`MixedConv2d` for a list of kernel sizes, `CondConv2d` when `num_experts` is passed, else
`create_conv2d_pad` (timm/layers/conv2d_same.py), which builds `Conv2dSame` / `Conv2dSameExport` (both
subclass `nn.Conv2d`) or `nn.Conv2d`. The model is effdet 0.4.1's `SeparableConv2d`
(effdet/efficientdet.py) and timm's `ConvNorm` (timm/models/efficientformer_v2.py, with a plain BatchNorm).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from adopter.analysis import analyse
from adopter.analysis.crossfile.reach import CrossFileReach
from adopter.analysis.crossfile.resolver import ModuleResolver
from adopter.dsl.types import Ctor
from adopter.engine import check, detect_environment, load_rules

CREATE_CONV2D = '''
from .mixed_conv2d import MixedConv2d
from .cond_conv2d import CondConv2d
from .conv2d_same import create_conv2d_pad


def create_conv2d(in_channels, out_channels, kernel_size, **kwargs):
    """ Select a 2d convolution implementation based on arguments """
    if isinstance(kernel_size, list):
        assert 'num_experts' not in kwargs  # MixNet + CondConv combo not supported currently
        if 'groups' in kwargs:
            groups = kwargs.pop('groups')
            if groups == in_channels:
                kwargs['depthwise'] = True
            else:
                assert groups == 1
        m = MixedConv2d(in_channels, out_channels, kernel_size, **kwargs)
    else:
        depthwise = kwargs.pop('depthwise', False)
        groups = in_channels if depthwise else kwargs.pop('groups', 1)
        if 'num_experts' in kwargs and kwargs['num_experts'] > 0:
            m = CondConv2d(in_channels, out_channels, kernel_size, groups=groups, **kwargs)
        else:
            m = create_conv2d_pad(in_channels, out_channels, kernel_size, groups=groups, **kwargs)
    return m
'''

CONV2D_SAME = '''
import torch.nn as nn
import torch.nn.functional as F

from .config import is_exportable, is_scriptable
from .padding import get_padding_value

_USE_EXPORT_CONV = False


class Conv2dSame(nn.Conv2d):
    def forward(self, x):
        return F.conv2d(x, self.weight, self.bias, self.stride, (0, 0), self.dilation, self.groups)


class Conv2dSameExport(nn.Conv2d):
    def forward(self, x):
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


def create_conv2d_pad(in_chs, out_chs, kernel_size, **kwargs):
    padding = kwargs.pop('padding', '')
    kwargs.setdefault('bias', False)
    padding, is_dynamic = get_padding_value(padding, kernel_size, **kwargs)
    if is_dynamic:
        if _USE_EXPORT_CONV and is_exportable():
            assert not is_scriptable()
            return Conv2dSameExport(in_chs, out_chs, kernel_size, **kwargs)
        else:
            return Conv2dSame(in_chs, out_chs, kernel_size, **kwargs)
    else:
        return nn.Conv2d(in_chs, out_chs, kernel_size, padding=padding, **kwargs)
'''

MIXED = '''
import torch.nn as nn


class MixedConv2d(nn.ModuleDict):
    def __init__(self, in_channels, out_channels, kernel_size=3, **kwargs):
        super().__init__()
'''

COND = '''
import torch.nn as nn


class CondConv2d(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size=3, num_experts=4, **kwargs):
        super().__init__()
'''

MODEL = '''
import torch.nn as nn
from pkg.layers.create_conv2d import create_conv2d


class ConvNorm(nn.Module):
    def __init__(self, in_channels, out_channels, {kernel}, stride=1, padding='', bias=True):
        super(ConvNorm, self).__init__()
        self.conv = create_conv2d(
            in_channels,
            out_channels,
            kernel_size,
            stride=stride,
            padding=padding,
            bias=bias,{extra}
        )
        self.bn = nn.BatchNorm2d(out_channels)

    def forward(self, x):
        x = self.conv(x)
        x = self.bn(x)
        return x
'''


def _project(tmp_path: Path, kernel: str, extra: str = "") -> Path:
    layers = tmp_path / "pkg" / "layers"
    layers.mkdir(parents=True)
    for name, text in {"__init__": "", "create_conv2d": CREATE_CONV2D, "conv2d_same": CONV2D_SAME,
                       "mixed_conv2d": MIXED, "cond_conv2d": COND, "config": "def is_exportable():\n    return False\n",
                       "padding": "def get_padding_value(padding, kernel_size, **kwargs):\n    return 0, False\n"}.items():
        (layers / f"{name}.py").write_text(textwrap.dedent(text), encoding="utf-8")
    (tmp_path / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    model = tmp_path / "pkg" / "model.py"
    model.write_text(MODEL.format(kernel=kernel, extra=extra), encoding="utf-8")
    return model


def _conv_and_findings(tmp_path: Path, kernel: str, extra: str = "") -> tuple[Ctor, list[str]]:
    model = _project(tmp_path, kernel, extra)
    reach = CrossFileReach(ModuleResolver(search_paths=[str(tmp_path)]), root=str(tmp_path))
    mf = analyse(model.read_text(encoding="utf-8"), str(model), reach=reach)
    arch = next(a for a in mf.architectures if a.name == "ConvNorm")
    assert arch.init is not None
    conv = next(b.value for b in arch.init.bindings if b.attr == "conv")
    assert isinstance(conv, Ctor)
    rules = [r for r in load_rules().rules if r.family == 7]
    return conv, [f.rule_id for f in check(mf, rules, detect_environment("cpu")).findings]


def test_a_builder_that_returns_a_conv_on_every_open_path_is_that_conv(tmp_path: Path) -> None:
    """`kernel_size=1`: `isinstance(kernel_size, list)` is false and `num_experts` is not passed, so every
    open return is `nn.Conv2d` or a subclass of it; the conv -> BN pair is reported."""
    conv, found = _conv_and_findings(tmp_path, "kernel_size=1")
    assert conv.callee == "torch.nn.Conv2d"
    assert conv.origin is not None and conv.origin.startswith("create_conv2d (pkg/layers/create_conv2d.py:")
    assert "f07-conv-bn" in found


@pytest.mark.parametrize(("kernel", "extra"), [
    ("kernel_size", ""),  # a required parameter: it may be a list (MixedConv2d, a ModuleDict)
    ("kernel_size=1", "\n            **conv_kwargs,"),  # any keyword may be passed: num_experts too
])
def test_a_builder_whose_other_open_paths_build_its_own_classes_is_two_bindings(
        tmp_path: Path, kernel: str, extra: str) -> None:
    """geffnet 1.0.2 `ConvBnAct` (a required `kernel_size`) and `InvertedResidual` (`**conv_kwargs`), effdet
    0.4.1 `ConvBnAct2d`: which class the builder returns depends on a value the call leaves open. As with
    `self.conv = MixedConv2d(...) if c else nn.Conv2d(...)` written in the file, the attribute is bound to
    the conv under one condition and to the call as written under the other, and the conv -> BN pair is
    reported (the fix checks the types at run time: a MixedConv2d runs unfolded)."""
    if "conv_kwargs" in extra:
        kernel += ", conv_kwargs=None"
    model = _project(tmp_path, kernel, extra)
    reach = CrossFileReach(ModuleResolver(search_paths=[str(tmp_path)]), root=str(tmp_path))
    mf = analyse(model.read_text(encoding="utf-8"), str(model), reach=reach)
    arch = next(a for a in mf.architectures if a.name == "ConvNorm")
    assert arch.init is not None
    convs = [b for b in arch.init.bindings if b.attr == "conv"]
    assert [b.value.callee for b in convs if isinstance(b.value, Ctor)] == ["torch.nn.Conv2d", "pkg.layers.create_conv2d.create_conv2d"]
    assert [b.condition for b in convs] == ["create_conv2d(...) builds torch.nn.Conv2d",
                                            "not (create_conv2d(...) builds torch.nn.Conv2d)"]
    rules = [r for r in load_rules().rules if r.family == 7]
    findings = check(mf, rules, detect_environment("cpu")).findings
    assert [f.rule_id for f in findings] == ["f07-conv-bn"]


def test_a_builder_with_no_open_path_to_a_conv_stays_as_written(tmp_path: Path) -> None:
    """`num_experts=4` passed: CondConv2d, an nn.Module of its own, on every open path."""
    conv, found = _conv_and_findings(tmp_path, "kernel_size=1", "\n            num_experts=4,")
    assert conv.callee.endswith("create_conv2d") and conv.origin is None
    assert "f07-conv-bn" not in found


_MIXED_OR_CONV = ("    if isinstance(k, list):\n        return Mixed(a, b, k)\n"
                  "    return nn.Conv2d(a, b, k)\n\n\nclass Mixed(nn.ModuleDict):\n    pass\n")


@pytest.mark.parametrize(("body", "args", "named", "expected"), [
    (_MIXED_OR_CONV, ("1", "2", "k"), (), "torch.nn.Conv2d"),  # the caller's own parameter: either
    (_MIXED_OR_CONV, ("1", "2", "3"), (), None),  # an int: every open path is the conv (`built_layer`'s)
    # counter-examples: a list written in the call (positional or keyword) leaves only the Mixed path; a
    # path that builds something unknown, or another torch layer
    (_MIXED_OR_CONV, ("1", "2", "[3, 5]"), (), None),
    (_MIXED_OR_CONV, ("1", "2"), (("k", "[3, 5]"),), None),
    ("    if isinstance(k, list):\n        return make(a, b, k)\n    return nn.Conv2d(a, b, k)\n", ("1", "2", "k"), (), None),
    ("    if isinstance(k, list):\n        return nn.Linear(a, b)\n    return nn.Conv2d(a, b, k)\n", ("1", "2", "k"), (), None),
])
def test_the_layer_some_open_paths_build(body: str, args: tuple[str, ...], named: tuple[tuple[str, str], ...],
                                         expected: str | None) -> None:
    import ast

    from adopter.analysis.crossfile.ast_files import ParsedFile, imports_of, toplevel_of
    from adopter.analysis.crossfile.builders import Call, possible_layer
    from adopter.analysis.crossfile.reach import torch_layer

    tree = ast.parse(f"import torch.nn as nn\n\n\ndef f(a, b, k=None):\n{body}")
    parsed = ParsedFile(0.0, tree, imports_of(tree), toplevel_of(tree))
    fn = tree.body[1]
    assert isinstance(fn, ast.FunctionDef)
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}

    def lookup(qualified: str, path: str) -> tuple[ParsedFile, ast.FunctionDef | ast.ClassDef, str] | None:
        name = qualified.rsplit(".", 1)[-1]
        return (parsed, classes[name], "b.py") if name in classes else None

    call = Call(args, frozenset(k for k, _ in named), False, frozenset(), named)
    assert possible_layer(fn, parsed, "b.py", call, lookup, torch_layer) == expected


def test_deferred_reach_resolves_the_builder_later(tmp_path: Path) -> None:
    """The server's mode: the builder's file is read when the queue is resolved, never on the keystroke."""
    model = _project(tmp_path, "kernel_size=1")
    reach = CrossFileReach(ModuleResolver(search_paths=[str(tmp_path)]), deferred=True, root=str(tmp_path))
    text = model.read_text(encoding="utf-8")

    def conv() -> Ctor:
        arch = next(a for a in analyse(text, str(model), reach=reach).architectures if a.name == "ConvNorm")
        assert arch.init is not None
        value = next(b.value for b in arch.init.bindings if b.attr == "conv")
        assert isinstance(value, Ctor)
        return value

    assert conv().origin is None and reach.has_pending()
    while reach.has_pending():
        reach.resolve_pending()
        conv()
    assert conv().callee == "torch.nn.Conv2d"
    same = tmp_path / "pkg" / "layers" / "conv2d_same.py"
    same.write_text(same.read_text(encoding="utf-8").replace("(nn.Conv2d):", "(nn.Module):"), encoding="utf-8")
    assert reach.changed([str(same)])  # the edit of the builder's file is seen
    conv()
    while reach.has_pending():
        reach.resolve_pending()
    value = conv()
    assert value.origin is None and value.callee.endswith("create_conv2d")  # Conv2dSame is no conv now


# torchvision 0.28.0, torchvision/ops/misc.py (docstrings and the deprecation warning left out)
MISC = '''
import warnings
from collections.abc import Sequence
from typing import Callable, Optional, Union

import torch

from ..utils import _log_api_usage_once, _make_ntuple


class ConvNormActivation(torch.nn.Sequential):
    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Union[int, tuple[int, ...]] = 3,
        stride: Union[int, tuple[int, ...]] = 1,
        padding: Optional[Union[int, tuple[int, ...], str]] = None,
        groups: int = 1,
        norm_layer: Optional[Callable[..., torch.nn.Module]] = torch.nn.BatchNorm2d,
        activation_layer: Optional[Callable[..., torch.nn.Module]] = torch.nn.ReLU,
        dilation: Union[int, tuple[int, ...]] = 1,
        inplace: Optional[bool] = True,
        bias: Optional[bool] = None,
        conv_layer: Callable[..., torch.nn.Module] = torch.nn.Conv2d,
    ) -> None:

        if padding is None:
            if isinstance(kernel_size, int) and isinstance(dilation, int):
                padding = (kernel_size - 1) // 2 * dilation
            else:
                _conv_dim = len(kernel_size) if isinstance(kernel_size, Sequence) else len(dilation)
                kernel_size = _make_ntuple(kernel_size, _conv_dim)
                dilation = _make_ntuple(dilation, _conv_dim)
                padding = tuple((kernel_size[i] - 1) // 2 * dilation[i] for i in range(_conv_dim))
        if bias is None:
            bias = norm_layer is None

        layers = [
            conv_layer(
                in_channels,
                out_channels,
                kernel_size,
                stride,
                padding,
                dilation=dilation,
                groups=groups,
                bias=bias,
            )
        ]

        if norm_layer is not None:
            layers.append(norm_layer(out_channels))

        if activation_layer is not None:
            params = {} if inplace is None else {"inplace": inplace}
            layers.append(activation_layer(**params))
        super().__init__(*layers)
        _log_api_usage_once(self)
        self.out_channels = out_channels


class Conv2dNormActivation(ConvNormActivation):
    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Union[int, tuple[int, int]] = 3,
        stride: Union[int, tuple[int, int]] = 1,
        padding: Optional[Union[int, tuple[int, int], str]] = None,
        groups: int = 1,
        norm_layer: Optional[Callable[..., torch.nn.Module]] = torch.nn.BatchNorm2d,
        activation_layer: Optional[Callable[..., torch.nn.Module]] = torch.nn.ReLU,
        dilation: Union[int, tuple[int, int]] = 1,
        inplace: Optional[bool] = True,
        bias: Optional[bool] = None,
    ) -> None:

        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            groups,
            norm_layer,
            activation_layer,
            dilation,
            inplace,
            bias,
            torch.nn.Conv2d,
        )
'''

STEM = '''
import torch.nn as nn
from tv.ops.misc import Conv2dNormActivation


class Stem(nn.Module):
    def __init__(self, in_channels=3, out_channels=32, norm_layer=nn.BatchNorm2d{extra}):
        super().__init__()
        self.stem = Conv2dNormActivation(in_channels, out_channels, {args})

    def forward(self, x):
        return self.stem(x)
'''


def _stem(tmp_path: Path, args: str, extra: str = "") -> tuple[Ctor, list[str]]:
    ops = tmp_path / "tv" / "ops"
    ops.mkdir(parents=True)
    for folder in (tmp_path / "tv", ops):
        (folder / "__init__.py").write_text("", encoding="utf-8")
    (ops / "misc.py").write_text(MISC, encoding="utf-8")
    model = tmp_path / "stem.py"
    model.write_text(STEM.format(args=args, extra=extra), encoding="utf-8")
    reach = CrossFileReach(ModuleResolver(search_paths=[str(tmp_path)]), root=str(tmp_path))
    mf = analyse(model.read_text(encoding="utf-8"), str(model), reach=reach)
    arch = next(a for a in mf.architectures if a.name == "Stem")
    assert arch.init is not None
    stem = next(b.value for b in arch.init.bindings if b.attr == "stem")
    assert isinstance(stem, Ctor)
    rules = [r for r in load_rules().rules if r.family == 7]
    return stem, [f.rule_id for f in check(mf, rules, detect_environment("cpu")).findings]


def test_an_imported_sequential_subclass_holds_what_its_init_hands_to_super(tmp_path: Path) -> None:
    """`Conv2dNormActivation(3, 32, kernel_size=3, stride=2)`: its `__init__` hands everything to
    `ConvNormActivation`, which builds `[Conv2d, BatchNorm2d, ReLU]` and calls `super().__init__(*layers)`."""
    stem, found = _stem(tmp_path, "kernel_size=3, stride=2")
    assert stem.callee == "torch.nn.Sequential"
    assert [i.callee for i in stem.items] == ["torch.nn.Conv2d", "torch.nn.BatchNorm2d", "torch.nn.ReLU"]
    assert stem.origin is not None and stem.origin.startswith("Conv2dNormActivation (tv/ops/misc.py:")
    assert found == ["f07-conv-bn"]


@pytest.mark.parametrize(("args", "items"), [
    ("norm_layer=norm_layer", ["torch.nn.Conv2d", "torch.nn.BatchNorm2d", "torch.nn.ReLU"]),  # a default
    ("norm_layer=nn.GroupNorm", ["torch.nn.Conv2d", "torch.nn.GroupNorm", "torch.nn.ReLU"]),
    ("norm_layer=None, activation_layer=nn.SiLU", ["torch.nn.Conv2d", "torch.nn.SiLU"]),
])
def test_the_call_decides_the_items(tmp_path: Path, args: str, items: list[str]) -> None:
    stem, found = _stem(tmp_path, args)
    assert [i.callee for i in stem.items] == items
    assert ("f07-conv-bn" in found) is ("torch.nn.BatchNorm2d" in items)


def test_a_norm_layer_with_no_known_value_stays_as_written(tmp_path: Path) -> None:
    """RAFT's `ResidualBlock(..., *, norm_layer)` hands on a required parameter: the norm is not known."""
    stem, found = _stem(tmp_path, "norm_layer=norm, kernel_size=3", extra=", *, norm")
    assert not stem.items  # an nn.Sequential whose items are not known (as before this reading)
    assert found == []


# facexlib 0.3.0, facexlib/matting/mobilenetv2.py: module-level builders, imported here from a sibling module
HELPERS = '''
import torch.nn as nn


def conv_bn(inp, oup, stride):
    return nn.Sequential(nn.Conv2d(inp, oup, 3, stride, 1, bias=False), nn.BatchNorm2d(oup), nn.ReLU6(inplace=True))


def conv_1x1_gn(inp, oup, norm=nn.GroupNorm):
    return nn.Sequential(nn.Conv2d(inp, oup, 1, 1, 0, bias=False), norm(8, oup), nn.ReLU6(inplace=True))


def conv_list(inp, oup):
    layers = [nn.Conv2d(inp, oup, 1), nn.BatchNorm2d(oup)]
    return nn.Sequential(*layers)
'''

BACKBONE = '''
import torch.nn as nn
from .helpers import {name}


class Backbone(nn.Module):
    def __init__(self, inp, oup):
        super().__init__()
        self.stem = {name}(inp, oup{more})

    def forward(self, x):
        return self.stem(x)
'''


@pytest.mark.parametrize(("name", "more", "items"), [
    ("conv_bn", ", 2", ["torch.nn.Conv2d", "torch.nn.BatchNorm2d", "torch.nn.ReLU6"]),
    ("conv_1x1_gn", "", ["torch.nn.Conv2d", "torch.nn.GroupNorm", "torch.nn.ReLU6"]),  # counter-example: no BN
    ("conv_list", "", None),  # a list the builder fills: the items are not read (as for a same-file helper)
])
def test_an_imported_builder_returning_a_sequential(tmp_path: Path, name: str, more: str,
                                                    items: list[str] | None) -> None:
    pkg = tmp_path / "net"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "helpers.py").write_text(HELPERS, encoding="utf-8")
    model = pkg / "backbone.py"
    model.write_text(BACKBONE.format(name=name, more=more), encoding="utf-8")
    reach = CrossFileReach(ModuleResolver(search_paths=[str(tmp_path)]), root=str(tmp_path))
    mf = analyse(model.read_text(encoding="utf-8"), str(model), reach=reach)
    arch = next(a for a in mf.architectures if a.name == "Backbone")
    assert arch.init is not None
    stem = next(b.value for b in arch.init.bindings if b.attr == "stem")
    assert isinstance(stem, Ctor)
    rules = [r for r in load_rules().rules if r.family == 7]
    found = [f.rule_id for f in check(mf, rules, detect_environment("cpu")).findings]
    if items is None:
        assert not stem.items and found == []
    else:
        assert [i.callee for i in stem.items] == items
        assert stem.origin is not None and stem.origin.startswith(f"{name} (net/helpers.py:")
        assert ("f07-conv-bn" in found) is ("torch.nn.BatchNorm2d" in items)


def test_a_sequential_built_in_another_file_is_reported_without_a_fix(tmp_path: Path) -> None:
    """The pair is reported where the model calls the Sequential; the fix would have to edit the other
    file, so none is offered, and the reason says so (`adopter check`, as a user runs it)."""
    import json
    import os
    import subprocess
    import sys

    _stem(tmp_path, "kernel_size=3, stride=2")
    server = str(Path(__file__).resolve().parents[2] / "server")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([server, str(tmp_path)]), ADOPTER_CACHE_DIR=str(tmp_path / "c"))
    out = subprocess.run([sys.executable, "-m", "adopter", "check", "--no-cache", "--format", "json",
                          str(tmp_path / "stem.py")], capture_output=True, text=True, env=env, check=False, timeout=300)
    assert out.returncode == 1, out.stderr  # 1: sites found
    findings = [f for f in json.loads(out.stdout) if f["rule"] == "f07-conv-bn"]
    assert len(findings) == 1 and not findings[0]["fixable"]
    assert "built by Conv2dNormActivation (tv/ops/misc.py:" in findings[0]["no_fix_reason"]
    assert findings[0]["range"]["start"]["line"] == 12  # `return self.stem(x)` (1-based)


# geffnet 1.0.2: geffnet/conv2d_layers.py (shortened) and efficientnet_builder.py, which takes `nn` and
# `select_conv2d` only from `from .conv2d_layers import *`
CONV2D_LAYERS = '''
import torch
import torch.nn as nn
import torch.nn.functional as F
{all}

def _helper():
    import numpy as np
    return np


class Conv2dSame(nn.Conv2d):
    def forward(self, x):
        return F.conv2d(x, self.weight, self.bias, self.stride, (0, 0), self.dilation, self.groups)


def create_conv2d_pad(in_chs, out_chs, kernel_size, **kwargs):
    padding = kwargs.pop('padding', '')
    kwargs.setdefault('bias', False)
    padding, is_dynamic = get_padding_value(padding, kernel_size, **kwargs)
    if is_dynamic:
        return Conv2dSame(in_chs, out_chs, kernel_size, **kwargs)
    else:
        return nn.Conv2d(in_chs, out_chs, kernel_size, padding=padding, **kwargs)


def select_conv2d(in_chs, out_chs, kernel_size, **kwargs):
    assert 'groups' not in kwargs  # only use 'depthwise' bool arg
    if isinstance(kernel_size, list):
        m = MixedConv2d(in_chs, out_chs, kernel_size, **kwargs)
    else:
        depthwise = kwargs.pop('depthwise', False)
        groups = out_chs if depthwise else 1
        if 'num_experts' in kwargs and kwargs['num_experts'] > 0:
            m = CondConv2d(in_chs, out_chs, kernel_size, groups=groups, **kwargs)
        else:
            m = create_conv2d_pad(in_chs, out_chs, kernel_size, groups=groups, **kwargs)
    return m
'''

BUILDER = '''
import re
from copy import deepcopy

from .conv2d_layers import *


class DepthwiseSeparableConv(nn.Module):
    def __init__(self, in_chs, out_chs, dw_kernel_size=3, stride=1, pad_type='', act_layer=nn.ReLU,
                 pw_kernel_size=1, norm_layer=nn.BatchNorm2d, norm_kwargs=None):
        super(DepthwiseSeparableConv, self).__init__()
        norm_kwargs = norm_kwargs or {}
        self.conv_dw = select_conv2d(
            in_chs, in_chs, dw_kernel_size, stride=stride, padding=pad_type, depthwise=True)
        self.bn1 = norm_layer(in_chs, **norm_kwargs)
        self.act1 = act_layer(inplace=True)

    def forward(self, x):
        x = self.conv_dw(x)
        x = self.bn1(x)
        x = self.act1(x)
        return x
'''


@pytest.mark.parametrize(("dunder_all", "found"), [
    ("", True),
    ("__all__ = ['select_conv2d', 'nn']", True),
    ("__all__ = ['select_conv2d']", False),  # `nn` is not exported: the file's `nn.BatchNorm2d` is unknown
])
def test_names_a_star_import_binds_are_read_from_the_module(tmp_path: Path, dunder_all: str, found: bool) -> None:
    pkg = tmp_path / "geff"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "conv2d_layers.py").write_text(CONV2D_LAYERS.format(all=dunder_all), encoding="utf-8")
    model = pkg / "efficientnet_builder.py"
    model.write_text(BUILDER, encoding="utf-8")
    reach = CrossFileReach(ModuleResolver(search_paths=[str(tmp_path)]), root=str(tmp_path))
    mf = analyse(model.read_text(encoding="utf-8"), str(model), reach=reach)
    arch = next(a for a in mf.architectures if a.name == "DepthwiseSeparableConv")
    assert arch.init is not None
    conv = next(b.value for b in arch.init.bindings if b.attr == "conv_dw")
    assert isinstance(conv, Ctor)
    assert conv.callee == "torch.nn.Conv2d"  # `select_conv2d` is found in the module either way
    rules = [r for r in load_rules().rules if r.family == 7]
    assert ("f07-conv-bn" in [f.rule_id for f in check(mf, rules, detect_environment("cpu")).findings]) is found
    if not found:
        return
    # without the reach (ADOPTER_CROSSFILE=0) star imports stay unread, as before
    bare = analyse(model.read_text(encoding="utf-8"), str(model), resolver=ModuleResolver([]))
    arch = next(a for a in bare.architectures if a.name == "DepthwiseSeparableConv")
    assert arch.init is not None
    assert next(b.value for b in arch.init.bindings if b.attr == "conv_dw").callee == "select_conv2d"  # type: ignore[union-attr]


@pytest.mark.parametrize(("body", "expected"), [
    ("    if a:\n        m = nn.Conv2d(a, b, k)\n    else:\n        m = nn.Conv2d(a, b, 1)\n    return m\n", "torch.nn.Conv2d"),
    ("    if isinstance(k, list):\n        return nn.ModuleDict()\n    return nn.Conv2d(a, b, k)\n", "torch.nn.Conv2d"),
    # counter-examples: a path that leaves the returned local as the caller's, a loop that rebinds it,
    # a parameter rebound before the test that decides the branch
    ("    m = None\n    if a:\n        m = nn.Conv2d(a, b, k)\n    return m\n", None),
    ("    m = nn.Conv2d(a, b, k)\n    for _ in range(2):\n        m = nn.Sequential(m)\n    return m\n", None),
    ("    k = [k]\n    if isinstance(k, list):\n        return nn.ModuleDict()\n    return nn.Conv2d(a, b, k)\n", None),
])
def test_the_returns_a_builder_reads(body: str, expected: str | None) -> None:
    import ast

    from adopter.analysis.crossfile.ast_files import ParsedFile, imports_of, toplevel_of
    from adopter.analysis.crossfile.builders import Call, built_layer
    from adopter.analysis.crossfile.reach import torch_layer

    tree = ast.parse(f"import torch.nn as nn\n\n\ndef f(a, b, k):\n{body}")
    parsed = ParsedFile(0.0, tree, imports_of(tree), toplevel_of(tree))
    fn = tree.body[-1]
    assert isinstance(fn, ast.FunctionDef)
    call = Call(("1", "2", "3"), frozenset(), False, frozenset())
    assert built_layer(fn, parsed, "b.py", call, lambda q, p: None, torch_layer) == expected
