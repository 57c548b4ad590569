"""A gate activation stored from a None-default parameter only on the path where it is given is not what the module
applies: the layer of the default's path decides family 14 (issue 20; helper `prec12`'s precision census of
unlabelled dev code, `engine.optional_keys.stored_only_when_given`).

The census's wrong family-14 finding, written anew in the same shape: torchmd-net `models/utils.py` `GLU`,
`activation: Optional[nn.Module] = None`, `self.act = nn.Sigmoid() if activation is None else activation`, forward
`self.W(x) * self.act(self.V(x))`. As built with its defaults the gate is a sigmoid (a GLU, not the SiLU/GELU gated
MLP of `bench/data/realworld/LABELLING.md`); the parameter is bound only where a caller passes one.
"""

from __future__ import annotations

from adopter.engine import Environment, load_rules
from adopter.session import RuleContext, Session

CUDA = Environment("cuda", frozenset(), "2.13.0")


def _lines(code: str, prefix: str = "f14-") -> list[int]:
    session = Session(RuleContext(tuple(load_rules().rules), (), CUDA))
    return sorted(f.span.start_line + 1 for f in session.analysed(code, "m.py").findings
                  if f.rule_id.startswith(prefix))


def _line(code: str, text: str) -> int:
    return next(i for i, line in enumerate(code.splitlines(), 1) if text in line)


GATE = '''from typing import Optional

from torch import nn


class GatedUnit(nn.Module):
    def __init__(self, features, hidden=None, activation: Optional[nn.Module] = None):
        super().__init__()
        BINDING
        hidden = hidden or features
        self.up = nn.Linear(features, hidden)
        self.gate = nn.Linear(features, hidden)

    def forward(self, x):
        return self.up(x) * self.act(self.gate(x))
'''


def _gate(binding: str) -> str:
    return GATE.replace("BINDING", binding)


def test_a_parameter_stored_only_when_given_is_not_the_gate() -> None:
    # the default's arm is a sigmoid, a tanh, a ReLU: no SiLU/GELU gated MLP as built
    for binding in (
        "self.act = nn.Sigmoid() if activation is None else activation",
        "self.act = activation if activation is not None else nn.Tanh()",
        "self.act = nn.ReLU() if activation is None else activation",
        "if activation is None:\n            self.act = nn.Sigmoid()\n        else:\n            self.act = activation",
        "if activation is not None:\n            self.act = activation\n        else:\n            self.act = nn.Sigmoid()",
    ):
        assert _lines(_gate(binding)) == [], binding


def test_gates_whose_default_may_be_silu_or_gelu_stay_sites() -> None:
    for binding in (
        "self.act = nn.SiLU() if activation is None else activation",  # the default's arm is a SiLU
        "self.act = activation if activation is not None else nn.GELU()",
        "self.act = activation",  # stored on every path: a callable not known here (as before)
        "self.act = nn.Sigmoid() if features > 8 else activation",  # a test not on the parameter: undecided
    ):
        code = _gate(binding)
        assert _lines(code) == [_line(code, "return self.up(x)")], binding
    # a default that is not None: the parameter is bound at the default (`nn.SiLU()`), as before
    code = _gate("self.act = nn.Sigmoid() if activation is None else activation").replace(
        "activation: Optional[nn.Module] = None", "activation: nn.Module = nn.SiLU()")
    assert _lines(code) == [_line(code, "return self.up(x)")]


NEIGHBOURS = '''from typing import Optional

from torch import nn


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden, act_layer=nn.SiLU):
        super().__init__()
        self.fc1_g = nn.Linear(dim, hidden)
        self.fc1_x = nn.Linear(dim, hidden)
        self.act = act_layer()
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        x_gate = self.fc1_g(x)
        x = self.fc1_x(x)
        x = self.act(x_gate) * x
        return self.fc2(x)


class EncoderLayer(nn.Module):
    def __init__(self, c1, cm=2048, act: Optional[nn.Module] = None):
        super().__init__()
        self.fc1 = nn.Linear(c1, cm)
        self.fc2 = nn.Linear(cm, c1)
        self.act = nn.GELU() if act is None else act

    def forward(self, src):
        return self.fc2(self.act(self.fc1(src)))
'''


def test_neighbouring_labelled_forms_are_still_found() -> None:
    # a SiLU gate by default (timm's SwiGLU, a labelled family-14 form) and a Linear -> GELU whose None-default
    # activation keeps the GELU of the default's arm (family 6)
    assert _lines(NEIGHBOURS) == [_line(NEIGHBOURS, "x_gate = self.fc1_g(x)")]
    assert _lines(NEIGHBOURS, "f06-") == [_line(NEIGHBOURS, "return self.fc2(self.act(self.fc1(src)))")]
