"""Reading Lark tokens and nodes of the DSL: positions, opaque text, strings, code fences, carriers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lark import Token
from lark.tree import Meta

from adopter.dsl.errors import error_problem
from adopter.dsl.lexical import FenceError, fence_origin, unfence, unquote, unquote_string
from adopter.dsl.types import (
    Block,
    OpKind,
    PKwarg,
    Problem,
    PValue,
    Severity,
    Span,
)

LITERAL_NAMES = frozenset({"None", "True", "False"})
FAMILY_RANGE = range(1, 100)


class TransformProblem(Exception):
    """A positioned problem found while building values (raised out of the transformer)."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


def meta_span(meta: Meta) -> Span:
    """The 0-based span of a tree node (Lark counts lines and columns from 1)."""
    if getattr(meta, "empty", True):
        return Span(0, 0, 0, 0)
    return Span(meta.line - 1, meta.column - 1, meta.end_line - 1, meta.end_column - 1)


def token_span(token: Token) -> Span:
    """The 0-based span of a token."""
    line = (token.line or 1) - 1
    col = (token.column or 1) - 1
    end_line = (token.end_line or token.line or 1) - 1
    end_col = (token.end_column or token.column or 1) - 1
    return Span(line, col, end_line, end_col)


def parse_span(token: Token) -> Span:
    """`@12:5-12:30` (1-based) as a 0-based `Span`."""
    start, end = str(token)[1:].split("-")
    start_line, start_col = (int(part) - 1 for part in start.split(":"))
    end_line, end_col = (int(part) - 1 for part in end.split(":"))
    if min(start_line, start_col, end_line, end_col) < 0:
        raise TransformProblem(error_problem("span lines and columns count from 1", token_span(token), None))
    return Span(start_line, start_col, end_line, end_col)


def text_of(token: Token) -> str:
    """Opaque text from a NAME, NUMBER, STRING, RULE_ID or QUOTED token."""
    return unquote(str(token)) if token.type == "QUOTED" else str(token)


def string_of(token: Token) -> str:
    """The value of a double- or single-quoted DSL string."""
    try:
        return unquote_string(str(token))
    except ValueError as exc:
        raise TransformProblem(error_problem(str(exc), token_span(token), None)) from None


def fence_of(token: Token) -> str:
    """The text of a ``` code block."""
    try:
        return unfence(str(token))
    except FenceError as exc:
        line = (token.line or 1) - 1 + exc.line
        raise TransformProblem(error_problem(str(exc), Span(line, 0, line, 1), None)) from None


def fence_start(token: Token) -> Span:
    """The position of the first character of a fence's text (an empty span there)."""
    below, column = fence_origin(str(token))
    line = (token.line or 1) - 1 + below
    col = column + ((token.column or 1) - 1 if below == 0 else 0)
    return Span(line, col, line, col)


def fail(message: str, span: Span) -> TransformProblem:
    """A positioned problem to raise from a callback."""
    return TransformProblem(error_problem(message, span, None))


def tokens_of(children: list[Any]) -> list[Token]:
    """The tokens among a node's children, without `|` separators."""
    return [child for child in children if isinstance(child, Token) and child.type != "PIPE"]


@dataclass(frozen=True)
class Field:
    """One `name value` line inside a rule, target or rewrite block."""

    name: str
    value: Any
    span: Span


@dataclass(frozen=True)
class Call:
    """The target part of a forward pattern step."""

    targets: tuple[tuple[OpKind, str], ...]
    args: tuple[PValue, ...]
    kwargs: tuple[PKwarg, ...]
    extra: bool


@dataclass(frozen=True)
class Arm:
    """One `elif`/`else`/`otherwise` arm of a branch; `condition` None for `otherwise`."""

    condition: str | None
    body: Block
    span: Span


@dataclass(frozen=True)
class Args:
    """A parsed argument list: positional values, keyword arguments, and whether `...` was there."""

    args: tuple[Any, ...]
    kwargs: tuple[Any, ...]
    extra: bool


EXTRA = object()


def severity_of(token: Token) -> Severity:
    """A severity word as `Severity`; an unknown word is a positioned problem."""
    try:
        return Severity(str(token))
    except ValueError:
        known = ", ".join(s.value for s in Severity)
        raise fail(f"unknown severity {str(token)!r}; expected one of {known}", token_span(token)) from None
