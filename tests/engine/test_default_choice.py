"""A layer chosen by a string parameter is the module's only where the parameter's default chooses it
(`engine.default_choice`, used by `InitIndex.resolve_ctor` and the matcher's path fallback).

pytorch-frame's `FCResidualBlock` binds `self.norm1` to a BatchNorm1d when `normalization == "batch_norm"` and
to a LayerNorm when it is `"layer_norm"`, the default; the Linear -> BatchNorm1d fold was reported on the
default LayerNorm module (the oracle's two wrong f08 findings, `torch_frame/nn/models/resnet.py:81/86`). Family
6 reads an activation chosen by name the same way (`named_activation`, `key_may_be`: the literal default names
the layer). A boolean switch (`if use_bn:`), a default equal to the literal up to case, and a choice whose
default takes no other binding of the attribute stay as they were: reported.
"""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.dsl.types import Binding, Expr, Param, Span
from adopter.engine import Environment, check, load_rules
from adopter.engine.default_choice import decide, string_defaults, unchosen_by_default

CPU = Environment("cpu", frozenset(), "2.13.0")
CUDA = Environment("cuda", frozenset(), "2.13.0")

# pytorch-frame 0.2.5, torch_frame/nn/models/resnet.py lines 28-90, reduced (docstring, reset left out).
RESIDUAL = '''from torch import Tensor
from torch.nn import BatchNorm1d, Dropout, LayerNorm, Linear, Module, ReLU


class FCResidualBlock(Module):
    def __init__(self, in_channels: int, out_channels: int, normalization: str | None = "{default}",
                 dropout_prob: float = 0.0) -> None:
        super().__init__()
        self.lin1 = Linear(in_channels, out_channels)
        self.relu = ReLU()
        self.dropout = Dropout(dropout_prob)
        self.norm1: BatchNorm1d | LayerNorm | None
        if normalization == "batch_norm":
            self.norm1 = BatchNorm1d(out_channels)
        elif normalization == "layer_norm":
            self.norm1 = LayerNorm(out_channels)
        else:
            self.norm1 = None

    def forward(self, x: Tensor) -> Tensor:
        out = self.lin1(x)
        out = self.norm1(out) if self.norm1 else out
        out = self.relu(out)
        return self.dropout(out)
'''

CONV = '''from torch import nn


class ConvLayer(nn.Module):
    def __init__(self, c, norm_type={default}):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, bias=False)
        {choice}

    def forward(self, x):
        return self.norm(self.conv(x))
'''

ELIF = '''if norm_type in ("bn", "batch"):
            self.norm = nn.BatchNorm2d(c)
        elif norm_type != "none":
            self.norm = nn.InstanceNorm2d(c)
        else:
            self.norm = nn.Identity()'''

EXPRESSION = 'self.norm = nn.BatchNorm2d(c) if norm_type == "bn" else nn.GroupNorm(8, c)'

# the Identity stays on the other path: the analysis gives it the condition `not (norm_type == "bn")`
OVERWRITTEN = '''self.norm = nn.Identity()
        if norm_type == "bn":
            self.norm = nn.BatchNorm2d(c)'''

ONLY_BN = '''if norm_type == "bn":
            self.norm = nn.BatchNorm2d(c)'''

ACT = '''from torch import nn


class Mlp(nn.Module):
    def __init__(self, d, act="{default}"):
        super().__init__()
        self.fc = nn.Linear(d, 4 * d)
        if act == "gelu":
            self.act = nn.GELU()
        else:
            self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.fc(x))
'''


def _rules(family: int) -> list:
    return [r for r in load_rules().rules if r.family == family]


def _sites(source: str, family: int, env: Environment = CPU) -> list[int]:
    found = check(analyse(source, "m.py"), _rules(family), env).findings
    return [f.span.start_line + 1 for f in found]


def _line(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), 1) if line.strip() == text)


def test_a_batch_norm_the_string_default_does_not_choose_is_no_f08_site() -> None:
    assert _sites(RESIDUAL.format(default="layer_norm"), 8) == []
    chosen = RESIDUAL.format(default="batch_norm")  # the default chooses the BatchNorm1d
    assert _sites(chosen, 8) == [_line(chosen, "out = self.lin1(x)")]


@pytest.mark.parametrize(("choice", "other", "bn"), [(ELIF, "none", "batch"), (EXPRESSION, "gn", "bn"),
                                                     (OVERWRITTEN, "none", "bn")])
def test_a_conv_norm_chosen_by_name_is_a_site_only_at_the_default_that_names_bn(choice: str, other: str,
                                                                               bn: str) -> None:
    assert _sites(CONV.format(default=f'"{other}"', choice=choice), 7) == []
    chosen = CONV.format(default=f'"{bn}"', choice=choice)
    assert _sites(chosen, 7) == [_line(chosen, "return self.norm(self.conv(x))")]


@pytest.mark.parametrize(("default", "choice"), [
    ("False", 'self.norm = nn.BatchNorm2d(c) if norm_type else nn.Identity()'),  # a boolean switch
    ('"BN"', ELIF.replace('("bn", "batch")', '("bn",)')),  # equal up to case: __init__ may case-fold it first
    ('"none"', ONLY_BN),  # no other binding of the attribute: the default's path is not evident
    ("None", ELIF),  # not a string default
])
def test_choices_the_default_does_not_decide_stay_reported(default: str, choice: str) -> None:
    assert _sites(CONV.format(default='"none"', choice=ELIF), 7) == []  # the decided twin (fails on the base)
    source = CONV.format(default=default, choice=choice)
    assert _sites(source, 7) == [_line(source, "return self.norm(self.conv(x))")]


def test_an_activation_chosen_by_name_is_read_at_its_default_like_named_activation() -> None:
    assert _sites(ACT.format(default="relu"), 6, CUDA) == []
    chosen = ACT.format(default="gelu")
    assert _sites(chosen, 6, CUDA) == [_line(chosen, "return self.act(self.fc(x))")]


def _binding(condition: str | None) -> Binding:
    return Binding("norm", Expr("None"), Span(0, 0, 0, 1), condition)


def test_decide_reads_comparisons_of_string_parameters_only() -> None:
    defaults = string_defaults((Param("norm", default='"ln"'), Param("flag", default="True"), Param("n", default="3")))
    assert defaults == {"norm": "ln"}
    assert decide('norm == "bn"', defaults) is False
    assert decide("'ln' == norm", defaults) is True
    assert decide('norm != "bn"', defaults) is True
    assert decide('norm in ["bn", "ln"]', defaults) is True
    assert decide('not (norm in ("bn", "gn")) and norm == "ln"', defaults) is True
    assert decide('norm == "bn" or flag', defaults) is None  # the other operand is not evident
    assert decide('norm == "bn" and flag', defaults) is False
    assert decide("flag", defaults) is None
    assert decide('norm.lower() == "bn"', defaults) is None
    assert decide('norm == "LN"', defaults) is None
    assert decide("norm ==", defaults) is None  # not an expression


def test_a_binding_is_unchosen_only_beside_a_sibling_the_default_chooses() -> None:
    params = (Param("norm", default='"ln"'),)
    bn, ln, other = _binding('norm == "bn"'), _binding('not (norm == "bn") and norm == "ln"'), _binding("big")
    assert unchosen_by_default(bn, params, (bn, ln))
    assert not unchosen_by_default(ln, params, (bn, ln))
    assert not unchosen_by_default(bn, params, (bn, other))
    assert not unchosen_by_default(bn, (Param("norm"),), (bn, ln))
    assert not unchosen_by_default(_binding(None), params, (_binding(None), ln))


# fresh4's W2 (audyn 0.4.0 `modules/bsroformer.py`, `RoFormerEncoderLayer`), written anew in the same form: the
# default's branch is split again by a test the defaults do not decide (`hasattr(nn, "RMSNorm")`), so no sibling's
# whole condition is true, but its test of the name is.
SPLIT = '''import torch
from torch import nn


class EncoderLayer(nn.Module):
    def __init__(self, d_model: int, dropout: float = 0.1, norm: str = "{default}", norm_first: bool = True):
        super().__init__()
        self.linear = nn.Linear(d_model, d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.norm_first = norm_first
        if norm == "layer_norm":
            self.norm1 = nn.LayerNorm(d_model)
        elif norm == "rms":
            if hasattr(nn, "RMSNorm"):
                self.norm1 = nn.RMSNorm(d_model)
            else:
                self.norm1 = nn.Identity()
        else:
            raise ValueError(norm)

    def forward(self, x):
        if self.norm_first:
            x = x + self.dropout1(self.linear(self.norm1(x)))
        else:
            x = self.norm1(x + self.dropout1(self.linear(x)))
        return x
'''


def test_a_layer_norm_the_default_does_not_choose_beside_a_split_branch_is_no_f05_site() -> None:
    assert _sites(SPLIT.format(default="rms"), 5) == []  # failed on 2bf90d0: [25] (the post-norm arm)
    chosen = SPLIT.format(default="layer_norm")
    assert _sites(chosen, 5) != []


def test_a_sibling_is_taken_when_its_test_of_the_name_holds_and_nothing_in_it_is_false() -> None:
    params = (Param("norm", default='"rms"'),)
    ln = _binding('norm == "layer_norm"')
    rms = _binding('not (norm == "layer_norm") and norm == "rms" and hasattr(nn, "RMSNorm")')
    assert unchosen_by_default(ln, params, (ln, rms))
    # a conjunction with no test of the name that holds, or with a false term: not evident, as before
    assert not unchosen_by_default(ln, params, (ln, _binding('big and hasattr(nn, "RMSNorm")')))
    assert not unchosen_by_default(ln, params, (ln, _binding('norm == "bn" and hasattr(nn, "RMSNorm")')))
    assert not unchosen_by_default(ln, params, (ln, _binding('norm == "bn" or hasattr(nn, "RMSNorm")')))
