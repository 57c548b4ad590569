"""An activation chosen by a boolean flag is the module's only where the flag's literal default chooses it
(`engine.default_choice._unchosen_activation`): family 6 counts an activation chosen by a parameter when its
default is GELU (bench/data/realworld/LABELLING.md, "Disagreements"; dev2 batch 15's slp note).

Shaped on slp 1.2.1, `slp/modules/feedforward.py` lines 110-147 (`PositionwiseFF`: `self.activation = nn.ReLU()
if not gelu else nn.GELU()` with `gelu: bool = False`), rewritten at fixture size. A flag that switches a layer on
or off (`nn.GELU() if act else nn.Identity()`), a flag without a literal default and the flag's GELU default
stay reported.
"""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.dsl.types import Param, ParamKind
from adopter.engine import Environment, check, load_rules
from adopter.engine.default_choice import flag_defaults

CUDA = Environment("cuda", frozenset(), "2.13.0")

FF = '''from torch import nn


class PositionwiseFF(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.1, gelu{default}):
        super().__init__()
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)
        self.drop = nn.Dropout(dropout)
        {choice}

    def forward(self, x):
        return self.ff2(self.drop(self.activation(self.ff1(x))))
'''

NEGATED = "self.activation = nn.ReLU() if not gelu else nn.GELU()"
PLAIN = "self.activation = nn.GELU() if gelu else nn.SiLU()"
STATEMENT = '''if gelu:
            self.activation = nn.GELU()
        else:
            self.activation = nn.ReLU()'''
SWITCH = "self.activation = nn.GELU() if gelu else nn.Identity()"


def _forward_line(source: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), 1) if "return self.ff2(" in line)


def _f06(source: str) -> list[int]:
    rules = [r for r in load_rules().rules if r.family == 6]
    return [f.span.start_line + 1 for f in check(analyse(source, "m.py"), rules, CUDA).findings]


@pytest.mark.parametrize("choice", [NEGATED, PLAIN, STATEMENT])
def test_a_gelu_the_flag_default_does_not_choose_is_no_site(choice: str) -> None:
    assert _f06(FF.format(default="=False", choice=choice)) == []
    chosen = FF.format(default="=True", choice=choice)
    assert _f06(chosen) == [_forward_line(chosen)], "the default takes the GELU: a site"


@pytest.mark.parametrize("default", ["", "=None", "=cfg.gelu"])
def test_a_flag_without_a_literal_boolean_default_stays_undecided(default: str) -> None:
    source = FF.format(default=default, choice=NEGATED).replace("cfg.gelu", "0 or True")
    assert _f06(source) == [_forward_line(source)]


def test_a_flag_switching_the_gelu_on_or_off_stays_undecided() -> None:
    source = FF.format(default="=False", choice=SWITCH)
    assert _f06(source) == [_forward_line(source)]


def test_flag_defaults_reads_literal_booleans_only() -> None:
    params = [Param("self", ParamKind.POSITIONAL, None), Param("gelu", ParamKind.POSITIONAL, "False"),
              Param("bn", ParamKind.POSITIONAL, "True"), Param("act", ParamKind.POSITIONAL, "'gelu'"),
              Param("kw", ParamKind.VAR_KEYWORD, None)]
    assert flag_defaults(params) == {"gelu": False, "bn": True}
