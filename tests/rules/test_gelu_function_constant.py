"""Family 13 with the GELU constant memoised on the function object (`analysis/names/function_constants.py`).

fairseq's `gelu_accurate` form (copied by s3prl, funasr, espnet, coqui TTS; census in docs/notes/wfam13.md):
the function computes sqrt(2/pi) once and keeps it as `gelu_accurate._a`. The sources below are written for
these tests in that form, not copied. The fix is compared with the original (torch, CPU, seed 0, strict
state-dict loading both ways, eval and train): outputs, input and parameter gradients in float32, atol 1e-5 /
rtol 1e-4 (`compare_modules`'s default; F.gelu's tanh kernel and the written-out formula differ by float32 ulps).
The look-alikes must stay silent: an attribute bound twice, updated in place, bound outside the function, bound to
something that is not a number, or to a number that is not sqrt(2/pi).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attention_harness import findings_of, fixed, load, rules_of  # noqa: E402

from equivalence import compare_modules  # noqa: E402

pytestmark = pytest.mark.torch

GELU_RULES = rules_of("f13-gelu")

MEMOISED = '''
import math

import torch
from torch import nn


def gelu_accurate(x):
    if not hasattr(gelu_accurate, "_a"):
        gelu_accurate._a = math.sqrt(2 / math.pi)
    return 0.5 * x * (1 + torch.tanh(gelu_accurate._a * (x + 0.044715 * torch.pow(x, 3))))


class FeedForward(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(gelu_accurate(self.fc1(x)))
'''


def test_a_constant_memoised_on_the_function_is_read_found_fixed_and_equivalent() -> None:
    found = [(f.rule_id, f.span.start_line + 1) for f in findings_of(MEMOISED, GELU_RULES)]
    assert found == [("f13-gelu-tanh-pow", 11)]
    new = fixed(MEMOISED, GELU_RULES, applied=1)
    assert 'return nn.functional.gelu(x, approximate="tanh")' in new
    old_ns, new_ns = load(MEMOISED, "memoised_old"), load(new, "memoised_new")
    torch.manual_seed(0)
    original = old_ns["FeedForward"](16, 64)
    rewritten = new_ns["FeedForward"](16, 64)
    compare_modules(original, rewritten, lambda: (torch.randn(3, 5, 16) * 3,), round_trip=True)


def _variant(old: str, new: str) -> str:
    assert old in MEMOISED
    return MEMOISED.replace(old, new)


@pytest.mark.parametrize("source", [
    # bound twice: at module level too, to another number
    _variant("class FeedForward", "gelu_accurate._a = 0.8\n\n\nclass FeedForward"),
    # updated in place after the binding
    _variant("    return 0.5 * x", "    gelu_accurate._a += 0.0\n    return 0.5 * x"),
    # bound outside the function only (module level): not the evident memo
    _variant('    if not hasattr(gelu_accurate, "_a"):\n        gelu_accurate._a = math.sqrt(2 / math.pi)\n', "")
    .replace("class FeedForward", "gelu_accurate._a = math.sqrt(2 / math.pi)\n\n\nclass FeedForward"),
    # bound to a value computed from the argument, not a constant
    _variant("gelu_accurate._a = math.sqrt(2 / math.pi)", "gelu_accurate._a = x.abs().mean()"),
    # a number that is not sqrt(2 / pi)
    _variant("gelu_accurate._a = math.sqrt(2 / math.pi)", "gelu_accurate._a = math.sqrt(2)"),
    # set through setattr as well
    _variant("    return 0.5 * x", '    setattr(gelu_accurate, "_a", 0.8)\n    return 0.5 * x'),
])
def test_look_alikes_of_the_memoised_constant_stay_silent(source: str) -> None:
    assert findings_of(source, GELU_RULES) == ()


# The same function defined as a closure of an activation factory (fairseq's `get_activation_fn`), chosen by
# the constructor's default.
CLOSURE = '''
import math

import torch
from torch import nn


def get_activation_fn(activation):
    def gelu_accurate(x):
        if not hasattr(gelu_accurate, "_a"):
            gelu_accurate._a = math.sqrt(2 / math.pi)
        return 0.5 * x * (1 + torch.tanh(gelu_accurate._a * (x + 0.044715 * torch.pow(x, 3))))

    if activation == "relu":
        return torch.relu
    elif activation == "gelu_accurate":
        return gelu_accurate
    raise RuntimeError(activation)


class FeedForward(nn.Module):
    def __init__(self, dim, hidden, activation="gelu_accurate"):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)
        self.activation_fn = get_activation_fn(activation)

    def forward(self, x):
        return self.fc2(self.activation_fn(self.fc1(x)))
'''


def test_the_memoised_constant_of_a_closure_is_read_fixed_and_equivalent() -> None:
    found = [(f.rule_id, f.span.start_line + 1) for f in findings_of(CLOSURE, GELU_RULES)]
    assert found == [("f13-gelu-tanh-pow", 12)]
    new = fixed(CLOSURE, GELU_RULES, applied=1)
    old_ns, new_ns = load(CLOSURE, "closure_old"), load(new, "closure_new")
    torch.manual_seed(0)
    original = old_ns["FeedForward"](16, 64)
    rewritten = new_ns["FeedForward"](16, 64)
    compare_modules(original, rewritten, lambda: (torch.randn(3, 5, 16) * 3,), round_trip=True)
