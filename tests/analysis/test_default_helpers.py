"""A constructor argument's fallback chosen through a same-file `default(val, d)` helper (lucidrains'
repositories and their copies): `activation = default(activation, GELU)` with `activation=None` binds
`self.act = activation()` to the fallback's class, recognised by the helper's body, never by its name; and
the `GELU = nn.GELU if hasattr(nn, 'GELU') else GELU_` compatibility shim names `nn.GELU`."""

from __future__ import annotations

import pytest

from adopter.dsl.types import Ctor

from .helpers import arch, forward_lines

# linformer 0.2.3 (linformer/linformer.py), reformer-pytorch 1.4.4, routing-transformer 1.6.1,
# compressive-transformer-pytorch 0.4.0, linear-attention-transformer 0.19.1: the helpers as written there.
HELPERS = {
    "linformer": "def default(val, default_val):\n    return val if val is not None else default_val\n",
    "reformer": "def default(val, default_val):\n    return default_val if val is None else val\n",
    "routing": ("def exists(val):\n    return val is not None\n\n\n"
                "def default(x, d):\n    if not exists(x):\n        return d if not isfunction(d) else d()\n"
                "    return x\n"),
    "compressive": ("def default(x, val):\n    if x is not None:\n        return x\n"
                    "    return val if not isfunction(val) else val()\n"),
    "linear-attention": ("def exists(val):\n    return val is not None\n\n\n"
                         "def default(value, d):\n    return d if not exists(value) else value\n"),
}

CODE = '''
from inspect import isfunction


class GELU_(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * torch.pow(x, 3))))


GELU = nn.GELU if hasattr(nn, 'GELU') else GELU_


HELPER

class FeedForward(nn.Module):
    def __init__(self, dim, mult = 4, dropout = 0., activation = DEFAULT, glu = False):
        super().__init__()
        activation = default(activation, GELU)

        self.glu = glu
        self.w1 = nn.Linear(dim, dim * mult * (2 if glu else 1))
        self.act = activation()
        self.dropout = nn.Dropout(dropout)
        self.w2 = nn.Linear(dim * mult, dim)

    def forward(self, x, **kwargs):
        x = self.w1(x)
        x = self.act(x)
        x = self.dropout(x)
        return self.w2(x)
'''


def code(helper: str, default: str = "None") -> str:
    return CODE.replace("HELPER", helper).replace("DEFAULT", default)


@pytest.mark.parametrize("name", sorted(HELPERS))
def test_the_fallback_of_a_default_helper_is_bound(name: str) -> None:
    a = arch(code(HELPERS[name]), "FeedForward")
    assert a.init is not None
    (act,) = [b for b in a.init.bindings if b.attr == "act"]
    assert isinstance(act.value, Ctor) and act.value.callee == "torch.nn.GELU"
    assert "x = function torch.nn.functional.gelu(x)" in forward_lines(code(HELPERS[name]), "FeedForward")


@pytest.mark.parametrize(("helper", "default"), [
    (HELPERS["linformer"], "nn.ReLU"),  # the parameter's default is not None: the caller's class is unknown here
    ("def default(val, default_val):\n    return default_val if val is not None else val\n", "None"),  # inverted
    ("def default(val, default_val):\n    return val or default_val\n", "None"),  # not a test of None
    ("def default(val, default_val):\n    print(val)\n    return val if val is not None else default_val\n", "None"),
], ids=["non-none-default", "inverted", "or", "side-effect"])
def test_other_helpers_and_defaults_are_not_read_as_the_fallback(helper: str, default: str) -> None:
    a = arch(code(helper, default), "FeedForward")
    assert a.init is not None
    acts = [b for b in a.init.bindings if b.attr == "act"]
    assert not any(isinstance(b.value, Ctor) and b.value.callee == "torch.nn.GELU" for b in acts)


def test_a_shim_that_checks_for_another_attribute_is_not_an_alias() -> None:
    src = code(HELPERS["linformer"]).replace("hasattr(nn, 'GELU')", "hasattr(nn, 'SiLU')")
    a = arch(src, "FeedForward")
    assert a.init is not None
    (act,) = [b for b in a.init.bindings if b.attr == "act"]
    assert not (isinstance(act.value, Ctor) and act.value.callee == "torch.nn.GELU")
