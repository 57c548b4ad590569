"""A module-level factory's `nn.Sequential(...)` whose items are given as locals (`chains.local_items`).

Shaped on carefree-learn 0.2.1 `cflearn/models/cv/segmentor/aim/core.py:22-25` (`psp_stage`: `prior = ...Pool(...)`,
`conv = Conv2d(...)`, `return nn.Sequential(prior, conv)`) and descript-audio-codec's
`dac/model/discriminator.py:10-16` (`conv = weight_norm(nn.Conv1d(...))`, then `return conv` under `if not act:`
and `return nn.Sequential(conv, nn.LeakyReLU(0.1))`: the local is used elsewhere, the refusal below), written
here with the stock layers whose pairs the rules read (the metamorphic harness's `split_nested_calls` rewrite
of retinaface-pytorch's `conv_bn`, docs/notes/meta36.md §6). The Sequential runs the layer where its name
stands, so the conv -> BN pair is a site of the factory, and the fix (the Sequential built as
`FoldedConvBnSequential`, the locals untouched) computes what the original computes: outputs, input and
parameter gradients, state-dict keys (float64, CPU, seed 0, `torch.allclose` at rtol 1e-6 / atol 1e-9).
All fail on 8c2d50f7, where an identifier item reads as no layer."""

from __future__ import annotations

import types

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, find, load_rules

ENV = Environment("cpu", frozenset(), "2.13.0")
RULES = [r for r in load_rules().rules if r.family in (6, 7)]

CONV_BN = '''
import torch.nn as nn


def conv_bn(inp, oup, stride=1):
    conv = nn.Conv2d(inp, oup, 3, stride, 1, bias=False)
    return nn.Sequential(conv, nn.BatchNorm2d(oup), nn.LeakyReLU(0.1, inplace=True))


def psp_stage(channels, size):
    prior = nn.AdaptiveAvgPool2d(output_size=size)
    conv = nn.Conv2d(channels, channels, kernel_size=1, bias=False)
    norm = nn.BatchNorm2d(channels)
    return nn.Sequential(prior, conv, norm)
'''

FEED_FORWARD = '''
import torch.nn as nn


def FeedForward(dim, mult=4):
    inner = int(dim * mult)
    proj_in = nn.Linear(dim, inner)
    return nn.Sequential(nn.LayerNorm(dim), proj_in, nn.GELU(), nn.Linear(inner, dim))
'''

REFUSED = {
    # the local is also returned on another path (descript-audio-codec's WNConv1d): the module is shared
    "used_elsewhere": '''
import torch.nn as nn


def conv_act(c_in, c_out, bn=True):
    conv = nn.Conv2d(c_in, c_out, 3, padding=1)
    if not bn:
        return conv
    return nn.Sequential(conv, nn.BatchNorm2d(c_out))
''',
    # reassigned before the Sequential is built: which layer it holds is not the first constructor
    "reassigned": '''
import torch.nn as nn


def conv_bn(c_in, c_out):
    conv = nn.Conv2d(c_in, c_out, 3, padding=1)
    conv = nn.Identity()
    return nn.Sequential(conv, nn.BatchNorm2d(c_out))
''',
    # bound only under a condition: not bound on every path
    "bound_in_branch": '''
import torch.nn as nn


def conv_bn(c_in, c_out, deep=False):
    conv = None
    if deep:
        conv = nn.Conv2d(c_in, c_out, 3, padding=1)
    return nn.Sequential(conv, nn.BatchNorm2d(c_out))
''',
    # a parameter: the caller chooses the layer
    "parameter": '''
import torch.nn as nn


def with_bn(conv, c_out):
    return nn.Sequential(conv, nn.BatchNorm2d(c_out))
''',
    # captured by a nested function that runs it too
    "captured": '''
import torch.nn as nn


def conv_bn(c_in, c_out):
    conv = nn.Conv2d(c_in, c_out, 3, padding=1)

    def probe(x):
        return conv(x)

    return nn.Sequential(conv, nn.BatchNorm2d(c_out)), probe
''',
    # the local holds a pooling layer, not a convolution: no pair
    "not_a_pair": '''
import torch.nn as nn


def pool_bn(c_out):
    pool = nn.AvgPool2d(2)
    return nn.Sequential(pool, nn.BatchNorm2d(c_out))
''',
}


def _found(source: str) -> list[tuple[str, int, bool]]:
    return sorted((f.rule_id, f.span.start_line, f.fixable) for f in find(analyse(source, "model.py"), RULES, ENV))


def test_a_local_conv_before_the_batchnorm_is_a_site_of_the_factory() -> None:
    # reported at the conv's constructor (the local's value: 0-based lines 5 and 11), fixable
    assert _found(CONV_BN) == [("f07-conv-bn", 5, True), ("f07-conv-bn", 11, True)]


def test_a_local_linear_before_the_gelu_is_a_site_of_the_factory() -> None:
    assert [(r, line) for r, line, _ in _found(FEED_FORWARD)] == [("f06-linear-gelu", 6)]


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_locals_that_are_not_only_this_item_are_not_read(case: str) -> None:
    assert _found(REFUSED[case]) == []


def _module(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    return module


@pytest.mark.torch
@pytest.mark.parametrize(("factory", "args"), [("conv_bn", (3, 8, 2)), ("psp_stage", (4, 3))])
def test_the_fix_computes_what_the_factory_computes(factory: str, args: tuple[int, ...]) -> None:
    torch = pytest.importorskip("torch")
    from adopter.session import rewrite
    from adopter.synth import Rewritten
    from equivalence import compare_modules, trained_statistics

    findings = find(analyse(CONV_BN, "model.py"), RULES, ENV)
    result = rewrite(CONV_BN, findings, rules=RULES, env=ENV, path="model.py")
    assert isinstance(result, Rewritten), result
    assert "    return FoldedConvBnSequential(conv, nn.BatchNorm2d(oup)" in result.new_source
    assert "    conv = nn.Conv2d(inp, oup, 3, stride, 1, bias=False)" in result.new_source  # the local kept
    torch.manual_seed(0)
    original = getattr(_module(CONV_BN, "before"), factory)(*args).double()
    fixed = getattr(_module(result.new_source, "after"), factory)(*args).double()
    assert list(original.state_dict()) == list(fixed.state_dict())
    trained_statistics(original, weight=(0.5, 2))
    compare_modules(original, fixed, lambda: (torch.randn(2, args[0], 12, 12, dtype=torch.float64),),
                    atol=1e-9, rtol=1e-6, grad_atol=1e-9, same_parameters=True)
    assert type(fixed).__name__ == "FoldedConvBnSequential"
