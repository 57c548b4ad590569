"""Norm layers made by string-keyed factories of another file of the package (timm's `create_norm.py`).

`get_norm_layer(name)` looks `name.replace('_', '').lower()` up in a `dict(...)` table; `create_norm_layer(name,
num_features)` hands `name` to it and calls the class it returns. For a literal key (or a parameter's literal
default) both compute the table's layer, so `self.bn = create_norm_layer('batch_norm2d', c)` after a conv is
a conv -> BN site. So is `create_normalization_layer(normalization=lambda_batchnorm2d(), ...)` (pytorchcv's
`common/norm.py`): a builder that calls its argument when `isfunction` says it is one, given the lambda a
package function returns. Each not-site case also checks its positive twin, so every test fails where the chain is
not read.
"""

from __future__ import annotations

import sys
import textwrap
import types
from pathlib import Path

import pytest

from adopter.analysis import analyse
from adopter.analysis.crossfile.reach import CrossFileReach
from adopter.analysis.crossfile.resolver import ModuleResolver
from adopter.dsl.types import Ctor
from adopter.engine import Environment, find, load_rules

NORMS = '''
from inspect import isfunction

import torch.nn as nn

_NORM_MAP = dict(
    batchnorm=nn.BatchNorm2d,
    batchnorm2d=nn.BatchNorm2d,
    groupnorm=nn.GroupNorm,
    instancenorm=nn.InstanceNorm2d,
)


def get_norm_layer(norm_layer):
    if norm_layer is None:
        return None
    if isinstance(norm_layer, str):
        layer_name = norm_layer.replace('_', '').lower()
        norm_layer = _NORM_MAP[layer_name]
    return norm_layer


def create_norm_layer(layer_name, num_features, **kwargs):
    layer = get_norm_layer(layer_name)
    layer_instance = layer(num_features, **kwargs)
    return layer_instance


def wrapped_norm_layer(layer_name, num_features):
    layer = get_norm_layer(layer_name)
    return nn.Sequential(layer(num_features), nn.ReLU())


def lambda_batchnorm2d(eps=1e-5):
    """A lambda that builds the layer (pytorchcv's `common/norm.py` form)."""
    return lambda num_features: nn.BatchNorm2d(num_features=num_features, eps=eps)


def lambda_groupnorm(groups=2):
    return lambda num_features: nn.GroupNorm(groups, num_features)


def create_normalization_layer(normalization, **kwargs):
    if isfunction(normalization):
        return normalization(**kwargs)
    else:
        return normalization
'''

MODEL = '''
import torch
from torch import nn

from pkg.norms import {factory}


class ConvNorm(nn.Module):
    def __init__(self, c_in, c_out, norm_layer={default}):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, 3, padding=1, bias=False)
        self.bn = {ctor}

    def forward(self, x):
        x = self.conv(x)
        x = self.bn(x)
        return x
'''

ENV = Environment("cpu", frozenset(), "2.13.0")
RULES = [r for r in load_rules().rules if r.family == 7]
CREATE = ("create_norm_layer", "create_norm_layer(norm_layer, c_out)")
LAMBDA = ("create_normalization_layer, lambda_batchnorm2d, lambda_groupnorm",
          "create_normalization_layer(normalization=norm_layer, num_features=c_out)")


def _model(tmp_path: Path, factory: str, ctor: str, default: str) -> Path:
    pkg = tmp_path / "pkg"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "norms.py").write_text(textwrap.dedent(NORMS), encoding="utf-8")
    model = pkg / "model.py"
    model.write_text(MODEL.format(factory=factory, ctor=ctor, default=default), encoding="utf-8")
    return model


def _check(tmp_path: Path, factory: str, ctor: str, default: str) -> tuple[Ctor, list[bool]]:
    model = _model(tmp_path, factory, ctor, default)
    reach = CrossFileReach(ModuleResolver(search_paths=[str(tmp_path)]), root=str(tmp_path))
    mf = analyse(model.read_text(encoding="utf-8"), str(model), reach=reach)
    arch = next(a for a in mf.architectures if a.name == "ConvNorm")
    assert arch.init is not None
    bn = next(b.value for b in arch.init.bindings if b.attr == "bn")
    assert isinstance(bn, Ctor)
    return bn, [f.fixable for f in find(mf, RULES, ENV)]


@pytest.mark.parametrize(("factory", "ctor", "default"), [
    (*CREATE, "'batch_norm2d'"),  # a factory handing its key to a factory; the key's spelling applied
    (*CREATE, "'Batch_Norm2d'"),  # lower-cased too
    ("create_norm_layer", "create_norm_layer('batchnorm', c_out)", "None"),  # a literal key
    (*LAMBDA, "lambda_batchnorm2d()"),  # a builder calling the lambda a package function returns
])
def test_a_batchnorm_from_a_factory_of_another_file_is_a_site(tmp_path: Path, factory: str, ctor: str,
                                                               default: str) -> None:
    bn, found = _check(tmp_path, factory, ctor, default)
    assert bn.callee == "torch.nn.BatchNorm2d"
    assert bn.origin is not None and "pkg/norms.py" in bn.origin
    assert found == [True]


@pytest.mark.parametrize(("factory", "ctor", "default"), [
    (*CREATE, "'group_norm'"),  # the table's other layer: no BatchNorm
    (*CREATE, "'batch-norm2d'"),  # a key the table does not hold once spelled as the factory spells it
    ("wrapped_norm_layer", "wrapped_norm_layer(norm_layer, c_out)", "'batchnorm2d'"),  # the result wrapped
    (*LAMBDA, "lambda_groupnorm()"),  # the lambda builds a GroupNorm
    (*LAMBDA, "nn.GroupNorm(2, 4)"),  # a module passed as is (no lambda): the builder returns it
])
def test_a_factory_that_builds_something_else_stays_silent(tmp_path: Path, factory: str, ctor: str,
                                                            default: str) -> None:
    assert _check(tmp_path / "twin", *CREATE, "'batchnorm2d'")[1] == [True]
    bn, found = _check(tmp_path, factory, ctor, default)
    assert bn.callee != "torch.nn.BatchNorm2d"
    assert found == []


@pytest.mark.parametrize(("expr", "key", "expected"), [
    ("name.replace('_', '').lower()", "Batch_Norm", "batchnorm"),
    ("name.lower().split('-')[0]", "BN-act", "bn"),
    ("name.upper()", "gelu", "GELU"),
    ("name.split('-')[5]", "a-b", None),
])
def test_the_key_is_spelled_as_the_factory_spells_it(expr: str, key: str, expected: str | None) -> None:
    import ast

    from adopter.analysis.crossfile.factories import apply_steps, key_steps

    fn = ast.parse(f"def f(name):\n    k = {expr}\n    return T[k]\n").body[0]
    assert isinstance(fn, ast.FunctionDef)
    root, steps = key_steps(ast.Name(id="k"), fn)
    assert root is not None and root.id == "name"
    assert apply_steps(key, steps) == expected


@pytest.mark.torch
@pytest.mark.parametrize(("factory", "ctor", "default"), [(*CREATE, "'batch_norm2d'"), (*LAMBDA, "lambda_batchnorm2d()")],
                         ids=["create-norm-layer", "lambda"])
def test_the_fold_through_the_factory_computes_the_same(tmp_path: Path, factory: str, ctor: str,
                                                        default: str) -> None:
    """Outputs, input and parameter gradients in eval and training mode, and the state dict after the
    training pass, with `strict=True` loading (float64, CPU, seed 0, BN statistics and affine randomised,
    `torch.allclose` rtol 1e-6 / atol 1e-9)."""
    torch = pytest.importorskip("torch")
    from adopter.session import rewrite
    from adopter.synth import Rewritten
    from equivalence import compare_modules, trained_statistics

    model = _model(tmp_path, factory, ctor, default)
    source = model.read_text(encoding="utf-8")
    reach = CrossFileReach(ModuleResolver(search_paths=[str(tmp_path)]), root=str(tmp_path))
    findings = find(analyse(source, str(model), reach=reach), RULES, ENV)
    result = rewrite(source, findings, rules=RULES, env=ENV, path=str(model))
    assert isinstance(result, Rewritten), result
    assert "folded_conv_bn(x, self.conv, self.bn)" in result.new_source
    sys.path.insert(0, str(tmp_path))
    try:
        original, fixed = _module(source, "original"), _module(result.new_source, "fixed")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("pkg.norms", None)
        sys.modules.pop("pkg", None)
    torch.manual_seed(0)
    a = original.ConvNorm(3, 4).double()
    trained_statistics(a.bn)
    b = fixed.ConvNorm(3, 4).double()
    # running statistics equal to the bit
    compare_modules(a, b, lambda: (torch.randn(2, 3, 8, 8, dtype=torch.float64),),
                    atol=1e-9, rtol=1e-6, grad_atol=1e-9, same_parameters=True, buffer_atol=0, buffer_rtol=0)


def _module(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    return module
