"""A factory function's `nn.Sequential(OrderedDict([...]))`: its items are the dict's values, in order
(`analysis/chains/ordered_items.py`; torch's `Sequential.__init__` adds an OrderedDict's items in turn, named by
their keys). The same construction written inside a class's `__init__` was read already; in a module-level
factory only the positional form was (found by the metamorphic harness, `docs/notes/meta36.md` item 5).

Shaped on dev code, rewritten at fixture size:
- pytorch-toolbelt `pytorch_toolbelt/modules/encoders/hourglass.py:14-23` (`conv1x1_bn_act`: conv, bn, act keyed);
- cod-vae `cod_vae/torch/modules.py:48-58` (`_geglu_mlp`: `c_fc`, a GEGLU module, `c_proj`);
- torchmultimodal `diffusion_labs/models/vae/vae.py:90, 116` (keyed Sequentials in a builder function).

The fix is the one a factory's positional Sequential gets (`FoldedConvBnSequential(OrderedDict(...))`: the keys,
so the state dict, are kept; the GEGLU module's forward is rewritten in place). The fixed module computes what the
original does: outputs, input and parameter gradients, in eval and training mode (float64, CPU, seed 0, atol 1e-9 /
rtol 1e-6).
"""

from __future__ import annotations

import types

import pytest

torch = pytest.importorskip("torch")

from adopter.analysis import analyse  # noqa: E402
from adopter.engine import Environment, find, load_rules  # noqa: E402
from adopter.session import rewrite  # noqa: E402
from adopter.synth import Rewritten  # noqa: E402
from equivalence import compare_modules, trained_statistics  # noqa: E402

pytestmark = pytest.mark.torch

ENV = Environment("cpu", frozenset(), "2.13.0")
RULES = [r for r in load_rules().rules if r.family in (7, 8, 14)]

SOURCE = '''
from collections import OrderedDict

import torch
from torch import nn


def conv1x1_bn_act(in_channels, out_channels, activation=nn.ReLU):
    return nn.Sequential(
        OrderedDict(
            [
                ("conv", nn.Conv2d(in_channels, out_channels, kernel_size=1)),
                ("bn", nn.BatchNorm2d(out_channels)),
                ("act", activation(inplace=True)),
            ]
        )
    )


class GEGLU(nn.Module):
    def forward(self, x):
        x, gates = x.chunk(2, dim=-1)
        return x * torch.nn.functional.gelu(gates)


def geglu_mlp(embed_dim, width):
    return nn.Sequential(
        OrderedDict(
            [
                ("c_fc", nn.Linear(embed_dim, 2 * width)),
                ("gelu", GEGLU()),
                ("c_proj", nn.Linear(width, embed_dim)),
            ]
        )
    )


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = conv1x1_bn_act(3, 8)
        self.mlp = geglu_mlp(8, 16)

    def forward(self, x):
        return self.mlp(self.stem(x).permute(0, 2, 3, 1))
'''


def _line(source: str, text: str) -> int:
    """The 0-based line holding `text` (a finding's span is 0-based)."""
    return next(i for i, line in enumerate(source.splitlines()) if text in line)


def _sites(source: str) -> list[tuple[str, int, bool]]:
    return sorted((f.rule_id, f.span.start_line, f.fixable) for f in find(analyse(source, "model.py"), RULES, ENV))


def test_the_keyed_items_of_a_factory_s_sequential_are_its_chain() -> None:
    sites = _sites(SOURCE)
    assert ("f07-conv-bn", _line(SOURCE, '("conv", nn.Conv2d('), True) in sites
    assert [rule for rule, _, _ in sites if rule.startswith("f14")], sites  # the GEGLU item's chunked gate


def test_on_the_base_only_the_positional_spelling_was_read() -> None:
    positional = SOURCE.replace('("conv", nn.Conv2d(in_channels, out_channels, kernel_size=1))',
                                "nn.Conv2d(in_channels, out_channels, kernel_size=1)")
    positional = positional.replace('("bn", nn.BatchNorm2d(out_channels))', "nn.BatchNorm2d(out_channels)")
    positional = positional.replace('("act", activation(inplace=True))', "activation(inplace=True)")
    positional = positional.replace("        OrderedDict(\n            [\n", "").replace(
        "            ]\n        )\n    )\n\n\nclass GEGLU", "    )\n\n\nclass GEGLU", 1)
    keyed = [s for s in _sites(SOURCE) if s[0] == "f07-conv-bn"]
    plain = [s for s in _sites(positional) if s[0] == "f07-conv-bn"]
    assert len(keyed) == len(plain) == 1


@pytest.mark.parametrize("items", [
    # the BatchNorm before the convolution: no pair
    '[("bn", nn.BatchNorm2d(in_channels)), ("conv", nn.Conv2d(in_channels, out_channels, 1))]',
    # an activation between them: no pair
    '[("conv", nn.Conv2d(in_channels, out_channels, 1)), ("act", nn.ReLU()), ("bn", nn.BatchNorm2d(out_channels))]',
    # the items' order is not written here (a list built elsewhere)
    "layers",
    # a pair whose key is not a (key, value) tuple: the chain's order is not certain
    '[("conv", nn.Conv2d(in_channels, out_channels, 1)), make_bn(out_channels)]',
])
def test_no_pair_where_the_keyed_items_do_not_make_one(items: str) -> None:
    source = f'''
from collections import OrderedDict

from torch import nn


def make_bn(c):
    return ("bn", nn.BatchNorm2d(c))


def block(in_channels, out_channels, layers=()):
    return nn.Sequential(OrderedDict({items}))
'''
    assert [s for s in _sites(source) if s[0] == "f07-conv-bn"] == []


def _module(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    return module


def test_the_fixed_factories_compute_what_the_originals_do() -> None:
    findings = find(analyse(SOURCE, "model.py"), RULES, ENV)
    result = rewrite(SOURCE, findings, rules=RULES, env=ENV, path="model.py")
    assert isinstance(result, Rewritten), result
    assert "return FoldedConvBnSequential(\n        OrderedDict(" in result.new_source
    original, fixed = _module(SOURCE, "original"), _module(result.new_source, "fixed")
    torch.manual_seed(0)
    a = original.Net().double()
    b = fixed.Net().double()
    assert list(a.state_dict()) == list(b.state_dict())  # the keys are kept: checkpoints still load
    trained_statistics(a)
    compare_modules(a, b, lambda: (torch.randn(2, 3, 5, 5, dtype=torch.float64),), atol=1e-9, rtol=1e-6,
                    grad_atol=1e-9, same_parameters=True)
