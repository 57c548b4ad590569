"""Per-rule plans for the pre-filter: what a forward must contain before a rule is worth matching.

Cached per rule object (rules are immutable and live as long as the rule set).
"""

from __future__ import annotations

from adopter.dsl.types import BindingPattern, Rule
from adopter.engine.bindings import InitIndex

_PATTERNS: dict[int, tuple[Rule, dict[str, BindingPattern]]] = {}


def init_patterns(rule: Rule) -> dict[str, BindingPattern]:
    """The rule's init patterns by variable name (cached per rule object)."""
    cached = _PATTERNS.get(id(rule))
    if cached is None or cached[0] is not rule:
        cached = (rule, {b.var.lstrip("$"): b for b in rule.init})
        _PATTERNS[id(rule)] = cached
    return cached[1]


_LITERALS: dict[int, tuple[Rule, tuple[tuple[tuple[str, str], ...], ...]]] = {}


def literal_requirements(rule: Rule) -> tuple[tuple[tuple[str, str], ...], ...]:
    """Per required step without module variables: the (kind, target) keys one of which must occur."""
    cached = _LITERALS.get(id(rule))
    if cached is None or cached[0] is not rule:
        reqs = tuple(
            tuple((k.value, t) for k, t in step.targets)
            for step in rule.forward
            if not step.optional and not any(t.startswith("$") for _, t in step.targets)
        )
        # Most selective first: a rare target rejects a forward with one lookup.
        cached = (rule, tuple(sorted(reqs, key=lambda keys: (keys[0][0] == "operator", len(keys)))))
        _LITERALS[id(rule)] = cached
    return cached[1]


_CALLEES: dict[int, tuple[Rule, tuple[frozenset[str], ...]]] = {}


def _init_callees(rule: Rule) -> tuple[frozenset[str], ...]:
    """Per init pattern, the callee names one of which the class must construct (cached per rule)."""
    cached = _CALLEES.get(id(rule))
    if cached is None or cached[0] is not rule:
        cached = (rule, tuple(frozenset(b.ctor.callees) for b in rule.init))
        _CALLEES[id(rule)] = cached
    return cached[1]


def quick_possible(rule: Rule, keys: set[tuple[str, str]], init: InitIndex) -> bool:
    """A cheap necessary condition for `rule` to match a forward with op `keys` and bindings `init`."""
    if not rule.forward:
        return False
    for required in literal_requirements(rule):
        if keys.isdisjoint(required):
            return False
    callees = init.callees
    return all(not callees.isdisjoint(names) for names in _init_callees(rule))
