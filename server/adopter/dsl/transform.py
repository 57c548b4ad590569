"""Turns Lark parse trees of the DSL into the frozen values of `adopter.dsl.types`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lark import v_args
from lark.tree import Meta

from adopter.dsl.transform_architecture import ArchitectureTransformer
from adopter.dsl.transform_rules import ParsedRule, RuleTransformer
from adopter.dsl.tree_values import Field, TransformProblem, fail
from adopter.dsl.types import Architecture, Forward, Problem, Span

__all__ = ["Document", "DslTransformer", "ParsedRule", "TransformProblem"]


@dataclass(frozen=True)
class Document:
    """Everything one DSL text holds, in source order per kind."""

    path: str | None
    path_span: Span | None
    architectures: tuple[tuple[Architecture, Span], ...]
    functions: tuple[Forward, ...]
    problems: tuple[Problem, ...]
    rules: tuple[ParsedRule, ...]


@v_args(meta=True)
class DslTransformer(ArchitectureTransformer, RuleTransformer):
    """Bottom-up construction of DSL values; raises `TransformProblem` for malformed parts."""

    def start(self, meta: Meta, items: list[Any]) -> Document:
        path: str | None = None
        path_span: Span | None = None
        archs: list[tuple[Architecture, Span]] = []
        functions: list[Forward] = []
        problems: list[Problem] = []
        rules: list[ParsedRule] = []
        for item in items:
            if isinstance(item, Field):
                if path_span is not None:
                    raise fail("a document has at most one `file` line", item.span)
                path, path_span = item.value, item.span
            elif isinstance(item, tuple):
                archs.append(item)
            elif isinstance(item, Forward):
                functions.append(item)
            elif isinstance(item, Problem):
                problems.append(item)
            else:
                rules.append(item)
        return Document(path, path_span, tuple(archs), tuple(functions), tuple(problems), tuple(rules))
