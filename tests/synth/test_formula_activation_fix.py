"""f06's fix is declined where the activation is a same-file function computing the exact GELU (BERT's
`def gelu(x)`, read as `F.gelu` by the rules): `fused_linear_gelu` fuses only `F.gelu` and the GELU modules
at run time and would run the original code, so the fix would claim a kernel and give none. `check`
(planned), the verified decision (quick fix) and `fix` (fix-all) give the same reason."""

from __future__ import annotations

import pytest

from adopter.engine import Environment, load_rules
from adopter.session import RuleContext, Session

CUDA = Environment("cuda", frozenset(), "2.13.0")
REASON = "the activation is a function of this file (`gelu`)"

HEAD = '''import math
import typing

import torch
from torch import nn


def gelu(x):
    """Implementation of the gelu activation function."""
    return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))


def swish(x):
    return x * torch.sigmoid(x)


'''

# pytorch-pretrained-bert / BERT's original: a same-file table, the key from the config.
BERT = HEAD + '''ACT2FN = {"gelu": gelu, "relu": torch.nn.functional.relu, "swish": swish}


class BertIntermediate(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        if isinstance(config.hidden_act, str):
            self.intermediate_act_fn = ACT2FN[config.hidden_act]
        else:
            self.intermediate_act_fn = config.hidden_act

    def forward(self, hidden_states):
        hidden_states = self.dense(hidden_states)
        hidden_states = self.intermediate_act_fn(hidden_states)
        return hidden_states
'''

# tape-proteins 0.5 `modeling_utils.py`: a helper picks the function by name.
TAPE = HEAD + '''def get_activation_fn(name: str) -> typing.Callable:
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

DIRECT = HEAD + '''class Mlp(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.act = gelu

    def forward(self, x):
        return self.act(self.fc(x))
'''


def session() -> Session:
    return Session(RuleContext(tuple(load_rules().rules), (), CUDA))


def f06(s: Session, code: str) -> tuple[object, object]:
    analysed = s.analysed(code, "m.py")
    found = [f for f in analysed.findings if f.rule_id == "f06-linear-gelu"]
    assert len(found) == 1
    return analysed, found[0]


@pytest.mark.parametrize("code", [BERT, TAPE, DIRECT], ids=["act2fn-table", "get-activation-fn", "attribute"])
def test_the_fix_is_declined_with_the_reason(code: str) -> None:
    s = session()
    analysed, finding = f06(s, code)
    planned = s.planned(analysed, finding)  # what `check` and the quick-fix list say
    assert not planned.fixable and planned.reason is not None and REASON in planned.reason
    verified = session()
    again, same = f06(verified, code)
    decision = verified.decision(again, same)  # the quick fix
    assert not decision.fixable and decision.reason == planned.reason
    # `fix` and fix-all: every rule (f13 rewrites the formula to `F.gelu(x)` first; the function is still
    # the user's), and f06 alone, which reports the site as left with the reason
    assert "fused_linear_gelu" not in session().fix(code, "m.py").new_source
    out = session().fix(code, "m.py", rules=["f06-linear-gelu"])
    assert out.new_source == code
    assert [reason for f, reason in out.skipped] == [planned.reason]


@pytest.mark.parametrize("gelu", ["torch.nn.functional.gelu", "nn.GELU()"])
def test_a_torch_gelu_in_the_same_table_keeps_the_fix(gelu: str) -> None:
    code = BERT.replace('{"gelu": gelu,', f'{{"gelu": {gelu},')
    if gelu == "nn.GELU()":
        code = code.replace("self.intermediate_act_fn = config.hidden_act", "self.intermediate_act_fn = nn.GELU()")
    s = session()
    analysed, finding = f06(s, code)
    assert s.planned(analysed, finding).fixable
    assert "fused_linear_gelu(" in s.fix(code, "m.py").new_source


def test_the_formula_in_the_file_is_not_enough() -> None:
    # the file defines the formula, but the attribute holds torch's function: the helper fuses it
    code = DIRECT.replace("self.act = gelu", "self.act = torch.nn.functional.gelu")
    s = session()
    analysed, finding = f06(s, code)
    assert s.planned(analysed, finding).fixable
    assert "fused_linear_gelu(" in s.fix(code, "m.py").new_source
