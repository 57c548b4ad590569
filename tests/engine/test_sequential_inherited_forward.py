"""An `nn.Sequential` subclass whose own forward calls Sequential's forward once on one tensor
(`new = super(_DenseLayer, self).forward(x)` then `torch.cat([x, new], 1)`: DenseNet's `_DenseLayer` in
torchxrayvision, classy_vision and controlnet_aux) runs the chain its `__init__` builds at that statement
(`chains.sequential_classes._inherited_forward`). The site is placed there, without an automatic fix (the
class's own forward is kept). Counter-examples: a call with `*args`, two calls, a call in a lambda, a
pre-activation chain (BatchNorm, ReLU, conv: no conv feeds a BatchNorm)."""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules
from adopter.engine.types import Finding

HEADER = "import torch\nfrom torch import nn\nfrom torch.nn import functional as F\n\n\n"

DENSE_LAYER = '''
class DenseLayer(nn.Sequential):
    def __init__(self, c, growth, bn_size):
        super(DenseLayer, self).__init__()
        self.add_module("norm1", nn.BatchNorm2d(c))
        self.add_module("relu1", nn.ReLU(inplace=True))
        self.add_module("conv1", nn.Conv2d(c, bn_size * growth, kernel_size=1, bias=False))
        self.add_module("norm2", nn.BatchNorm2d(bn_size * growth))
        self.add_module("relu2", nn.ReLU(inplace=True))
        self.add_module("conv2", nn.Conv2d(bn_size * growth, growth, kernel_size=3, padding=1, bias=False))
        self.drop_rate = 0.1

    def forward(self, x):
        new_features = super(DenseLayer, self).forward(x)
        if self.drop_rate > 0:
            new_features = F.dropout(new_features, p=self.drop_rate, training=self.training)
        return torch.cat([x, new_features], 1)
'''

CALL = "        new_features = super(DenseLayer, self).forward(x)\n"


def line(code: str, needle: str) -> int:
    return next(i for i, text in enumerate((HEADER + code).splitlines()) if needle in text)


def conv_bn(code: str) -> list[Finding]:
    env = Environment("cpu", frozenset(), "2.13.0")
    return [f for f in check(analyse(HEADER + code, "m.py"), load_rules().rules, env).findings if f.family == 7]


@pytest.mark.parametrize("call", [
    CALL,
    "        new_features = super().forward(x)\n",
    "        new_features = nn.Sequential.forward(self, x)\n",
])
def test_the_parent_forward_runs_the_chain_at_its_statement(call: str) -> None:
    code = DENSE_LAYER.replace(CALL, call)
    found = conv_bn(code)
    assert len(found) == 1
    site = found[0]
    assert site.scope_name == "DenseLayer"
    assert site.span.start_line == line(code, call.strip())
    assert {line(code, '"conv1"'), line(code, '"norm2"')} <= {s.start_line for s in site.init_spans}
    assert not site.fixable and "super().forward(x)" in (site.no_fix_reason or "")


@pytest.mark.parametrize(("old", "new"), [
    (CALL, "        new_features = super().forward(*[x])\n"),  # not one tensor
    (CALL, CALL + "        new_features = super().forward(new_features)\n"),  # run twice
    (CALL, "        run = lambda t: super(DenseLayer, self).forward(t)\n        new_features = run(x)\n"),
    (CALL, "        new_features = super().__call__(x)\n"),  # not read as the forward
    ('        self.add_module("norm2", nn.BatchNorm2d(bn_size * growth))\n', ""),  # pre-activation only
])
def test_anything_else_is_not_read(old: str, new: str) -> None:
    assert old in DENSE_LAYER
    assert conv_bn(DENSE_LAYER) and not conv_bn(DENSE_LAYER.replace(old, new))
