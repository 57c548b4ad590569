"""The template strategy and the registry contract, on hand-built findings (no analysis needed)."""

from __future__ import annotations

import dataclasses

import pytest

from adopter.dsl.types import Expr, Op, OpKind, Ref, Replacement, Rule, Severity, Span, Target
from adopter.engine import load_rules
from adopter.engine.types import Finding, Match
from adopter.synth.apply import apply_edits
from adopter.synth.registry import STRATEGIES, SynthContext, strategy
from adopter.synth.rewrite import plan
from adopter.synth.strategies import load_all

SOURCE = """import torch
from torch import nn


class M(nn.Module):
    def forward(self, x, F=None):
        a = torch.relu(x)
        # unrelated, kept
        y = x * 3
        b = torch.relu(a)
        return b + y
"""


def _op(target: str, args: tuple[str, ...], out: str, line: int, a: int, b: int) -> Op:
    stmt = Span(line, 8, line, len(SOURCE.split("\n")[line]))
    return Op(OpKind.FUNCTION, target, tuple(Ref(x) for x in args), (), (out,), Span(line, a, line, b), stmt)


OPS = (_op("torch.relu", ("x",), "a", 6, 12, 25), _op("torch.relu", ("a",), "b", 9, 12, 25))


def _rule(forward: str, imports: tuple[str, ...] = ()) -> Rule:
    return Rule("t-relu", 13, "t", "m", Severity.WARNING, (Target("portable", "k"),), (), (), (),
                Replacement("template", forward, (), imports), ())


def _finding(ops: tuple[Op, ...] = OPS, env: tuple = (("x", Ref("x")), ("a", Ref("a")), ("b", Ref("b")))) -> Finding:
    spans = tuple(o.stmt_span for o in ops)
    return Finding("t-relu", 13, Severity.WARNING, "t", "m", None, "M", Span(6, 8, 9, 25), spans, (),
                   Match(ops, (), env), ("portable",), True)


def test_statements_replaced_unrelated_lines_kept() -> None:
    edits = plan(SOURCE, _finding(), _rule("$b = torch.relu($x)"), None)
    assert not isinstance(edits, str), edits
    new = apply_edits(SOURCE, [edits])
    assert new == SOURCE.replace("        a = torch.relu(x)\n        # unrelated, kept\n        y = x * 3\n"
                                 "        b = torch.relu(a)\n",
                                 "        # unrelated, kept\n        y = x * 3\n        b = torch.relu(x)\n")


def test_imports_are_added_once_and_renamed_on_collision() -> None:
    # `F` is a parameter name in the file: the import gets a fresh alias and the template follows it.
    edits = plan(SOURCE, _finding(), _rule("$b = F.relu($x)", ("torch.nn.functional as F",)), None)
    assert not isinstance(edits, str), edits
    new = apply_edits(SOURCE, [edits])
    assert "import torch.nn.functional as F_1\n" in new and "b = F_1.relu(x)" in new


def test_single_statement_match_replaces_only_the_expression() -> None:
    src = SOURCE.replace("        b = torch.relu(a)\n", "        b = torch.relu(a) * 2\n")
    op = Op(OpKind.FUNCTION, "torch.relu", (Ref("a"),), (), ("%1",), Span(9, 12, 9, 25), Span(9, 8, 9, 29))
    f = _finding((op,), (("x", Ref("a")), ("p", Ref("%1"))))
    edits = plan(src, f, _rule("$p = torch.sigmoid($x)"), None)
    assert not isinstance(edits, str), edits
    assert "        b = torch.sigmoid(a) * 2\n" in apply_edits(src, [edits])


@pytest.mark.parametrize(("template", "reason"), [
    ("$b = torch.relu($nope)", "did not bind"),
])
def test_declines_with_reason(template: str, reason: str) -> None:
    out = plan(SOURCE, _finding(), _rule(template), None)
    assert isinstance(out, str) and reason in out


def test_unfixable_and_unknown_strategy_are_reasons_not_errors() -> None:
    f = _finding()
    blocked = dataclasses.replace(f, fixable=False, no_fix_reason="straddles")
    assert plan(SOURCE, blocked, _rule("$b = x"), None) == "straddles"
    unknown = Rule("t-relu", 13, "t", "m", Severity.WARNING, (), (), (), (), Replacement("nope"), ())
    assert "unknown rewrite strategy" in str(plan(SOURCE, f, unknown, None))
    assert "not available" in str(plan(SOURCE, f, _rule("$b = x"), "liger"))


def test_strategy_exceptions_become_reasons() -> None:
    @strategy("t-broken-strategy")
    def broken(ctx: SynthContext) -> None:
        raise RuntimeError("boom")

    rule = Rule("t-relu", 13, "t", "m", Severity.WARNING, (), (), (), (), Replacement("t-broken-strategy"), ())
    assert "boom" in str(plan(SOURCE, _finding(), rule, None))
    STRATEGIES.pop("t-broken-strategy")


def test_context_helpers() -> None:
    ctx = SynthContext(SOURCE, _finding(), _rule("$b = x"), "portable")
    assert ctx.env_text("a") == "a" and ctx.statement_text(OPS[0].stmt_span) == "a = torch.relu(x)"
    assert ctx.add_import("torch") == "torch" and ctx.add_import("torch", "nn") == "nn"
    assert ctx.add_import("math") == "math" and ctx.add_import("math") == "math"
    assert ctx.fresh_name("a") == "a_1" and ctx.fresh_name("a") == "a_2"
    assert ctx.add_module_code("def helper(x):\n    return x", name="helper") == "helper"
    assert ctx.add_module_code("def helper(x):\n    return x", name="helper") == "helper_1"
    assert ctx.edits.module_code[1].code.startswith("def helper_1(x)")
    assert [i.module for i in ctx.edits.imports] == ["math"]
    with pytest.raises(KeyError):
        ctx.env_text("zzz")
    ctx2 = SynthContext(SOURCE, _finding(env=(("e", Expr("config.eps")), ("m", "self.q"))), _rule("$b = x"), "p")
    assert ctx2.env_text("e") == "config.eps" and ctx2.env_text("$m") == "self.q"


def test_every_rule_names_a_registered_strategy() -> None:
    load_all()
    missing = {r.id: r.replacement.strategy for r in load_rules().rules
               if r.replacement is not None and r.replacement.strategy not in STRATEGIES}
    assert not missing, missing


def test_intermediate_read_elsewhere_blocks_the_template() -> None:
    # `a` is read after the match: removing its statement would break the code.
    src = SOURCE.replace("        return b + y\n", "        return b + y + a\n")
    out = plan(src, _finding(), _rule("$b = torch.relu($x)"), None)
    assert isinstance(out, str) and "`a`" in out and "also used" in out


def test_import_of_a_module_named_only_in_from_imports_is_not_renamed() -> None:
    source = "from torch import nn\n\n\nclass M(nn.Module):\n    pass\n"
    ctx = SynthContext(source, _finding(), _rule("$b = x"), "portable")
    assert ctx.add_import("torch") == "torch"
    # A local variable called `torch` still forces an alias.
    ctx2 = SynthContext(source + "torch = 1\n", _finding(), _rule("$b = x"), "portable")
    assert ctx2.add_import("torch") != "torch"
