"""Parsing DSL text into architectures, module files and rules (raising `DslError`)."""

from __future__ import annotations

from dataclasses import replace

from lark.exceptions import UnexpectedInput, VisitError

from adopter.dsl.check import check_rules
from adopter.dsl.errors import DslError, error_problem, syntax_problem
from adopter.dsl.grammar import parser
from adopter.dsl.transform import Document, DslTransformer, TransformProblem
from adopter.dsl.types import Architecture, ModuleFile, Rule, Span


def parse_document(text: str, path: str | None = None) -> Document:
    """Parse any DSL text (architectures, functions, problems, rules) without semantic checks."""
    if not isinstance(text, str):
        raise TypeError(f"DSL text must be str, not {type(text).__name__}")
    text = text.replace("\r\n", "\n")
    if text.startswith("\ufeff"):
        text = " " + text[1:]  # a byte-order mark: blank it out, keeping columns
    try:
        tree = parser().parse(text)
    except UnexpectedInput as exc:
        raise DslError([syntax_problem(exc, text, path)], text) from None
    try:
        document: Document = DslTransformer().transform(tree)
        return document
    except (RecursionError, VisitError) as exc:
        if isinstance(exc, RecursionError) or isinstance(exc.orig_exc, RecursionError):
            message = "blocks are nested too deeply to read"
            raise DslError([error_problem(message, None, path)], text) from None
        if isinstance(exc.orig_exc, TransformProblem):
            problem = replace(exc.orig_exc.problem, path=path)
            raise DslError([problem], text) from None
        # A bug of ours, not of the input; report it as a problem rather than crash the caller.
        message = f"internal error while reading {exc.rule or 'the text'}: {exc.orig_exc!r}"
        raise DslError([error_problem(message, None, path, code="dsl-internal")], text) from exc


def _only(document: Document, text: str, path: str | None, allowed: str) -> None:
    """Reject parts of a document that do not belong in the kind of file being read."""
    stray: list[tuple[str, Span | None]] = []
    if allowed != "rules":
        stray += [("a rule", parsed.where["rule"]) for parsed in document.rules]
    else:
        stray += [("a model", span) for _, span in document.architectures]
        stray += [("a function", fn.span) for fn in document.functions]
        stray += [("a problem line", None) for _ in document.problems]
        if document.path_span is not None:
            stray.append(("a file line", document.path_span))
    if stray:
        what, span = stray[0]
        raise DslError([error_problem(f"{what} does not belong in {allowed} text", span, path)], text)


def parse_module_file(text: str, path: str | None = None) -> ModuleFile:
    """Parse `format_module_file` output back into a `ModuleFile`."""
    document = parse_document(text, path)
    _only(document, text, path, "architecture")
    return ModuleFile(
        path=document.path,
        architectures=tuple(arch for arch, _ in document.architectures),
        problems=document.problems,
        functions=document.functions,
    )


def parse_architecture(text: str) -> Architecture:
    """Parse the DSL text of exactly one `model`."""
    module_file = parse_module_file(text)
    if len(module_file.architectures) != 1 or module_file.functions or module_file.problems:
        found = len(module_file.architectures)
        message = f"expected exactly one model, found {found} (and {len(module_file.functions)} functions)"
        raise DslError([error_problem(message, None, None)], text)
    return module_file.architectures[0]


def parse_rules(text: str, path: str | None = None) -> tuple[Rule, ...]:
    """Parse a rule file; syntax and semantic errors raise `DslError` with every problem found."""
    document = parse_document(text, path)
    _only(document, text, path, "rules")
    problems = check_rules(document.rules, path)
    if problems:
        raise DslError(problems, text.replace("\r\n", "\n"))
    return tuple(replace(parsed.rule, path=path) for parsed in document.rules)
