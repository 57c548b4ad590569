"""A closure of `forward` handed to a same-file helper that calls it (helper `mech43`; the oracle's miss
routing-transformer 1.6.1 `routing_transformer.py:162`, family 12).

routing-transformer's `ScaleNorm.forward` defines `def norm(t): n = torch.norm(t, ...).clamp(min=self.eps);
return t / n * self.g` and returns `map_first_tuple_or_el(x, norm)`, a module-level helper that calls its `fn`
parameter on `x` (or on its first item). The helper was inlined, but its `fn(x)` was an opaque call: the argument
had become the closure's name. The closure itself is now bound to the parameter, so `fn(x)` inlines the closure's
body with the `self` and locals of `forward`, which defined it: the ScaleNorm is `f12-rmsnorm-unit` (detection
only). A GELU formula in such a closure is `f13-gelu-tanh-pow` and fixable in place (the closure's `return`):
exec'd next to the original and compared through `adopter.verify.compare.compare` (outputs, input and parameter
gradients; float32, rtol 1e-4 / atol 1e-5 on outputs, 1e-4 on gradients), eval and train, two seeds, CPU, state
dicts loaded both ways with `strict=True`.
Near forms that stay silent: the closure handed to a helper that never calls it, handed to a function of
another module (nothing says what it does with it), and the same norm without the factor.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attention_harness import fixed, load, rules_of  # noqa: E402

from adopter.analysis import analyse  # noqa: E402
from adopter.engine import Environment, check, load_rules  # noqa: E402
from adopter.engine.types import Finding  # noqa: E402
from adopter.verify.compare import compare  # noqa: E402

CPU = Environment(device="cpu", packages=frozenset(), torch_version="2.13.0")

HEADER = '''import math

import torch
from torch import nn


def map_first_tuple_or_el(x, fn):
    if isinstance(x, tuple):
        return (fn(x[0]),) + x[1:]
    return fn(x)


def keep(x, fn):
    return x


'''

SCALE_NORM = HEADER + '''class ScaleNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.g = nn.Parameter(torch.ones(1))
        self.eps = eps

    def forward(self, x):
        def norm(t):
            n = torch.norm(t, dim=-1, keepdim=True).clamp(min=self.eps)
            return t / n * self.g
        return map_first_tuple_or_el(x, norm)
'''

GELU = HEADER + '''class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        def act(t):
            return 0.5 * t * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (t + 0.044715 * torch.pow(t, 3.0))))
        return map_first_tuple_or_el(self.fc(x), act)
'''


def _found(source: str, family: int) -> list[Finding]:
    rules = [r for r in load_rules().rules if r.family == family]
    return list(check(analyse(source, "case.py"), rules, CPU).findings)


def _lines(f: Finding) -> set[int]:
    """The 1-based lines of the finding's statements."""
    return {line + 1 for s in f.stmt_spans for line in range(s.start_line, s.end_line + 1)}


def test_the_scale_norm_handed_to_a_helper_is_one_site_on_the_closure() -> None:
    found = _found(SCALE_NORM, 12)
    assert [(f.rule_id, f.scope_name) for f in found] == [("f12-rmsnorm-unit", "ScaleNorm")]
    assert {25, 26} <= _lines(found[0])  # the closure's two statements (`n = ...`, `return t / n * self.g`)
    assert found[0].fixable is False


def test_near_forms_stay_silent() -> None:
    never_called = SCALE_NORM.replace("return map_first_tuple_or_el(x, norm)", "return keep(x, norm)")
    elsewhere = SCALE_NORM.replace("return map_first_tuple_or_el(x, norm)",
                                   "return torch.utils.checkpoint.checkpoint_sequential(norm, 1, x)")
    no_factor = SCALE_NORM.replace("return t / n * self.g", "return t / n")
    for source in (never_called, elsewhere, no_factor):
        assert _found(source, 12) == [], source
    assert [f.rule_id for f in _found(SCALE_NORM, 12)] == ["f12-rmsnorm-unit"]  # the positive twin


def test_a_gelu_formula_in_a_handed_closure_is_fixed_in_place_and_equivalent() -> None:
    found = _found(GELU, 13)
    assert [(f.rule_id, f.fixable) for f in found] == [("f13-gelu-tanh-pow", True)]
    new = fixed(GELU, rules_of("f13-gelu"), 1)
    assert 'return nn.functional.gelu(t, approximate="tanh")' in new
    original, rewritten = load(GELU, "closure_orig")["Block"](8), load(new, "closure_new")["Block"](8)
    rewritten.load_state_dict(original.state_dict(), strict=True)
    original.load_state_dict(rewritten.state_dict(), strict=True)
    for train in (False, True):
        original.train(train)
        rewritten.train(train)
        for seed in (0, 1):
            result = compare(original, rewritten, ((torch.randn(3, 5, 8),), {}), seed=seed, dtype=torch.float32)
            assert result.equivalent, (train, seed, result)
