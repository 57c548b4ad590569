"""Typical mistakes give `DslError`s with the right position, a readable message and a caret."""

from __future__ import annotations

import pytest

from adopter.dsl import DslError, parse_architecture, parse_rules

HEAD = 'rule r {\n  family 1\n  title "t"\n  message "m"\n'

CASES = [
    # (text, 1-based line, 1-based column, message fragment)
    ("rule r family 1", 1, 8, "a rule needs `{` after its id"),
    ("rule r {\n  famly 1\n}", 2, 3, "unknown rule field"),
    (HEAD + "  forward {\n    $o = f($x $y)\n  }\n}", 6, 15, "arguments are separated by commas"),
    (HEAD + "  forward {\n    $o =\n  }\n}", 7, 3, "a pattern step is"),
    (HEAD + "  forward {\n    $o = f($1)\n  }\n}", 6, 12, "a pattern variable is `$` followed by a name"),
    (HEAD + "  forward { $o = f($x) }\n  where { foo($o) }\n}", 6, 11, "unknown guard 'foo'"),
    (HEAD + "  forward { $o = f($x) }\n  where { equals($o) }\n}", 6, 11, "takes 2 argument(s), got 1"),
    (HEAD + "  forward { $o = f($x) }\n  where { single_use($q) }\n}", 6, 11, "uses $q, which no pattern binds"),
    (HEAD + "  forward {\n    $o = $m($x)\n  }\n}", 6, 5, "module variable $m is called in `forward` but bound"),
    (HEAD.replace("family 1", "family 100") + "  forward { $o = f($x) }\n}", 2, 10, "family 100 is out of range"),
    (HEAD.replace("family 1", "family 1.5") + "  forward { $o = f($x) }\n}", 2, 10, "a family is a whole number"),
    (HEAD + "  scope function\n  init { $m = A(...) }\n  forward { $o = f($x) }\n}", 6, 3, "cannot have `init` patterns"),
    (HEAD + "  forward { $o = f($x) }\n}\n" + HEAD + "  forward { $o = f($x) }\n}", 7, 6, "duplicate rule id 'r'"),
    (HEAD + "  forward { $o = f($x) }\n  example match ```x``` => ```y```\n}", 6, 3, "has no `rewrite`"),
    (HEAD + "  forward { $o = f($x) }\n  example match ```x``` for cuda\n}", 6, 3, "target 'cuda', which the rule"),
    (HEAD + "  forward { $o = f($x) }\n  rewrite template {\n    forward ```\n    y = $y\n    ```\n  }\n}", 8, 9,
     "template placeholder $y is not a pattern variable"),
    (HEAD + "  forward { ? $o = f($x) }\n}", 5, 3, "at least one step that is not optional"),
    (HEAD + "  forward {\n    ? $o = f(1)\n    $p = g($o)\n  }\n}", 6, 5, "an optional step (`?`) needs one output"),
    (HEAD + '  target t {\n    kernel "k"\n    torch "2.1+"\n  }\n  forward { $o = f($x) }\n}', 5, 3,
     "is not a version specifier"),
    (HEAD + '  title "unterminated\n}', 5, 9, "unterminated string"),
    (HEAD + "  docs ```\n  never closed\n}", 5, 8, "unterminated code block"),
    (HEAD + "  docs ```python\n  x\n  y```\n}", 7, 1, "a closing ``` must stand on its own line"),
    (HEAD + "  forward { $o = f($x) }\n", 6, 1, "a `}` is missing"),
    (HEAD + "  forward { $o = f($x) }\n  forward { $o = f($x) }\n}", 6, 3, "`forward` appears twice"),
]


@pytest.mark.parametrize(("text", "line", "col", "message"), CASES)
def test_rule_errors(text: str, line: int, col: int, message: str) -> None:
    with pytest.raises(DslError) as info:
        parse_rules(text, "rules/bad.adl")
    problem = info.value.problem
    assert message in problem.message
    assert problem.path == "rules/bad.adl"
    assert problem.span is not None
    assert (problem.span.start_line + 1, problem.span.start_col + 1) == (line, col)


def test_error_renders_the_line_with_a_caret() -> None:
    text = HEAD + "  forward { $o = f($x) }\n  where { foo($o) }\n}"
    with pytest.raises(DslError) as info:
        parse_rules(text, "rules/bad.adl")
    assert str(info.value) == (
        "rules/bad.adl:6:11: error: dsl-syntax: unknown guard 'foo'; known guards: "
        + ", ".join(kind.value for kind in __import__("adopter.dsl.types").dsl.types.GuardKind)
        + "\n      where { foo($o) }\n              ^^^"
    )


def test_every_semantic_problem_is_reported() -> None:
    text = HEAD + "  forward { $o = $m($x) }\n  where { single_use($q); not_used_after($z) }\n}"
    with pytest.raises(DslError) as info:
        parse_rules(text)
    messages = [problem.message for problem in info.value.problems]
    assert len(messages) == 3
    assert "$m" in messages[0] and "$q" in messages[1] and "$z" in messages[2]


@pytest.mark.parametrize(
    ("text", "line", "col", "message"),
    [
        ("model M() {\n}", 1, 11, "a span like `@12:5-12:30` is missing"),
        ("model M() @1:1-2:1 {\n  forward() @1:1-2:1 {\n    a = f(x) @1:1-1:2\n  }\n}", 3, 9, "an op is"),
        ("model M() @1:1-2:1 {\n  forward() @1:1-2:1 {\n    return a\n  }\n}", 4, 3, "a span like"),
        ("model M() @0:1-2:1 {}", 1, 11, "count from 1"),
        ("model M() @1:1-2:1 {\n  init() @1:1-2:1 {\n    a = C{x: A(), B()} @1:1-1:2\n  }\n}", 3, 10, "every item"),
        ("model M() @1:1-2:1 {\n  forward(**k, a) @1:1-2:1 {}\n}", 2, 16, "no parameter may follow **kwargs"),
    ],
)
def test_architecture_errors(text: str, line: int, col: int, message: str) -> None:
    with pytest.raises(DslError) as info:
        parse_architecture(text)
    problem = info.value.problem
    assert message in problem.message
    assert problem.span is not None
    assert (problem.span.start_line + 1, problem.span.start_col + 1) == (line, col)


@pytest.mark.parametrize("junk", ["", "\x00\x01", "}}}", "model", "rule", "`", "```", "$", "@1:1-1:1", "é" * 50])
def test_junk_never_crashes(junk: str) -> None:
    try:
        parse_rules(junk)
    except DslError as exc:
        assert exc.problem.message
        assert str(exc)


def test_non_text_input_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        parse_rules(b"rule r {}")  # type: ignore[arg-type]


def test_every_bad_example_fails_and_names_its_own_mistake() -> None:
    from adopter.dsl.errors import BAD_EXAMPLES

    for label, examples in BAD_EXAMPLES.items():
        for example in examples:
            with pytest.raises(DslError) as info:
                parse_rules(example) if example.startswith("rule") else parse_architecture(example)
            assert info.value.problem.message.startswith(label), example


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    depth = 5000
    text = "model M() @1:1-1:2 { forward() @1:1-1:2 { " + "if a { " * depth + "} @1:1-1:2 " * depth + "} }"
    with pytest.raises(DslError, match="nested too deeply"):
        parse_architecture(text)


def test_byte_order_mark_is_ignored() -> None:
    (rule,) = parse_rules("\ufeff" + HEAD + "  forward { $o = f($x) }\n}")
    assert rule.id == "r"
