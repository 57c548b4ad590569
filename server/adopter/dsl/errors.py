"""DSL errors: `DslError` carries positioned `Problem`s and renders the offending line with a caret."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.lexer import PatternStr

from adopter.dsl.grammar import parser
from adopter.dsl.types import Problem, Severity, Span


class DslError(Exception):
    """A DSL text that does not parse or fails a semantic check; `.problem` is the first problem."""

    def __init__(self, problems: Sequence[Problem], text: str | None = None) -> None:
        if not problems:
            raise ValueError("DslError needs at least one problem")
        self.problems: tuple[Problem, ...] = tuple(problems)
        self.problem: Problem = self.problems[0]
        self.text = text
        super().__init__(self.problem.message)

    def __str__(self) -> str:
        return "\n".join(render_problem(problem, self.text) for problem in self.problems)


def render_problem(problem: Problem, text: str | None) -> str:
    """`path:line:col: error: message`, then the source line and a caret under the column."""
    head = problem.render()
    if text is None or problem.span is None:
        return head
    lines = text.split("\n")
    if not 0 <= problem.span.start_line < len(lines):
        return head
    line = lines[problem.span.start_line].replace("\t", " ")
    col = min(problem.span.start_col, len(line))
    width = 1
    if problem.span.end_line == problem.span.start_line:
        width = max(1, min(problem.span.end_col, len(line)) - col)
    return f"{head}\n    {line}\n    {' ' * col}{'^' * width}"


def error_problem(message: str, span: Span | None, path: str | None, code: str = "dsl-syntax") -> Problem:
    """A DSL error as a `Problem`."""
    return Problem(message=message, span=span, path=path, severity=Severity.ERROR, code=code)


# Friendly messages for typical mistakes, matched by parser state as in Lark's `match_examples`:
# each bad example fails in the same state (with the same unexpected token) as the mistake it names.
BAD_EXAMPLES: dict[str, list[str]] = {
    "a rule needs `{` after its id, e.g. `rule my_rule {`": [
        "rule r family 1",
        'rule r title "x"',
    ],
    "unknown rule field; a rule holds family, title, message, severity, scope, target, init, forward, "
    "where, rewrite, docs and example": [
        "rule r { famly 1 }",
        "rule r { family 1 titel }",
        "rule r { x }",
    ],
    "a pattern step is `$out = callee($args)`, `$out = $module($x)`, `$out = $x.method(...)` or "
    "`$out = $a + $b`": [
        "rule r { forward { $o = } }",
        "rule r { forward { $o } }",
        "rule r { forward { $o = $x } }",
    ],
    "arguments are separated by commas": [
        "rule r { forward { $o = f($x $y) } }",
        "rule r { forward { $o = f(dim=-1 $y) } }",
        "model M() @1:1-1:2 { forward() @1:1-1:2 { a = function f(x y) @1:1-1:2 } }",
    ],
    "a guard is written `name($var, ...)`, e.g. `single_use($s)`": [
        "rule r { where { single_use } }",
        "rule r { where { single_use $x } }",
    ],
    "a span like `@12:5-12:30` is missing here": [
        "model M()",
        "model M() {",
        "model M() @1:1-1:2 { init() }",
        "model M() @1:1-1:2 { forward() { } }",
        "model M() @1:1-1:2 { forward() @1:1-1:2 { a = function f(x) } }",
        "model M() @1:1-1:2 { forward() @1:1-1:2 { return a } }",
        "model M() @1:1-1:2 { forward() @1:1-1:2 { if c { } } }",
        "model M() @1:1-1:2 { init() @1:1-1:2 { a = torch.nn.ReLU() } }",
    ],
    "an op is `out = <module|function|method|operator|call> target(args) @span`": [
        "model M() @1:1-1:2 { forward() @1:1-1:2 { a = f(x) @1:1-1:2 } }",
        "model M() @1:1-1:2 { forward() @1:1-1:2 { a = } }",
    ],
    "a rewrite template or example is a ``` code block": [
        "rule r { docs x }",
        "rule r { example match x }",
        "rule r { rewrite template { forward x } }",
        "rule r { rewrite template { init $m x } }",
    ],
    "an example is `example match ```...```` or `example nomatch ```...````": [
        "rule r { example ```x``` }",
        "rule r { example yes ```x``` }",
    ],
}

_TERMINAL_NAMES = {
    "NAME": "a name",
    "RULE_ID": "a rule id",
    "PVAR": "a pattern variable like $x",
    "SPAN": "a span like @12:5-12:30",
    "NUMBER": "a number",
    "STRING": 'a string "..."',
    "QUOTED": "a `quoted` text",
    "QREF": "a quoted value",
    "TEMP": "a temporary like %1",
    "FENCE": "a ``` code block",
    "BINOP": "an operator",
    "$END": "the end of the file",
}


def _describe_expected(expected: set[str]) -> str:
    terminals = {term.name: term for term in parser().terminals}
    words: set[str] = set()
    for name in expected:
        term = terminals.get(name)
        if term is not None and isinstance(term.pattern, PatternStr):
            words.add(f"'{term.pattern.value}'")
        else:
            words.add(_TERMINAL_NAMES.get(name, name))
    return ", ".join(sorted(words))


def syntax_problem(exc: UnexpectedInput, text: str, path: str | None) -> Problem:
    """A positioned, readable problem for a Lark parse error."""

    line = max(getattr(exc, "line", 1) or 1, 1) - 1
    col = max(getattr(exc, "column", 1) or 1, 1) - 1
    span = Span(line, col, line, col + 1)
    if isinstance(exc, UnexpectedCharacters):
        pos = exc.pos_in_stream or 0
        char = text[pos] if pos < len(text) else ""
        if char == "`" and text.startswith("```", pos):
            return error_problem("unterminated code block: no closing ``` of the same length", span, path)
        if char in "\"'":
            return error_problem("unterminated string: strings end on the same line they start", span, path)
        if char == "`":
            return error_problem("unterminated `quoted` text: it must end on the same line", span, path)
        if char == "$":
            return error_problem("a pattern variable is `$` followed by a name, e.g. `$x`", span, path)
        expected = _describe_expected(set(exc.allowed or ()))
        return error_problem(f"unexpected character {char!r}; expected {expected}", span, path)
    label = match_bad_example(exc)
    if isinstance(exc, UnexpectedToken):
        token = exc.token
        expected_names = set(exc.accepts or exc.expected)
        if token.type == "QUOTED" and str(token).startswith("``") and "FENCE" in expected_names:
            return error_problem("unterminated code block: no closing ``` of the same length", span, path)
        if token.type == "$END":
            span = _end_span(text)
            if "RBRACE" in expected_names:
                return error_problem(label or "the file ends inside a block: a `}` is missing", span, path)
            found = "the end of the file"
        else:
            found = repr(str(token))
            span = Span(line, col, line, col + max(1, len(str(token).split("\n")[0])))
        detail = f"found {found}, expected {_describe_expected(expected_names)}"
        return error_problem(f"{label} ({detail})" if label else f"unexpected {found}; expected {_describe_expected(expected_names)}", span, path)
    if isinstance(exc, UnexpectedEOF):
        return error_problem(label or "unexpected end of the file", _end_span(text), path)
    return error_problem(label or str(exc), span, path)


def _state_of(exc: UnexpectedInput) -> object:
    state = exc.state
    return getattr(state, "position", state)


@lru_cache(maxsize=1)
def _bad_example_errors() -> tuple[tuple[str, object, str | None, frozenset[str]], ...]:
    """Each bad example's label, failing parser state, unexpected token type and accepted tokens."""
    found: list[tuple[str, object, str | None, frozenset[str]]] = []
    for label, examples in BAD_EXAMPLES.items():
        for example in examples:
            try:
                parser().parse(example)
            except UnexpectedInput as exc:
                token = getattr(exc, "token", None)
                accepts = frozenset(getattr(exc, "accepts", None) or ())
                found.append((label, _state_of(exc), token.type if token is not None else None, accepts))
    return tuple(found)


def match_bad_example(exc: UnexpectedInput) -> str | None:
    """The label of the bad example failing like `exc` (same parser state; same token type preferred).

    Unlike Lark's `match_examples`, states are compared by LALR state alone, not stack depth, so an
    example written as one short line matches the same mistake deep inside a real file.
    """
    if exc.state is None:
        return None
    state = _state_of(exc)
    token = getattr(exc, "token", None)
    token_type = token.type if token is not None else None
    accepts = frozenset(getattr(exc, "accepts", None) or ())
    fallback: str | None = None
    for label, example_state, example_token, example_accepts in _bad_example_errors():
        if example_state != state or (accepts and example_accepts and accepts != example_accepts):
            continue
        if example_token == token_type:
            return label
        fallback = fallback or label
    return fallback


def _end_span(text: str) -> Span:
    lines = text.split("\n")
    last = len(lines) - 1
    return Span(last, len(lines[last]), last, len(lines[last]))
