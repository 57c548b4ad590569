"""Semantic checks of parsed rules: names, scopes, guards and examples, as positioned problems."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from adopter.dsl.errors import error_problem
from adopter.dsl.lexical import PLACEHOLDER_RE
from adopter.dsl.transform_rules import ParsedRule
from adopter.dsl.tree_values import FAMILY_RANGE
from adopter.dsl.types import Guard, GuardKind, OpKind, PAny, Problem, PValue, PVar, Rule, Span

# Guard kind -> (minimum number of arguments, maximum or None, how many leading ones must be variables,
# None for all). Kinds not listed take one or more variables.
GUARD_ARITY: dict[str, tuple[int, int | None, int | None]] = {
    "equals": (2, 2, 1),
    "one_of": (2, None, 1),
    "no_kwarg": (2, None, 1),
    "fix_requires": (2, None, 1),
    "key_may_be": (2, None, 1),
    "gate_activation": (1, None, 1),
    "named_activation": (2, None, 1),
    "query_vector": (3, 3, 2),
    "probability_vector": (5, 5, 3),
}
DEFAULT_ARITY: tuple[int, int | None, int | None] = (1, None, None)

# PEP 440 specifier clauses, comma-separated: ">=2.1", ">=2.1,<3", "~=2.4", "==2.13.*".
TORCH_SPECIFIER_RE = re.compile(r"\s*(~=|===|==|!=|<=|>=|<|>)\s*[0-9][\w.*+!-]*\s*(,\s*(~=|===|==|!=|<=|>=|<|>)\s*[0-9][\w.*+!-]*\s*)*")


def check_rules(parsed: Sequence[ParsedRule], path: str | None) -> tuple[Problem, ...]:
    """Every semantic problem of the rules of one file, in source order."""
    problems: list[Problem] = []
    seen: dict[str, Span] = {}
    for item in parsed:
        rule_id = item.rule.id
        if rule_id in seen:
            first = seen[rule_id]
            problems.append(
                _problem(f"duplicate rule id {rule_id!r} (first defined on line {first.start_line + 1})",
                         item.where["id"], path, rule_id)
            )
        else:
            seen[rule_id] = item.where["id"]
        problems.extend(
            _problem(message, span, path, rule_id) for message, span in _rule_problems(item)
        )
    return tuple(problems)


def _problem(message: str, span: Span | None, path: str | None, rule_id: str) -> Problem:
    return error_problem(f"rule {rule_id}: {message}", span, path, code="dsl-check")


def pattern_variables(rule: Rule) -> set[str]:
    """Every variable a rule's patterns bind (names without `$`)."""
    names = {binding.var for binding in rule.init}
    for binding in rule.init:
        names |= _vars(binding.ctor.args)
        names |= _vars(kw.value for kw in binding.ctor.kwargs)
        if binding.ctor.lookup is not None:
            names |= _vars((binding.ctor.lookup,))
    for step in rule.forward:
        names |= _vars(step.outputs) | _vars(step.args) | _vars(kw.value for kw in step.kwargs)
    return names


def _vars(values: Iterator[PValue] | Sequence[PValue]) -> set[str]:
    return {value.name for value in values if isinstance(value, PVar)}


def _rule_problems(item: ParsedRule) -> Iterator[tuple[str, Span | None]]:
    rule, where = item.rule, item.where
    if rule.family not in FAMILY_RANGE:
        yield (
            f"family {rule.family} is out of range ({FAMILY_RANGE.start} to {FAMILY_RANGE.stop - 1})",
            where.get("family"),
        )
    if rule.scope == "function" and rule.init:
        yield "a rule with `scope function` cannot have `init` patterns (functions bind no submodules)", where.get("init")
    if not rule.forward:
        yield "the forward pattern needs at least one step", where.get("forward")
    elif all(step.optional for step in rule.forward):
        yield "the forward pattern needs at least one step that is not optional (`?`)", where.get("forward")
    module_vars = {binding.var for binding in rule.init}
    # A layer of a module handed to a function has no binding to match (`GuardKind.HANDED_LAYER`).
    module_vars |= {a.name for g in rule.guards if g.kind is GuardKind.HANDED_LAYER for a in g.args
                    if isinstance(a, PVar)}
    defined = pattern_variables(rule)
    for step in rule.forward:
        # An absent optional step binds its output to its first value argument (the first that is not
        # `_`, as in `torch.where(_, $s, _)`): both must exist.
        first = next((a for a in step.args if not isinstance(a, PAny)), None)
        if step.optional and (len(step.outputs) != 1 or not isinstance(first, PVar)):
            yield (
                "an optional step (`?`) needs one output and a pattern variable as its first argument (`_` skipped), "
                "which stands for the output when the step is absent",
                step.span,
            )
        for output in step.outputs:
            if not isinstance(output, (PVar, PAny)):
                yield "a step's outputs are pattern variables ($name) or `_`", step.span
        for kind, target in step.targets:
            if kind is OpKind.MODULE and target.startswith("$") and target[1:] not in module_vars:
                yield (
                    f"module variable {target} is called in `forward` but bound by no `init` pattern",
                    step.span,
                )
                defined.add(target[1:])  # report each unbound module variable once per step
            elif kind is OpKind.MODULE and target.startswith("$"):
                defined.add(target[1:])  # a handed layer's variable is bound by the step that calls it
    for guard in rule.guards:
        yield from _guard_problems(guard, defined)
    names = [target.name for target in rule.targets]
    for index, offered in enumerate(rule.targets):
        if offered.name in names[:index]:
            yield f"target {offered.name!r} is defined twice", where.get(f"target:{index}")
        if offered.torch is not None and not TORCH_SPECIFIER_RE.fullmatch(offered.torch):
            yield (
                f"target {offered.name!r}: torch {offered.torch!r} is not a version specifier like \">=2.1\" "
                "or \">=2.1,<3\"",
                where.get(f"target:{index}"),
            )
    if rule.replacement is not None:
        known = defined | {var for var, _ in rule.replacement.init}
        templates = [("forward", rule.replacement.forward or "")]
        templates += [(f"init:{var}", code) for var, code in rule.replacement.init]
        for key, template in templates:
            for match in PLACEHOLDER_RE.finditer(template):
                if match.group(1) not in known:
                    span = _in_template(where.get(f"template:{key}"), template, match.start(), match.end())
                    yield f"template placeholder ${match.group(1)} is not a pattern variable", span or where.get("rewrite")
    for index, example in enumerate(rule.examples):
        span = where.get(f"example:{index}", example.span)
        if example.target is not None and example.target not in names:
            yield f"example is for target {example.target!r}, which the rule does not define", span
        if example.expected is not None and rule.replacement is None:
            yield "example shows an expected rewrite but the rule has no `rewrite`", span


def _guard_problems(guard: Guard, defined: set[str]) -> Iterator[tuple[str, Span | None]]:
    low, high, leading = GUARD_ARITY.get(guard.kind.value, DEFAULT_ARITY)
    count = len(guard.args)
    if count < low or (high is not None and count > high):
        wanted = f"{low}" if low == high else f"at least {low}"
        yield f"guard {guard.kind.value} takes {wanted} argument(s), got {count}", guard.span
    must_be_vars = guard.args if leading is None else guard.args[:leading]
    for arg in must_be_vars:
        if not isinstance(arg, PVar):
            yield f"guard {guard.kind.value} needs pattern variables ($name) here", guard.span
    for arg in guard.args:
        if isinstance(arg, PVar) and arg.name not in defined:
            yield f"guard {guard.kind.value} uses ${arg.name}, which no pattern binds", guard.span


def _in_template(start: Span | None, template: str, begin: int, end: int) -> Span | None:
    """The file span of template[begin:end], given where the template's text starts."""
    if start is None:
        return None
    line = template.count("\n", 0, begin)
    col = begin - (template.rfind("\n", 0, begin) + 1)
    return Span(start.start_line + line, start.start_col + col, start.start_line + line, start.start_col + col + end - begin)
