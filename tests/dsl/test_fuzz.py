"""Mangled DSL text never crashes the parser: it parses, or raises a `DslError` that renders."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adopter.dsl import DslError, parse_module_file, parse_rules

from .test_architecture_syntax import BERT_TEXT
from .test_rule_syntax import FULL

edits = st.lists(
    st.tuples(
        st.floats(0, 1),
        st.integers(0, 6),
        st.text(alphabet=st.sampled_from(list("{}()[]`$%@:=,|?.-_\"'#\n x1")), max_size=4),
    ),
    min_size=1,
    max_size=4,
)


def mangle(text: str, changes: list[tuple[float, int, str]]) -> str:
    for where, cut, insert in changes:
        pos = int(where * len(text))
        text = text[:pos] + insert + text[pos + cut :]
    return text


def check(parse: object, text: str) -> None:
    try:
        parse(text)  # type: ignore[operator]
    except DslError as exc:
        rendered = str(exc)
        assert exc.problem.message and rendered
        span = exc.problem.span
        if span is not None:
            assert 0 <= span.start_line <= text.count("\n") + 1


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits)
def test_mangled_rules(changes: list[tuple[float, int, str]]) -> None:
    check(parse_rules, mangle(FULL, changes))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits)
def test_mangled_architectures(changes: list[tuple[float, int, str]]) -> None:
    check(parse_module_file, mangle(BERT_TEXT, changes))
