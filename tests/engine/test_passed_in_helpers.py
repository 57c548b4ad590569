"""A same-file helper's container passed to a wrapper class that calls it (`PreNormResidual(dim,
FeedForward(dim))`, `self.fn = fn`, `return self.fn(self.norm(x), **kwargs) + x`: hourglass-transformer-pytorch
0.0.6, lucidrains' `PreNorm`/`Residual` wrappers): the helper's chain keeps its site in the helper and lists
the wrapper's call among its statements, where the layers run (`engine.passed_in`), through `check` and
through the language server's unit matching alike."""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules
from adopter.session import RuleContext, UnitMatcher

CODE = '''from torch import nn


class PreNormResidual(nn.Module):
    def __init__(self, dim, fn):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fn = fn

    def forward(self, x, **kwargs):
        return self.fn(self.norm(x), **kwargs) + x


def FeedForward(dim, mult = 4, dropout = 0.):
    return nn.Sequential(
        nn.Linear(dim, dim * mult),
        nn.GELU(),
        nn.Dropout(dropout),
        nn.Linear(dim * mult, dim)
    )


class Transformer(nn.Module):
    def __init__(self, dim, *, depth, ff_mult = 4, ff_dropout = 0.):
        super().__init__()
        self.layers = nn.ModuleList([])
        for _ in range(depth):
            self.layers.append(nn.ModuleList([
                PreNormResidual(dim, nn.Identity()),
                PreNormResidual(dim, FeedForward(dim, mult = ff_mult, dropout = ff_dropout))
            ]))

    def forward(self, x):
        for attn, ff in self.layers:
            x = attn(x)
            x = ff(x)
        return x
'''

ENV = Environment("cpu", frozenset(), "2.13.0")


def line(code: str, needle: str) -> int:
    return next(i for i, text in enumerate(code.splitlines()) if needle in text)


def statements(code: str) -> list[tuple[str, list[int]]]:
    found = check(analyse(code, "m.py"), load_rules().rules, ENV).findings
    return [(f.scope_name, sorted({s.start_line for s in f.stmt_spans})) for f in found if f.family == 6]


def test_the_wrapper_call_is_a_statement_of_the_helpers_site() -> None:
    call = line(CODE, "return self.fn(self.norm(x), **kwargs) + x")
    assert statements(CODE) == [("FeedForward", sorted([call, line(CODE, "nn.Linear(dim, dim * mult)"),
                                                        line(CODE, "nn.GELU()")]))]


def test_the_language_server_reports_the_same_statements() -> None:
    rules = load_rules().rules
    mf = analyse(CODE, "m.py")
    found, _ = UnitMatcher().match(mf, RuleContext(tuple(rules), environment=ENV))
    again, _ = UnitMatcher().match(mf, RuleContext(tuple(rules), environment=ENV))
    expected = [f for f in check(mf, rules, ENV).findings]
    assert [(f.scope_name, f.stmt_spans) for f in found] == [(f.scope_name, f.stmt_spans) for f in expected]
    assert [(f.scope_name, f.stmt_spans) for f in again] == [(f.scope_name, f.stmt_spans) for f in expected]
    call = line(CODE, "return self.fn(self.norm(x), **kwargs) + x")
    assert any(s.start_line == call for f in found for s in f.stmt_spans)


@pytest.mark.parametrize("old, new", [
    ("        self.fn = fn\n", "        self.fn = nn.Identity()\n"),  # the wrapper does not keep what it is given
    ("        self.fn = fn\n", "        self.fn = fn if dim > 8 else nn.Identity()\n"),  # not on every path
    ("return self.fn(self.norm(x), **kwargs) + x", "return self.norm(x) + x"),  # never called
    ("PreNormResidual(dim, FeedForward(dim, mult = ff_mult, dropout = ff_dropout))",  # another helper's
     "PreNormResidual(dim, nn.Identity())"),
])
def test_without_the_wrapper_call_the_site_stays_in_the_helper(old: str, new: str) -> None:
    code = CODE.replace(old, new)
    assert code != CODE
    assert statements(code) == [("FeedForward", sorted([line(code, "nn.Linear(dim, dim * mult)"),
                                                        line(code, "nn.GELU()")]))]


def test_passed_by_keyword() -> None:
    code = CODE.replace("PreNormResidual(dim, FeedForward(", "PreNormResidual(dim, fn = FeedForward(")
    call = line(code, "return self.fn(self.norm(x), **kwargs) + x")
    assert call in statements(code)[0][1]
