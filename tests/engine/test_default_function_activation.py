"""Family 6: an activation function held from a constructor parameter whose default is that function (helper
`mech43`; the oracle's miss torchmultimodal `modules/losses/flava.py:176`).

torchmultimodal's `MaskedPredictionHead(..., transform_act_fn: Callable[[Tensor], Tensor] = nn.functional.gelu)`
binds `self.transform_act_fn = transform_act_fn` and runs `self.dense` then `self.transform_act_fn`. A layer
class default (`act_layer=nn.GELU`, `self.act = act_layer()`) was read as the class the default names; a
function default was left as the parameter's name. It is now the function the default names, so the pair is
`f06-linear-gelu`, fixable on CUDA as `self.act = F.gelu` is: `fused_linear_gelu` checks the activation at run
time, so a caller passing another function runs the original code. The fix is exec'd next to the original and
compared on CPU (float64, rtol 1e-6 / atol 1e-9 on outputs and on input and parameter gradients) with the
default, a tanh GELU and a ReLU passed in; state dicts load both ways with `strict=True`. Near forms that stay
silent: a default that is not a GELU, a required parameter, a parameter rebound in `__init__` first.
"""

from __future__ import annotations

import functools
import types

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, check, find, load_rules
from adopter.session import rewrite
from adopter.synth import Rewritten

CPU = Environment(device="cpu", packages=frozenset(), torch_version="2.13.0")
CUDA = Environment(device="cuda", packages=frozenset(), torch_version="2.13.0")

HEAD = '''from typing import Callable

import torch
from torch import Tensor, nn


class MaskedPredictionHead(nn.Module):
    def __init__(self, hidden_size: int = 8, transform_act_fn: Callable[[Tensor], Tensor] = nn.functional.gelu):
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.transform_act_fn = transform_act_fn
        self.layer_norm = nn.LayerNorm(hidden_size)

    def forward(self, hidden_states: Tensor) -> Tensor:
        hidden_states = self.dense(hidden_states)
        hidden_states = self.transform_act_fn(hidden_states)
        return self.layer_norm(hidden_states)
'''


def _build(source: str) -> types.ModuleType:
    module = types.ModuleType("m")
    exec(compile(source, "m.py", "exec"), module.__dict__)  # the test's own model code
    return module


def _f06(source: str, env: Environment = CPU) -> list[tuple[int, bool]]:
    rules = [r for r in load_rules().rules if r.family == 6]
    return [(f.span.start_line + 1, f.fixable) for f in check(analyse(source, "case.py"), rules, env).findings]


def test_a_function_default_is_the_activation_held() -> None:
    assert _f06(HEAD) == [(15, False)]  # CPU: the rule's target is CUDA
    assert _f06(HEAD, CUDA) == [(15, True)]


@pytest.mark.parametrize("edit", [
    ("= nn.functional.gelu)", "= nn.functional.relu)"),  # a default that is no GELU
    (", transform_act_fn: Callable[[Tensor], Tensor] = nn.functional.gelu)", ", transform_act_fn=None)"),
    ("        self.transform_act_fn = transform_act_fn\n",
     "        transform_act_fn = torch.tanh\n        self.transform_act_fn = transform_act_fn\n"),  # rebound first
])
def test_near_forms_stay_silent(edit: tuple[str, str]) -> None:
    assert _f06(HEAD) == [(15, False)]  # the positive form beside them
    near = HEAD.replace(*edit)
    assert near != HEAD
    assert _f06(near) == []


@pytest.mark.torch
@pytest.mark.parametrize("passed", ["default", "tanh", "relu"])
def test_the_fix_computes_what_the_original_computes(passed: str) -> None:
    torch = pytest.importorskip("torch")
    from equivalence import compare_modules
    rules = [r for r in load_rules().rules if r.id == "f06-linear-gelu"]
    result = rewrite(HEAD, find(analyse(HEAD, "case.py"), rules, CUDA), rules=rules, env=CUDA, path="case.py")
    assert isinstance(result, Rewritten) and len(result.applied) == 1
    assert "fused_linear_gelu(hidden_states, self.dense, self.transform_act_fn)" in result.new_source
    act = {"default": None, "tanh": functools.partial(torch.nn.functional.gelu, approximate="tanh"),
           "relu": torch.nn.functional.relu}[passed]
    kwargs = {} if act is None else {"transform_act_fn": act}
    torch.manual_seed(0)
    original = _build(HEAD).MaskedPredictionHead(**kwargs).double()
    rewritten = _build(result.new_source).MaskedPredictionHead(**kwargs).double()
    # in the mode it was built in; gradients as strict as outputs, the same parameters on both sides
    compare_modules(original, rewritten, lambda: (torch.randn(3, 5, 8, dtype=torch.float64),), modes=(True,),
                    atol=1e-9, rtol=1e-6, grad_atol=1e-9, same_parameters=True, round_trip=True)
