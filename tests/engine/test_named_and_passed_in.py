"""Activations and projections whose identity the class leaves to its caller (issue 20, families 6 and 14).

- `f06-linear-gelu-named`: a Linear into `self.fn = get_act_layer(act)`, a factory this file imports and
  cannot read alone, called with one name whose evident value (here the parameter's default `"GELU"`) is a
  GELU's (monai's `MLPBlock`). Fixed as `f06-linear-gelu`: `fused_linear_gelu(x, self.fc1, self.fn)`, whose
  run-time check runs the original modules for anything but a GELU. The fix is exercised with a stand-in
  factory module: outputs, input and parameter gradients equal, float64, CPU, seed 0, `torch.allclose`
  rtol 1e-6 / atol 1e-9, `strict=True` loading, for an exact GELU, a tanh GELU and a factory that builds
  a ReLU for that name (the helper's fallback path).
- `f14-gated-passed-in`: `act(gate(x)) * up(x)` whose projections are handed to the constructor
  (torchtune's `FeedForward`) or built from a value handed in (torchtitan's `config.w1.build()`), reported
  without a fix. Its guard reads `__init__`'s parameters, which the match memo records.
"""

from __future__ import annotations

import sys
import types

import pytest

from adopter.analysis.incremental import DocumentAnalysis
from adopter.dsl.types import ModuleFile
from adopter.engine import Environment, check, load_rules
from adopter.engine.sites import MatchMemo
from adopter.session import RuleContext, Session

CUDA = Environment("cuda", frozenset(), "2.13.0")

NAMED = '''from torch import nn

from acts_for_test import get_act_layer


class MLPBlock(nn.Module):
    def __init__(self, hidden_size, mlp_dim, act="GELU"):
        super().__init__()
        self.fc1 = nn.Linear(hidden_size, mlp_dim)
        self.fc2 = nn.Linear(mlp_dim, hidden_size)
        self.fn = get_act_layer(act)

    def forward(self, x):
        x = self.fn(self.fc1(x))
        return self.fc2(x)
'''

TORCHTUNE = '''from typing import Optional

from torch import nn


class FeedForward(nn.Module):
    def __init__(self, *, gate_proj: nn.Module, down_proj: nn.Module, up_proj: Optional[nn.Module] = None,
                 activation: nn.Module = nn.SiLU()):
        super().__init__()
        self.w1 = gate_proj
        self.w2 = down_proj
        self.w3 = up_proj
        self.activation = activation

    def forward(self, x):
        h = self.activation(self.w1(x))
        if self.w3 is not None:
            h = h * self.w3(x)
        return self.w2(h)
'''

TORCHTITAN = '''import torch.nn.functional as F
from torch import nn


class FeedForward(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.w1 = config.w1.build()
        self.w2 = config.w2.build()
        self.w3 = config.w3.build()

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))
'''


def session() -> Session:
    return Session(RuleContext(tuple(load_rules().rules), (), CUDA))


def lines(code: str, rule: str) -> list[int]:
    return [f.span.start_line + 1 for f in session().analysed(code, "m.py").findings if f.rule_id == rule]


# -- family 6: an activation built by an evident name ---------------------------------------------------


# One table per rule, in one test: the not-site rows hold on the base too; the site rows fail there.
NAMED_ROWS: list[tuple[tuple[str, str] | None, list[int]]] = [
    (None, [14]),  # the default names a GELU: a site
    (('act="GELU"', 'act="gelu_new"'), [14]),
    (('act="GELU"', 'act="ReLU"'), []),  # a ReLU's name
    (('act="GELU"', "act"), []),  # a required name: not evident
    (("get_act_layer(act)", "get_act_layer(act, 0.1)"), []),  # other arguments
    (("get_act_layer(act)", "get_act_layer(name=act)"), []),  # a keyword: not read
    (("get_act_layer(act)", "get_act_layer(act, inplace=True)"), [14]),  # in place: the same function
    (("get_act_layer(act)", "get_act_layer(act, approximate=True)"), []),  # another keyword may choose
    (("get_act_layer(act)", "get_act_layer(act)()"), [14]),  # a class factory's class, called
    (("get_act_layer(act)", "get_act_layer(act)(mlp_dim)"), []),  # ... with arguments
    (("get_act_layer(act)", "get_act_layer(act, 1)()"), []),
    (("get_act_layer(act)", "nn.ReLU()"), []),  # a torch layer that is not a GELU
    (("        self.fn = get_act_layer(act)\n", "        self.fn = get_act_layer(act)\n"
      "        if mlp_dim > 4:\n            self.fn = get_act_layer(\"relu\")\n"), []),  # one binding is not
]


def test_an_activation_built_by_an_evident_gelu_name_is_a_site() -> None:
    for edit, expected in NAMED_ROWS:
        code = NAMED if edit is None else NAMED.replace(*edit)
        assert code != NAMED or edit is None
        assert lines(code, "f06-linear-gelu-named") == expected, edit


def _build(source: str) -> types.ModuleType:
    module = types.ModuleType("m")
    exec(compile(source, "m.py", "exec"), module.__dict__)  # the test's own model code
    return module


@pytest.mark.torch
@pytest.mark.parametrize("built", ["gelu", "tanh", "relu"])
def test_the_named_fix_computes_what_the_original_computes(built: str, monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    from equivalence import compare_modules
    fixed = session().fix(NAMED, "m.py", rules=["f06-linear-gelu-named"]).new_source
    assert "x = fused_linear_gelu(x, self.fc1, self.fn)" in fixed
    assert session().fix(fixed, "m.py").new_source == fixed  # nothing fixable is left
    layer = {"gelu": lambda: torch.nn.GELU(), "tanh": lambda: torch.nn.GELU(approximate="tanh"),
             "relu": lambda: torch.nn.ReLU()}[built]
    monkeypatch.setitem(sys.modules, "acts_for_test", types.ModuleType("acts_for_test"))
    sys.modules["acts_for_test"].get_act_layer = lambda name: layer()  # type: ignore[attr-defined]
    torch.manual_seed(0)
    original = _build(NAMED).MLPBlock(8, 16).double()
    rewritten = _build(fixed).MLPBlock(8, 16).double()
    # in the mode it was built in; gradients as strict as outputs, the same parameters on both sides
    compare_modules(original, rewritten, lambda: (torch.randn(3, 5, 8, dtype=torch.float64),), modes=(True,),
                    atol=1e-9, rtol=1e-6, grad_atol=1e-9, same_parameters=True)


# -- family 14: projections handed in ------------------------------------------------------------------


PASSED_ROWS: list[tuple[str, tuple[str, str] | None, list[int]]] = [
    (TORCHTUNE, None, [16]),
    (TORCHTITAN, None, [13]),
    (TORCHTUNE, ("self.w3 = up_proj", "self.w3 = nn.Linear(8, 8)"), [16]),  # one handed in, one a Linear
    (TORCHTUNE, ("activation: nn.Module = nn.SiLU()", "activation: nn.Module = nn.GELU()"), [16]),
    (TORCHTUNE, ("activation: nn.Module = nn.SiLU()", "activation: nn.Module"), []),  # unknown activation
    (TORCHTUNE, ("activation: nn.Module = nn.SiLU()", "activation: nn.Module = nn.ReLU()"), []),
    (TORCHTUNE, ("self.w3 = up_proj", "self.w3 = nn.Conv1d(8, 8, 1)"), []),  # another torch layer
    (TORCHTUNE, ("self.w3 = up_proj", "self.w3 = Attention(8)"), []),  # a class not known to project
    (TORCHTUNE, ("self.w3 = up_proj", "self.w3 = gate_proj"), []),  # two attributes, one module handed in
    (TORCHTUNE, ("h = h * self.w3(x)", "h = h * self.w1(x)"), []),  # one submodule on both sides
    (TORCHTITAN, ("config.w1.build()", "settings.w1.build()"), []),  # not built from a parameter
    (TORCHTITAN, ("self.w1 = config.w1.build()", "self.w1 = nn.Linear(8, 8)"), [13]),
    (TORCHTITAN, ("config.w3.build()", "nn.Linear(8, 8)"), [13]),
]


def test_a_gated_mlp_on_projections_handed_in_is_a_site_without_a_fix() -> None:
    for code, edit, expected in PASSED_ROWS:
        edited = code if edit is None else code.replace(*edit)
        assert edit is None or edited != code
        assert lines(edited, "f14-gated-passed-in") == expected, edit
        for f in session().analysed(edited, "m.py").findings:
            if f.rule_id == "f14-gated-passed-in":
                assert not f.fixable
                assert "Reported without a fix" in f.message


def test_two_linears_stay_f14_swiglu_s() -> None:
    both = TORCHTITAN.replace("config.w1.build()", "nn.Linear(8, 16)").replace("config.w3.build()", "nn.Linear(8, 16)")
    rules = {f.rule_id for f in session().analysed(both, "m.py").findings if f.family == 14}
    assert rules == {"f14-swiglu"}
    assert lines(TORCHTITAN, "f14-gated-passed-in") == [13]


def test_the_match_memo_rematches_when_a_parameter_goes() -> None:
    # Only `__init__`'s signature changes: the bindings read the same, but `gate_proj` is no longer passed in.
    rules = tuple(load_rules().rules)
    doc = DocumentAnalysis(TORCHTUNE, "m.py")
    memo = MatchMemo()

    def found(text: str) -> list[str]:
        doc.update(text)
        unit = ModuleFile("m.py", (doc.result().architectures[0],))
        with_memo = check(unit, rules, CUDA, memo)
        assert with_memo == check(unit, rules, CUDA)
        return [f.rule_id for f in with_memo.findings]

    assert "f14-gated-passed-in" in found(TORCHTUNE)
    edited = TORCHTUNE.replace("*, gate_proj: nn.Module,", "*, gate: nn.Module,")
    assert "f14-gated-passed-in" not in found(edited)
