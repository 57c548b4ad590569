"""A same-file function that computes the exact GELU as a formula (`def gelu(x): return x * 0.5 * (1.0 +
torch.erf(x / math.sqrt(2.0)))`, BERT's original and its copies: tape-proteins 0.5 `modeling_utils.py`) is
`F.gelu` where a module attribute holds it, also when a helper picks it by name (`get_activation_fn('gelu')`)
and when the attribute takes the callable passed instead of a string (`if isinstance(hidden_act, str)`).
The function is recognised by what its body computes (`analysis.names.formula_functions`), never by its
name; `canonical.normalise._function_of` accepts the passed-callable half of the BERT idiom."""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.analysis.names.formula_functions import exact_gelu
from adopter.engine import Environment, check, load_rules

CODE = '''import math
import typing

import torch
from torch import nn


def gelu(x):
    """Implementation of the gelu activation function."""
    return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))


def swish(x):
    return x * torch.sigmoid(x)


def get_activation_fn(name: str) -> typing.Callable:
    if name == 'gelu':
        return gelu
    elif name == 'relu':
        return torch.nn.functional.relu
    elif name == 'swish':
        return swish
    else:
        raise ValueError(f"Unrecognized activation fn: {name}")


class PredictionHeadTransform(nn.Module):
    def __init__(self, hidden_size: int, hidden_act: typing.Union[str, typing.Callable] = 'gelu'):
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)
        if isinstance(hidden_act, str):
            self.transform_act_fn = get_activation_fn(hidden_act)
        else:
            self.transform_act_fn = hidden_act
        self.LayerNorm = nn.LayerNorm(hidden_size)

    def forward(self, hidden_states):
        hidden_states = self.dense(hidden_states)
        hidden_states = self.transform_act_fn(hidden_states)
        hidden_states = self.LayerNorm(hidden_states)
        return hidden_states
'''


def line(code: str, needle: str) -> int:
    return next(i for i, text in enumerate(code.splitlines()) if needle in text)


def sites(code: str, family: int = 6) -> list[tuple[str, int]]:
    env = Environment("cpu", frozenset(), "2.13.0")
    found = check(analyse(code, "m.py"), load_rules().rules, env).findings
    return sorted((f.scope_name, f.span.start_line) for f in found if f.family == family)


def test_the_function_a_helper_picks_by_name_is_gelu() -> None:
    assert sites(CODE) == [("PredictionHeadTransform", line(CODE, "hidden_states = self.dense(hidden_states)"))]


def test_an_attribute_holding_the_function_is_gelu() -> None:
    code = CODE.replace("""        if isinstance(hidden_act, str):
            self.transform_act_fn = get_activation_fn(hidden_act)
        else:
            self.transform_act_fn = hidden_act
""", "        self.transform_act_fn = gelu\n")
    assert sites(code) == [("PredictionHeadTransform", line(code, "hidden_states = self.dense(hidden_states)"))]


@pytest.mark.parametrize("old, new", [
    ("hidden_act: typing.Union[str, typing.Callable] = 'gelu'", "hidden_act = 'swish'"),  # another key
    ("return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))", "return x * 0.5 * (1.0 + torch.erf(x / 2.0))"),
    ("return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))",  # the tanh approximation is not this form
     "return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * torch.pow(x, 3))))"),
    ("            self.transform_act_fn = hidden_act\n",  # the other half is not the callable passed
     "            self.transform_act_fn = nn.ReLU()\n"),
])
def test_what_is_not_the_exact_gelu_is_not_reported(old: str, new: str) -> None:
    code = CODE.replace(old, new)
    assert code != CODE
    assert sites(code) == []


@pytest.mark.parametrize("source, expected", [
    ("def gelu(x):\n    return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))\n", True),
    ("def g(t):\n    '''doc'''\n    return 0.5 * t * (1 + torch.special.erf(t * 0.7071067811865476))\n", True),
    ("def g(t):\n    return t * 0.5 * (1.0 + t.div(math.sqrt(2.0)).erf())\n", False),  # `div`: not read
    ("def g(t, s):\n    return t * 0.5 * (1.0 + torch.erf(t / math.sqrt(2.0)))\n", False),  # two parameters
    ("def g(t):\n    y = t\n    return y * 0.5 * (1.0 + torch.erf(y / math.sqrt(2.0)))\n", False),  # statements
    ("def g(t):\n    return t * torch.sigmoid(1.702 * t)\n", False),
    ("def g(t):\n    return t * 0.5 * (1.0 + torch.erf(t / SQRT2))\n", False),  # a name it cannot read
])
def test_exact_gelu_reads_the_returned_formula(source: str, expected: bool) -> None:
    assert exact_gelu(source) is expected
