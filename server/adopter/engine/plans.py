"""Per-rule plans for the pre-filter: what a forward must contain before a rule is worth matching.

Cached per rule object (rules are immutable and live as long as the rule set).
"""

from __future__ import annotations

from dataclasses import replace

from adopter.analysis.canonical.normalise import normalise_values
from adopter.analysis.canonical.spellings import CANONICAL, CAST, CHOOSE, TRANSPARENT_METHODS
from adopter.dsl.types import METHOD_OP, OPERATOR_OP, BindingPattern, Op, OpKind, OpPattern, PKwarg, Rule
from adopter.engine.bindings import InitIndex

_PATTERNS: dict[int, tuple[Rule, dict[str, BindingPattern]]] = {}


ANY_MODULE = "_"  # `init { $act = _ }`: any submodule, whatever its `__init__` binding (or none)


def is_any_module(pattern: BindingPattern) -> bool:
    """Whether an init pattern is the wildcard `$m = _`: it constrains nothing, so the matcher treats `$m` as
    a module variable without a pattern (any `self.<attr>` call), and no binding is required for it."""
    return pattern.ctor.callees == (ANY_MODULE,) and pattern.ctor.lookup is None


def init_patterns(rule: Rule) -> dict[str, BindingPattern]:
    """The rule's init patterns by variable name, the wildcards (`$m = _`) left out (cached per rule object)."""
    cached = _PATTERNS.get(id(rule))
    if cached is None or cached[0] is not rule:
        cached = (rule, {b.var.lstrip("$"): b for b in rule.init if not is_any_module(b)})
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


_QUICK: dict[int, tuple[Rule, tuple[tuple[tuple[str, str], ...], ...], tuple[frozenset[str], ...]]] = {}


def quick_keys(rule: Rule) -> tuple[tuple[tuple[tuple[str, str], ...], ...], tuple[frozenset[str], ...]]:
    """`literal_requirements(rule)`, and the callee names of each init pattern a match must bind
    (`required_init_vars`); cached per rule, as `quick_possible` asks for every scope."""
    cached = _QUICK.get(id(rule))
    if cached is None or cached[0] is not rule:
        needed = required_init_vars(rule)
        callees = tuple(names for b, names in zip(rule.init, _init_callees(rule)) if b.var.lstrip("$") in needed)
        cached = (rule, literal_requirements(rule), callees)
        _QUICK[id(rule)] = cached
    return cached[1], cached[2]


def quick_possible(rule: Rule, keys: set[tuple[str, str]], init: InitIndex) -> bool:
    """A cheap necessary condition for `rule` to match a forward with op `keys` and bindings `init`."""
    if not rule.forward:
        return False
    requirements, init_callees = quick_keys(rule)
    for required in requirements:
        if keys.isdisjoint(required):
            return False
    callees = init.callees
    return all(not callees.isdisjoint(names) for names in init_callees)


# ---------------------------------------------------------------------------------------------------
# Canonical patterns: a rule's steps in the canonical form of `adopter.analysis.canonical.spellings`
# ---------------------------------------------------------------------------------------------------

_CANONICAL: dict[int, tuple[Rule, Rule]] = {}


def is_cast(op: Op) -> bool:
    """Whether `op` is a transparent op of the canonical form (the matcher looks through it): a cast,
    or one path's value of a conditional expression."""
    return op.kind is OPERATOR_OP and (op.target == CAST[1] or op.target == CHOOSE[1])


def is_choice(op: Op) -> bool:
    """Whether `op` passes on one alternative of a conditional expression (transparent on its path only)."""
    return op.kind is OPERATOR_OP and op.target == CHOOSE[1]


def _canonical_key(kind: OpKind, target: str) -> tuple[OpKind, str]:
    if kind is METHOD_OP and target in TRANSPARENT_METHODS:
        return OpKind(CAST[0]), CAST[1]
    key = CANONICAL.get((kind.value, target), (kind.value, target))
    return OpKind(key[0]), key[1]


def _canonical_step(step: OpPattern) -> OpPattern:
    targets: list[tuple[OpKind, str]] = []
    for kind, target in step.targets:
        key = (kind, target) if target.startswith("$") else _canonical_key(kind, target)
        if key not in targets:
            targets.append(key)
    args, kwargs = step.args, step.kwargs
    keys = {(k.value, t) for k, t in targets if not t.startswith("$")}
    if len(keys) == 1:
        done = normalise_values(next(iter(keys)), args, tuple((k.name, k.value) for k in kwargs), {})
        if done is not None:
            args = done[0]
            kwargs = tuple(PKwarg(name, value) for name, value in done[1])
    if tuple(targets) == step.targets and args == step.args and kwargs == step.kwargs:
        return step
    return replace(step, targets=tuple(targets), args=args, kwargs=kwargs)


def canonical_rule(rule: Rule) -> Rule:
    """`rule` with its forward steps in canonical form, so one spelling in a rule matches them all."""
    cached = _CANONICAL.get(id(rule))
    if cached is None or cached[0] is not rule:
        new = tuple(_canonical_step(s) for s in rule.forward)
        cached = (rule, rule if new == rule.forward else replace(rule, forward=new))
        _CANONICAL[id(rule)] = cached
    return cached[1]


_REQUIRED: dict[int, tuple[Rule, frozenset[str]]] = {}


_CASTS: dict[int, tuple[Rule, bool]] = {}
_CAST_KEY = (OpKind(CAST[0]), CAST[1])


def names_casts(rule: Rule) -> bool:
    """Whether a step of `rule` is a cast: such a rule sees casts (its rewrite keeps them); every other
    rule looks through them (cached per rule: every `RuleMatcher` asks)."""
    cached = _CASTS.get(id(rule))
    if cached is None or cached[0] is not rule:
        cached = (rule, any(t == _CAST_KEY for step in rule.forward for t in step.targets))
        _CASTS[id(rule)] = cached
    return cached[1]


def required_init_vars(rule: Rule) -> frozenset[str]:
    """Module variables every match must bind: those a required step can only be a call of.

    `? $p2 = $drop($p)` or `($drop | torch.nn.functional.dropout)($p)` do not need a Dropout in
    `__init__`; `$h = $dense($x)` needs its binding.
    """
    cached = _REQUIRED.get(id(rule))
    if cached is None or cached[0] is not rule:
        names: set[str] = set()
        for step in rule.forward:
            if not step.optional and all(t.startswith("$") for _, t in step.targets):
                names.update(t.lstrip("$") for _, t in step.targets)
        names -= {b.var.lstrip("$") for b in rule.init if is_any_module(b)}
        cached = (rule, frozenset(names))
        _REQUIRED[id(rule)] = cached
    return cached[1]
