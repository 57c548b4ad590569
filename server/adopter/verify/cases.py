"""The fixes `adopter verify` runs: one per fixable finding, each applied alone to the original text."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from adopter.session import Session


@dataclass(frozen=True, slots=True)
class FixCase:
    """One fix to run: the finding it fixes (1-based line), the rewritten text, and the top-level classes
    whose text the rewrite changed (those are built twice and compared)."""

    rule_id: str
    line: int
    scope: str
    new_source: str
    classes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Unfixed:
    """A finding in the selection that `fix` would not rewrite, with the reason."""

    rule_id: str
    line: int
    scope: str
    reason: str


def _top_level(source: str) -> tuple[dict[str, str], dict[str, str], dict[str, set[str]]]:
    """Each top-level class's and function's source text, by name, and the names each class reads. Classes
    defined in a class body come too, by qualified name (`Outer.Inner`, the scope the analysis gives them)."""
    tree = ast.parse(source)
    classes: dict[str, str] = {}
    functions: dict[str, str] = {}
    reads: dict[str, set[str]] = {}
    todo: list[tuple[str, ast.stmt]] = [("", node) for node in tree.body]
    while todo:
        prefix, node = todo.pop(0)
        text = ast.get_source_segment(source, node, padded=False) or ""
        if isinstance(node, ast.ClassDef):
            name = prefix + node.name
            classes[name] = text
            reads[name] = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            todo.extend((f"{name}.", inner) for inner in node.body if isinstance(inner, ast.ClassDef))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not prefix:
            functions[node.name] = text
    return classes, functions, reads


def changed_classes(old: str, new: str) -> tuple[str, ...]:
    """The classes of `old` (top-level and nested) whose text differs in `new`, or that call a top-level function whose
    text differs (a fix inside a helper function runs through the classes that use it). Classes the rewrite
    added are left out: they run through the changed classes that use them."""
    before, functions_before, reads = _top_level(old)
    after, functions_after, _ = _top_level(new)
    helpers = {name for name, text in functions_before.items() if functions_after.get(name, text) != text}
    return tuple(name for name, text in before.items()
                 if name in after and (after[name] != text or reads[name] & helpers))


def site_classes(source: str, scope: str) -> tuple[str, ...]:
    """The top-level classes a site in `scope` runs in: the class itself, or for a factory function (a
    Sequential built by `def FeedForward(...)`) the classes that call it. A fix that edits another class (a
    stateless `nn.Sequential` item's forward) changes what the site computes, and that class alone often
    cannot be built (no layer says what input it takes)."""
    try:
        classes, functions, reads = _top_level(source)
    except SyntaxError:
        return ()
    if scope in classes:
        return (scope,)
    if scope in functions:
        return tuple(name for name in classes if scope in reads[name])
    return ()


def fix_cases(session: Session, text: str, path: str, *,
              class_name: str | None = None) -> tuple[tuple[FixCase, ...], tuple[Unfixed, ...]]:
    """Every finding of `class_name` (all classes when None) that `fix` rewrites, each as its own case.

    The session's rules are the selection (`--rule`). The rewrite is the one `fix` writes, verified by
    the session (parses, re-analyses clean); the run decides whether it computes the same.
    """
    analysed = session.analysed(text, path)
    cases: list[FixCase] = []
    unfixed: list[Unfixed] = []
    for finding in analysed.findings:
        if class_name is not None and finding.scope_name != class_name:
            continue
        line = finding.span.start_line + 1
        decision = session.decision(analysed, finding)
        if not decision.fixable or decision.new_source is None:
            unfixed.append(Unfixed(finding.rule_id, line, finding.scope_name, decision.reason or "no automatic fix"))
            continue
        classes = changed_classes(text, decision.new_source)
        classes += tuple(c for c in site_classes(text, finding.scope_name) if c not in classes)
        cases.append(FixCase(finding.rule_id, line, finding.scope_name, decision.new_source, classes))
    return tuple(cases), tuple(unfixed)

