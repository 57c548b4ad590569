"""Activation functions held by attributes: `self.act = F.gelu`, `getattr(F, name)`, a same-file dict of
functions or a helper returning one by name; a call of the attribute is a call of the function."""

from __future__ import annotations

import pytest

from adopter.dsl.types import Expr

from .helpers import arch, forward_lines


def code(key: str, value: str) -> str:
    return CODE.replace("KEY", repr(key)).replace("VALUE", value)


CODE = '''
ACTS = {"gelu": F.gelu, "relu": F.relu}


def _get_activation_fn(activation):
    if activation == "relu":
        return F.relu
    elif activation == "gelu":
        return F.gelu
    raise RuntimeError(activation)


class M(nn.Module):
    def __init__(self, d, activation=KEY):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.act = VALUE

    def forward(self, x):
        return self.act(self.fc(x))
'''


@pytest.mark.parametrize(("value", "key", "function"), [
    ("F.gelu", "gelu", "torch.nn.functional.gelu"),
    ("torch.nn.functional.silu", "gelu", "torch.nn.functional.silu"),
    ("getattr(F, activation)", "gelu", "torch.nn.functional.gelu"),
    ("getattr(F, activation)", "relu", "torch.nn.functional.relu"),
    ('getattr(F, "silu")', "gelu", "torch.nn.functional.silu"),
    ("ACTS[activation]", "gelu", "torch.nn.functional.gelu"),
    ("ACTS[activation]", "relu", "torch.nn.functional.relu"),
    ("_get_activation_fn(activation)", "gelu", "torch.nn.functional.gelu"),
    ("_get_activation_fn(activation)", "relu", "torch.nn.functional.relu"),
], ids=["F.gelu", "qualified", "getattr-default", "getattr-relu", "getattr-literal", "dict", "dict-relu",
        "helper", "helper-relu"])
def test_an_attribute_holding_an_activation_is_that_function(value: str, key: str, function: str) -> None:
    a = arch(code(key, value), "M")
    assert a.init is not None
    (act,) = [b for b in a.init.bindings if b.attr == "act"]
    assert act.value == Expr(function)
    assert f"%2 = function {function}(%1)" in forward_lines(code(key, value), "M")


@pytest.mark.parametrize("value", [
    "getattr(F, self.name)",          # the name is not evident here
    "ACTS[activation + '_']",          # neither is the key
    "_get_activation_fn(activation)",  # with a key the helper does not list
    "F.softmax",                       # not an activation
], ids=["getattr-unknown", "dict-unknown-key", "helper-unknown-key", "softmax"])
def test_an_attribute_whose_function_is_not_evident_stays_a_call(value: str) -> None:
    lines = forward_lines(code("swish", value), "M")
    assert "%2 = module self.act(%1)" in lines, lines


def test_a_conditionally_bound_function_stays_a_call() -> None:
    src = code("gelu", "F.gelu\n        if d > 4:\n            self.act = F.relu")
    assert "%2 = module self.act(%1)" in forward_lines(src, "M")
