"""Table-driven tests of the rule language: each snippet parses to the expected values and prints back."""

from __future__ import annotations

import pytest

from adopter.dsl import format_rule, parse_rules
from adopter.dsl.types import (
    BindingPattern,
    CtorPattern,
    Example,
    Expr,
    Guard,
    GuardKind,
    OpKind,
    OpPattern,
    PAny,
    PKwarg,
    PVar,
    Replacement,
    Severity,
    Span,
    Target,
)

from .strategies import strip_positions

HEADER = 'rule r {\n  family 4\n  title "t"\n  message "m"\n'


def one_rule(body: str, forward: str = "$o = f($x)") -> str:
    return f"{HEADER}{body}\n  forward {{\n    {forward}\n  }}\n}}\n"


def parse_step(step: str) -> OpPattern:
    (rule,) = parse_rules(one_rule("", step))
    (parsed,) = rule.forward
    return parsed


F, M, ME, OP, C = OpKind.FUNCTION, OpKind.MODULE, OpKind.METHOD, OpKind.OPERATOR, OpKind.CALL
x, y, o = PVar("x"), PVar("y"), PVar("o")

STEPS = [
    # (source, targets, args, kwargs, outputs, optional, extra_args)
    ("$o = torch.nn.functional.softmax($x, dim=-1)", ((F, "torch.nn.functional.softmax"),), (x,),
     (PKwarg("dim", Expr("-1")),), (o,), False, False),
    ("$o = $m($x)", ((M, "$m"),), (x,), (), (o,), False, False),
    ("$o = $x.transpose(-1, -2)", ((ME, "transpose"),), (x, Expr("-1"), Expr("-2")), (), (o,), False, False),
    ("$o = $x + $y", ((OP, "+"),), (x, y), (), (o,), False, False),
    ("$o = $x ** 2", ((OP, "**"),), (x, Expr("2")), (), (o,), False, False),
    ("$o = $x | $y", ((OP, "|"),), (x, y), (), (o,), False, False),
    ("$o = (torch.matmul | @ | .matmul)($x, $y)", ((F, "torch.matmul"), (OP, "@"), (ME, "matmul")), (x, y), (),
     (o,), False, False),
    ("? $o = $m($x)", ((M, "$m"),), (x,), (), (o,), True, False),
    ("$o = f($x, ...)", ((F, "f"),), (x,), (), (o,), False, True),
    ("$o = f(..., $x, k=_)", ((F, "f"),), (x,), (PKwarg("k", PAny()),), (o,), False, True),
    ("_ = f(None, 'a', `a b`, config.hidden_size)", ((F, "f"),),
     (Expr("None"), Expr("'a'"), Expr("a b"), Expr("config.hidden_size")), (), (PAny(),), False, False),
    ("$o, $y = f($x)", ((F, "f"),), (x,), (), (o, y), False, False),
    ("f($x)", ((F, "f"),), (x,), (), (), False, False),
    ("$o = operator getitem($x, _)", ((OP, "getitem"),), (x, PAny()), (), (o,), False, False),
    ("$o = module self.layer[*]($x)", ((M, "self.layer[*]"),), (x,), (), (o,), False, False),
    ("$o = call `self.fn()`($x)", ((C, "self.fn()"),), (x,), (), (o,), False, False),
    ("$o = (/ | *)($x, $y)", ((OP, "/"), (OP, "*")), (x, y), (), (o,), False, False),
    ("$o = ($m | method view)($x)", ((M, "$m"), (ME, "view")), (x,), (), (o,), False, False),
]


@pytest.mark.parametrize(("source", "targets", "args", "kwargs", "outputs", "optional", "extra"), STEPS)
def test_forward_steps(source: str, targets: object, args: object, kwargs: object, outputs: object,
                       optional: bool, extra: bool) -> None:
    init = "  init {\n    $m = torch.nn.Dropout\n  }\n" if "$m" in source else ""
    # A second, required step: a pattern of optional steps only is rejected.
    (rule,) = parse_rules(one_rule(init, source + "\n    $last = g(_)"))
    step = rule.forward[0]
    assert (step.targets, step.args, step.kwargs, step.outputs) == (targets, args, kwargs, outputs)
    assert (step.optional, step.extra_args) == (optional, extra)


@pytest.mark.parametrize(
    ("source", "printed"),
    [
        ("$o = torch.nn.functional.softmax($x, dim=-1)", "$o = torch.nn.functional.softmax($x, dim=-1)"),
        ("$o=$x.transpose(-1,-2)", "$o = $x.transpose(-1, -2)"),
        ("$o = f(..., $x)", "$o = f($x, ...)"),
        ("$o = operator @($x, $y)", "$o = $x @ $y"),
        ("$o = operator +($x, $y)", "$o = $x + $y"),
        ("$o = function `if`($x)", "$o = function `if`($x)"),
        ("$o = method transpose(_, 1)", "$o = method transpose(_, 1)"),
    ],
)
def test_steps_print_in_their_most_natural_form(source: str, printed: str) -> None:
    (rule,) = parse_rules(one_rule("", source))
    assert f"    {printed}\n" in format_rule(rule)


INIT_CASES = [
    ("$m = torch.nn.Dropout", CtorPattern(("torch.nn.Dropout",))),
    ("$m = torch.nn.Dropout(...)", CtorPattern(("torch.nn.Dropout",))),
    ("$m = torch.nn.Dropout()", CtorPattern(("torch.nn.Dropout",), extra_args=False)),
    ("$m = torch.nn.Linear($i, $o2, bias=True)",
     CtorPattern(("torch.nn.Linear",), (PVar("i"), PVar("o2")), (PKwarg("bias", Expr("True")),), False)),
    ("$m = transformers.activations.ACT2FN[_] | torch.nn.GELU(...)",
     CtorPattern(("transformers.activations.ACT2FN", "torch.nn.GELU"), lookup=PAny())),
    ("$m = (A | B)[$k](1, ...)", CtorPattern(("A", "B"), (Expr("1"),), (), True, PVar("k"))),
]


@pytest.mark.parametrize(("source", "ctor"), INIT_CASES)
def test_init_patterns(source: str, ctor: CtorPattern) -> None:
    (rule,) = parse_rules(one_rule(f"  init {{\n    {source}\n  }}\n", "$o = $m($x)"))
    assert rule.init == (BindingPattern("m", ctor, Span(5, 4, 5, 4 + len(source))),)
    (again,) = parse_rules(format_rule(rule))
    assert strip_positions(again) == strip_positions(rule)


def test_alternatives_with_different_arguments_are_rejected() -> None:
    with pytest.raises(Exception, match="share one argument list"):
        parse_rules(one_rule("  init {\n    $m = A(1) | B(2)\n  }\n", "$o = $m($x)"))


FULL = '''# A complete rule with every section.
rule sdpa.attention-chain {
  family 10
  title "Hand-written attention"
  message "Use \\"SDPA\\"\\nnow"
  severity info
  scope forward
  target portable {
    kernel "torch.nn.functional.scaled_dot_product_attention"
    devices cpu, cuda
    torch ">=2.1"
    preferred
  }
  target liger {
    kernel "liger_kernel.ops"
    devices cuda
    packages liger_kernel, triton
  }
  init {
    $drop = torch.nn.Dropout(...)
  }
  forward {
    $s = (torch.matmul | @ | .matmul)($q, $k);  $p = torch.nn.functional.softmax($s, dim=-1)
    ? $p2 = $drop($p)
    $o = $p2 @ $v
  }
  where {
    single_use($s, $p)
    one_of($q, x, y); equals($o, -1)
  }
  rewrite template {
    forward ```
        $o = torch.nn.functional.scaled_dot_product_attention($q, $k, $v)
    ```
    init $drop ```torch.nn.Identity()```
    import "import torch"
  }
  docs ```
    Some *docs*.

      Indented.
  ```
  example match ```python
    y = f(x)
    ``` => ```python
    y = g(x)
    ``` for liger
  example nomatch ```python
  z = 1
  ```
}
'''


def test_complete_rule() -> None:
    (rule,) = parse_rules(FULL, "rules/x.adl")
    assert rule.id == "sdpa.attention-chain"
    assert (rule.family, rule.title, rule.message) == (10, "Hand-written attention", 'Use "SDPA"\nnow')
    assert (rule.severity, rule.scope, rule.path) == (Severity.INFO, "forward", "rules/x.adl")
    assert rule.targets == (
        Target("portable", "torch.nn.functional.scaled_dot_product_attention", ("cpu", "cuda"), (), ">=2.1", True),
        Target("liger", "liger_kernel.ops", ("cuda",), ("liger_kernel", "triton")),
    )
    assert [step.outputs for step in rule.forward] == [(PVar("s"),), (PVar("p"),), (PVar("p2"),), (PVar("o"),)]
    assert rule.forward[2].optional and not rule.forward[1].optional
    assert rule.guards == (
        Guard(GuardKind.SINGLE_USE, (PVar("s"), PVar("p")), Span(27, 4, 27, 22)),
        Guard(GuardKind.ONE_OF, (PVar("q"), Expr("x"), Expr("y")), Span(28, 4, 28, 20)),
        Guard(GuardKind.EQUALS, (PVar("o"), Expr("-1")), Span(28, 22, 28, 36)),
    )
    assert rule.replacement == Replacement(
        "template",
        "$o = torch.nn.functional.scaled_dot_product_attention($q, $k, $v)",
        (("drop", "torch.nn.Identity()"),),
        ("import torch",),
    )
    assert rule.docs == "Some *docs*.\n\n  Indented."
    assert rule.examples == (
        Example("y = f(x)", True, "y = g(x)", "liger", Span(42, 2, 46, 17)),
        Example("z = 1", False, None, None, Span(47, 2, 49, 5)),
    )
    assert rule.span == Span(1, 0, 50, 1)
    assert rule.forward[0].span == Span(22, 4, 22, 45)
    (again,) = parse_rules(format_rule(rule))
    assert strip_positions(again) == strip_positions(rule)


def test_defaults_and_comments() -> None:
    (rule,) = parse_rules("# c\nrule r { # c\n family 1 title 'a' message 'b' forward { $o = f($x) } } # c\n")
    assert (rule.severity, rule.scope, rule.targets, rule.init, rule.guards) == (Severity.WARNING, "forward", (), (), ())
    assert (rule.replacement, rule.examples, rule.docs) == (None, (), "")


def test_several_rules_in_one_file() -> None:
    text = one_rule("") + one_rule("").replace("rule r", "rule s")
    assert [rule.id for rule in parse_rules(text)] == ["r", "s"]


def test_rewrite_without_body_and_fences_with_backticks() -> None:
    text = one_rule('  rewrite sdpa_module\n  example match ````python\n  s = "```"\n  ````\n')
    (rule,) = parse_rules(text)
    assert rule.replacement == Replacement("sdpa_module")
    assert rule.examples[0].code == 's = "```"'
    assert "````python" in format_rule(rule)


@pytest.mark.parametrize(
    ("field", "message"),
    [
        ("family 1", "`family` appears twice"),
        ("severity fatal", "unknown severity 'fatal'"),
        ("scope module", "unknown scope 'module'"),
        ("target t { devices cpu }", "target t has no `kernel`"),
        ("example nomatch ```x``` => ```y```", "only `example match` can show an expected rewrite"),
        ("where { no_such_guard($o) }", "unknown guard 'no_such_guard'"),
        ('title "\\q"', "bad escape"),
    ],
)
def test_malformed_fields(field: str, message: str) -> None:
    from adopter.dsl import DslError

    with pytest.raises(DslError, match=message):
        parse_rules(HEADER.replace('  title "t"\n', "") + f"  {field}\n  forward {{ $o = f($x) }}\n}}\n")
