"""Cross-file reach: a builder of another file that chooses the torch layer by a string the call leaves evident.

`get_norm_layer("bn", c)` whose body is `if name == "bn": return nn.BatchNorm2d(c)` (pytorch_toolbelt's
`instantiate_normalization_block(NORM_BATCH, c)` with a module-level `NORM_BATCH = "batch_norm"`, monai's and
lightly's `get_norm_layer`, diffusers' `get_activation(act_fn)` whose key is respelled in place with
`act_fn = act_fn.lower()`): the builder's `==` / `!=` / `in` tests on that parameter are decided by the string
passed (a literal, the caller's parameter default, a module-level name bound once to a string, there or
imported), or the builder's own string default when the call does not pass it; the layer the decided path
builds is the binding, carrying none of the call's arguments (they choose the layer, they are not its
arguments). Anything not evident (a required parameter, a parameter the builder rebinds otherwise, a name bound
twice, a `**` splat that may pass the key, a parameter or local that shadows a module-level name, on either side)
leaves the call as written.
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

NORMS = '''
import torch.nn as nn

NORM_BATCH = "batch_norm"
NORM_LAYER = "layer_norm"
TWICE = "batch_norm"
TWICE = "layer_norm"


def get_norm_layer(name, channels):
    if name == "bn":
        return nn.BatchNorm2d(channels)
    elif name in ("ln", "layer"):
        return nn.LayerNorm(channels)
    raise ValueError(name)


def instantiate_normalization_block(kind, channels):
    if kind == NORM_BATCH:
        return nn.BatchNorm2d(channels)
    if kind == NORM_LAYER:
        return nn.GroupNorm(1, channels)
    raise KeyError(kind)


def lowered(name, channels):
    if name.lower() != "batch":
        return nn.GroupNorm(1, channels)
    return nn.BatchNorm2d(channels)


def with_default(channels, norm="bn"):
    if norm == "bn":
        return nn.BatchNorm2d(channels)
    return nn.GroupNorm(1, channels)


def rebinding(name, channels):
    name = "ln" if channels > 64 else name
    if name == "bn":
        return nn.BatchNorm2d(channels)
    return nn.LayerNorm(channels)


def handing_on(name, channels):
    return get_norm_layer(name, channels)


def shadowed(kind, channels, NORM_BATCH=None):
    if kind == NORM_BATCH:
        return nn.BatchNorm2d(channels)
    return nn.GroupNorm(1, channels)
'''

ACTS = '''
from torch import nn

ACT2CLS = {"swish": nn.SiLU, "silu": nn.SiLU, "gelu": nn.GELU, "relu": nn.ReLU}


def get_activation(act_fn: str) -> nn.Module:
    act_fn = act_fn.lower()
    if act_fn in ACT2CLS:
        return ACT2CLS[act_fn]()
    else:
        raise ValueError(act_fn)


def get_late(act_fn):
    probe = ACT2CLS[act_fn]
    act_fn = act_fn.lower()
    return probe()
'''

CONV_MODEL = '''
import torch.nn as nn
from pkg.norms import (get_norm_layer, instantiate_normalization_block, lowered, with_default, rebinding,
                       handing_on, shadowed, NORM_BATCH, TWICE)
from pkg import norms


class ConvNorm(nn.Module):
    def __init__(self, cin, cout, {params}):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
        self.norm = {norm}

    def forward(self, x):
        return self.norm(self.conv(x))
'''

ACT_MODEL = '''
import torch.nn as nn
from pkg.acts import get_activation, get_late


class Mlp(nn.Module):
    def __init__(self, dim, {params}):
        super().__init__()
        self.fc = nn.Linear(dim, 4 * dim)
        self.act = {act}

    def forward(self, x):
        return self.act(self.fc(x))
'''


def _analysed(tmp_path: Path, model: str, **fields: str) -> tuple[Ctor | object, list[str]]:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    for name, text in {"__init__": "", "norms": NORMS, "acts": ACTS}.items():
        (pkg / f"{name}.py").write_text(textwrap.dedent(text), encoding="utf-8")
    path = pkg / "model.py"
    path.write_text(model.format(**fields), encoding="utf-8")
    reach = CrossFileReach(ModuleResolver(search_paths=[str(tmp_path)]), root=str(tmp_path))
    mf = analyse(path.read_text(encoding="utf-8"), str(path), reach=reach)
    arch = mf.architectures[0]
    assert arch.init is not None
    attr = "norm" if "norm" in fields else "act"
    value = next(b.value for b in arch.init.bindings if b.attr == attr)
    rules = [r for r in load_rules().rules if r.family in (6, 7)]
    return value, [f.rule_id for f in check(mf, rules, detect_environment("cpu")).findings]


@pytest.mark.parametrize(("params", "norm", "expected"), [
    ("k=1", 'get_norm_layer("bn", cout)', "torch.nn.BatchNorm2d"),  # a literal
    ('norm="bn"', "get_norm_layer(norm, cout)", "torch.nn.BatchNorm2d"),  # the caller's parameter default
    ('norm="layer"', "get_norm_layer(norm, channels=cout)", "torch.nn.LayerNorm"),  # `in (...)`
    ("k=1", "instantiate_normalization_block(NORM_BATCH, cout)", "torch.nn.BatchNorm2d"),  # names on both sides
    ("norm=NORM_BATCH", "instantiate_normalization_block(norm, cout, **{{}})", "torch.nn.BatchNorm2d"),  # a name default
    ("k=1", "instantiate_normalization_block(norms.NORM_LAYER, cout)", None),  # an attribute: not read
    ("k=1", 'lowered("Batch", cout)', "torch.nn.BatchNorm2d"),  # `.lower()` then `!=`
    ("k=1", 'lowered("group", cout)', "torch.nn.GroupNorm"),
    ("k=1", "with_default(cout)", "torch.nn.BatchNorm2d"),  # the builder's own default
    ("k=1", 'with_default(cout, norm="gn")', "torch.nn.GroupNorm"),
    ('norm="bn"', 'handing_on(norm, cout)', "torch.nn.BatchNorm2d"),  # handed on to the next builder
])
def test_a_string_the_call_leaves_evident_chooses_the_layer(
        tmp_path: Path, params: str, norm: str, expected: str | None) -> None:
    value, found = _analysed(tmp_path, CONV_MODEL, params=params, norm=norm)
    assert isinstance(value, Ctor)
    if expected is None:
        assert value.callee.startswith("pkg.") and value.origin is None
        return
    assert value.callee == expected
    assert value.args == () and value.kwargs == ()  # the call's arguments chose it: none is the layer's
    assert value.origin is not None and "(pkg/norms.py:" in value.origin
    assert ("f07-conv-bn" in found) == (expected == "torch.nn.BatchNorm2d")


@pytest.mark.parametrize(("params", "norm"), [
    ("norm", "get_norm_layer(norm, cout)"),  # a required parameter: any string
    ("k=1", "instantiate_normalization_block(TWICE, cout)"),  # a name bound twice
    ("k=1", 'rebinding("bn", cout)'),  # the builder rebinds the parameter it tests
    ("k=1", "with_default(cout, **kw)"),  # a splat may pass `norm`
    ("k=1", 'get_norm_layer("in", cout)'),  # no path returns: nothing is built
    ("NORM_BATCH", "instantiate_normalization_block(NORM_BATCH, cout)"),  # the caller's parameter, not the module's
    ("k=1", "shadowed(NORM_BATCH, cout)"),  # the builder's parameter `NORM_BATCH`, not the module's name
])
def test_a_string_not_evident_leaves_the_call_as_written(tmp_path: Path, params: str, norm: str) -> None:
    if "**kw" in norm:
        params += ", **kw"
    value, found = _analysed(tmp_path, CONV_MODEL, params=params, norm=norm)
    assert isinstance(value, Ctor) and value.callee.startswith("pkg.norms.") and value.origin is None
    assert "f07-conv-bn" not in found


@pytest.mark.parametrize(("params", "act", "expected"), [
    ('act_fn="GELU"', "get_activation(act_fn)", "torch.nn.GELU"),  # respelled in place: `act_fn.lower()`
    ("k=1", 'get_activation("swish")', "torch.nn.SiLU"),
    ('act_fn="gelu"', "get_late(act_fn)", None),  # looked up before the respelling: not followed
])
def test_a_factory_key_respelled_in_place(tmp_path: Path, params: str, act: str, expected: str | None) -> None:
    value, found = _analysed(tmp_path, ACT_MODEL, params=params, act=act)
    assert isinstance(value, Ctor)
    if expected is None:
        assert value.callee.startswith("pkg.acts.")
        return
    assert value.callee == expected
    assert ("f06-linear-gelu" in found) == (expected == "torch.nn.GELU")
