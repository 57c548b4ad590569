"""From matches to findings: one finding per site, with exact spans, offered targets and fixability."""

from __future__ import annotations

import ast
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from adopter.analysis.analyser import identical
from adopter.analysis.canonical.normalise import submodule_view
from adopter.analysis.canonical.spellings import MODULES, SEQUENTIAL
from adopter.analysis.flow.foreign import foreign_reason
from adopter.analysis.flow.state import handed_reason, unrolled_reason
from adopter.analysis.idioms.formula_layers import formula_reason, written_modules
from adopter.analysis.idioms.inherited_layers import inherited_reason
from adopter.analysis.idioms.layer_subclasses import subclass_reason
from adopter.analysis.idioms.linear_like import linear_like_reason
from adopter.analysis.idioms.optimizers import chosen_class_reason
from adopter.analysis.names.function_classes import LOCALS
from adopter.analysis.scope.bindings import FACTORY_ORIGIN
from adopter.analysis.scope.chosen_layers import chosen_layer_reason
from adopter.dsl.types import (
    FUNCTION_OP,
    GATE_ACTIVATION_GUARD,
    INSIDE_SUBMODULE_GUARD,
    MODULE_OP,
    OPERATOR_OP,
    VOCABULARY_GUARD,
    Architecture,
    Binding,
    BindingPattern,
    Ctor,
    Expr,
    Forward,
    ModuleFile,
    Op,
    Param,
    Problem,
    PVar,
    Ref,
    Rule,
    Severity,
    Span,
    Value,
)
from adopter.engine.applications import ROTARY_FAMILY, application_group, group_count, written_in
from adopter.engine.bindings import InitIndex
from adopter.engine.bound_chains import into_bound_chains, item_spans
from adopter.engine.called_elsewhere import unmatched_call, with_calls_unknown, with_unseen_calls
from adopter.engine.environment import Environment
from adopter.engine.file_uses import StatementMemo
from adopter.engine.flow import FlatForward, flatten, op_keys
from adopter.engine.forward_reread import only_the_forward_reread
from adopter.engine.matcher import Bound, BudgetExceeded, RawMatch, RuleMatcher
from adopter.engine.nested_chains import into_built_chains
from adopter.engine.passed_in import chain_statements, with_statements
from adopter.engine.plans import canonical_rule, quick_keys, quick_possible
from adopter.engine.rotary_sites import one_rotation_per_function, one_site_per_application
from adopter.engine.split_sites import split_call_reason
from adopter.engine.types import Finding, Match
from adopter.engine.unnamed_helpers import matches_unnamed_helpers

log = logging.getLogger(__name__)
_ITEM = re.compile(r"^self(\.\w+)+(\[(\d+|\*)\])*\[\d+\]$")


@dataclass(frozen=True, slots=True)
class EngineResult:
    """Findings of one file, and the problems (failing rules) met while matching."""

    findings: tuple[Finding, ...]
    problems: tuple[Problem, ...] = ()


def find(module_file: ModuleFile, rules: Sequence[Rule], env: Environment) -> tuple[Finding, ...]:
    """Every site where a rule applies in `module_file`; never raises (failing rules are logged)."""
    result = check(module_file, rules, env)
    for p in result.problems:
        log.warning("%s", p.render())
    return result.findings


def check(module_file: ModuleFile, rules: Sequence[Rule], env: Environment,
          memo: MatchMemo | None = None) -> EngineResult:
    """Findings plus problems for `module_file`; never raises. `memo`: the per-rule results of the last
    matching of the same scopes (the language server's, one per document), reused where still valid."""
    findings: list[Finding] = []
    problems: list[Problem] = []
    scopes: list[tuple[str, Forward, Architecture | Forward, str]] = []
    for arch in module_file.architectures:
        if arch.forward is not None:
            scopes.append((arch.name, arch.forward, arch, "forward"))
    for fn in module_file.functions:
        scopes.append((fn.name, fn, fn, "function"))
    for chain in module_file.chains:
        if chain.forward is not None:
            scopes.append((chain.name, chain.forward, chain, "forward"))
    run_elsewhere = chain_statements(module_file)
    # Every rule matches in canonical form: taken once per rule tuple, not once per call, rule and scope.
    canonical, about_functions = _canonical_rules(rules)
    for scope_name, forward, owner, kind in scopes:
        init = InitIndex.of(owner if isinstance(owner, Architecture) else None)
        # A helper that nothing in the file names is not part of any forward here: only rules about
        # functions themselves (an optimizer built in a training script's function) and rotary rules
        # (`engine.unnamed_helpers`) apply to it.
        live = canonical if forward.referenced else about_functions
        kept = memo.scope(scope_name, kind, forward) if memo is not None else None
        start = len(findings)
        _match_scope(scope_name, forward, init, kind, live, module_file.path, env, findings, problems, kept)
        extra = run_elsewhere.get(id(owner)) if run_elsewhere else None
        if extra:
            findings[start:] = [with_statements(f, extra) for f in findings[start:]]
        if isinstance(owner, Architecture) and owner.processor_of is not None:
            findings[start:] = [_in_processor(f, owner.processor_of) for f in findings[start:]]
    reduced = reduce_sites(findings, {a.name: a.span for a in module_file.architectures})
    if any(LOCALS in f.scope_name for f in reduced):
        reduced = tuple(_in_function_class(f) if LOCALS in f.scope_name else f for f in reduced)
    return EngineResult(reduced, tuple(problems))


# The last few rule tuples `check` was handed -> (the tuple, its rules in canonical form, those about
# functions). The session matches a file class by class with the same tuple (`context.rules`), one `check`
# per class: 3,806 over the 210 files of issue 22, each rebuilding the same two lists.
_CANONICAL_RULES: dict[int, tuple[tuple[Rule, ...], list[Rule], list[Rule]]] = {}


def _canonical_rules(rules: Sequence[Rule]) -> tuple[list[Rule], list[Rule]]:
    """`rules` in canonical form, and those of them about functions; kept per tuple (a tuple's rules stay)."""
    kept = _CANONICAL_RULES.get(id(rules)) if isinstance(rules, tuple) else None
    if kept is not None and kept[0] is rules:
        return kept[1], kept[2]
    canonical = [canonical_rule(r) for r in rules]
    about_functions = [r for r in canonical if matches_unnamed_helpers(r)]
    if isinstance(rules, tuple):
        if len(_CANONICAL_RULES) >= 8:  # a server reloading its rules: the older tuples go
            _CANONICAL_RULES.clear()
            _PREFILTERS.clear()
        _CANONICAL_RULES[id(rules)] = (rules, canonical, about_functions)
        for listed in (canonical, about_functions):  # lists of this module's own, never changed
            _PREFILTERS[id(listed)] = (listed, [(r, *quick_keys(r)) for r in listed if r.forward])
    return canonical, about_functions


# The lists `_canonical_rules` made -> (the list, each rule with steps and its `quick_keys`): `_match_scope`
# asks `quick_possible` of every rule in every scope (185,909 times over the 210 files); for these lists the
# keys are read once.
_PREFILTERS: dict[int, tuple[list[Rule], list[tuple[Rule, tuple[tuple[tuple[str, str], ...], ...],
                                                    tuple[frozenset[str], ...]]]]] = {}


def _possible_rules(rules: Sequence[Rule], keys: set[tuple[str, str]], init: InitIndex) -> list[Rule]:
    """The rules `quick_possible` passes, in order."""
    kept = _PREFILTERS.get(id(rules))
    if kept is None or kept[0] is not rules:
        return [r for r in rules if quick_possible(r, keys, init)]
    callees = init.callees
    out: list[Rule] = []
    for rule, requirements, init_callees in kept[1]:  # loops, not `all(...)`: two generators per rule and scope
        for required in requirements:
            if keys.isdisjoint(required):
                break
        else:
            for names in init_callees:
                if callees.isdisjoint(names):
                    break
            else:
                out.append(rule)
    return out


def _in_processor(f: Finding, module_class: str) -> Finding:
    """A site in an attention processor's `__call__` (`analysis.idioms.processors`): reported without a fix, as
    no strategy rewrites a processor (its statements run on the module it is handed, whose `__init__` holds
    the layers)."""
    scope = f.scope_name.partition(".")[0]
    reason = (f"the matched ops run in the attention processor `{scope}`, on the `{module_class}` module it is "
              f"handed; Adopter does not rewrite a processor together with that module's `__init__`")
    return f if f.no_fix_reason == reason else replace(f, fixable=False, no_fix_reason=reason)


def _in_function_class(f: Finding) -> Finding:
    """A site in a class defined in a function's body (`build.<locals>.Block`: `names.function_classes`): reported
    without a fix. The class exists only while the function runs, so no rewrite of it can be run and compared
    (`verify` builds the module classes of the file), and a file that defines its modules in a function keeps torch
    an optional import, which a rewrite's module-level import or helper would make required."""
    function = f.scope_name.partition(LOCALS)[0]
    reason = (f"the class is defined inside function `{function}`: Adopter reports it but does not rewrite a class "
              f"that exists only while a function runs")
    return f if f.no_fix_reason == reason and not f.fixable else replace(f, fixable=False, no_fix_reason=reason)


@dataclass
class _AskedInit(InitIndex):
    """An `InitIndex` of its own for one rule's matching, recording each question the first time the rule
    asks it, with the answer (later asks hit the index's own memo): the rule's result holds for another
    `__init__` that answers every recorded question the same. The other reads of `__init__` during matching
    are of every binding (`by_attr`: the vocabulary guard, the submodule view), recorded for the rules that
    have those guards (`_reads_every_binding`)."""

    asked: list[tuple[str, str, BindingPattern | None, object]] = field(default_factory=list)

    @classmethod
    def for_rule(cls, init: InitIndex, rule: Rule) -> _AskedInit:
        own = cls(init.by_attr, callees=init.callees, params=init.params, sizes=init.sizes)
        own._fits = init._fits  # the same bindings and parameters: the same fits
        own._any_fit = init._any_fit
        if _reads_every_binding(rule):
            own.asked.append(("all", "", None, _all_bindings(init)))
        return own

    def resolve_ctor(self, target: str, pattern: BindingPattern) -> tuple[Binding, Ctor] | None:
        if (target, id(pattern)) in self._resolved:
            return self._resolved[(target, id(pattern))]
        found = super().resolve_ctor(target, pattern)
        self.asked.append(("resolve", target, pattern, found))
        return found

    def bindings_of(self, attr: str) -> tuple[Binding, ...]:
        found = super().bindings_of(attr)
        self.asked.append(("attr", attr, None, found))
        return found

    def parameters(self) -> tuple[Param, ...]:
        found = super().parameters()
        self.asked.append(("params", "", None, found))
        return found

    def size(self, name: str) -> str | None:
        found = super().size(name)
        self.asked.append(("size", name, None, found))
        return found

    def could_match(self, pattern: BindingPattern) -> bool:
        if id(pattern) in self._possible and any(c in self.callees for c in pattern.ctor.callees):
            return self._possible[id(pattern)]
        possible = super().could_match(pattern)
        self.asked.append(("possible", "", pattern, possible))
        return possible


def _reads_every_binding(rule: Rule) -> bool:
    """Whether matching `rule` reads every binding of `__init__` (`InitIndex.by_attr`) besides asking it
    questions: the vocabulary guard (the Embeddings' sizes), the gate-activation guard (the activation's
    bindings) and the submodule view (every layer). The gate-projections and named-activation guards ask
    questions instead (`bindings_of`, `parameters`)."""
    return any(g.kind in (VOCABULARY_GUARD, GATE_ACTIVATION_GUARD, INSIDE_SUBMODULE_GUARD)
               for g in rule.guards)


def _all_bindings(init: InitIndex) -> tuple[tuple[str, tuple[Binding, ...]], ...]:
    return tuple((attr, tuple(bs)) for attr, bs in init.by_attr.items())


def _answer(init: InitIndex, question: str, target: str, pattern: BindingPattern | None) -> object:
    """What `init` answers to a question `_AskedInit` recorded."""
    if question == "resolve" and pattern is not None:
        return init.resolve_ctor(target, pattern)
    if question == "possible" and pattern is not None:
        return init.could_match(pattern)
    if question == "params":
        return init.parameters()
    if question == "attr":
        return init.bindings_of(target)
    if question == "size":
        return init.size(target)
    return _all_bindings(init)


@dataclass(frozen=True)
class _RuleResult:
    asked: tuple[tuple[str, str, BindingPattern | None, object], ...]  # questions asked of `__init__`, answers
    findings: tuple[Finding, ...]
    problems: tuple[Problem, ...]

    def holds_for(self, init: InitIndex) -> bool:
        """Whether `init` answers every recorded question the same, in every field (spans, origins)."""
        return all(identical(_answer(init, question, target, pattern), answer)
                   for question, target, pattern, answer in self.asked)


@dataclass
class _ScopeMemo:
    kind: str
    forward: Forward
    rules: dict[str, _RuleResult] = field(default_factory=dict)


class MatchMemo:
    """Per scope (a class's forward, a function), the last forwards matched and each rule's result with the
    questions its matching asked of `__init__`. A rule's result is a function of the forward (flattened,
    its submodule view), the answers `__init__` gave (`InitIndex`: a target's binding, whether a pattern
    can match, and every binding for the rules that read them all), the rule, the scope's name, the file's
    path and the environment. The caller keeps one memo per rule context and file. When the forward is the same object
    (the incremental analysis hands back the last forward object when an edit of `__init__` left the
    forward's canonical form the same in every field: `Analyser._class`) and `__init__` answers a rule's
    questions the same, the rule is not matched again: a changed layer that no rule's matching asked about
    re-matches nothing. Found by identity, so that the forward edits (the other edits of an attention class)
    pay no comparison of two forwards.

    Two forwards are kept per scope, the last and the one before it: a character typed in the forward and
    deleted again gives back the forward before it (the language server then takes that unit's findings
    from its own cache, without matching), and an edit of `__init__` after that finds its rules here."""

    GENERATIONS = 2

    def __init__(self) -> None:
        self._scopes: dict[str, list[_ScopeMemo]] = {}

    def scope(self, name: str, kind: str, forward: Forward) -> dict[str, _RuleResult]:
        """The per-rule results kept for scope `name` with the forward `forward` (the same object), else a new,
        empty table (the oldest one dropped). The caller stores each rule's fresh result there."""
        kept = self._scopes.setdefault(name, [])
        for i, memo in enumerate(kept):
            if memo.kind == kind and memo.forward is forward:
                kept.insert(0, kept.pop(i))
                return memo.rules
        kept.insert(0, _ScopeMemo(kind, forward))
        del kept[self.GENERATIONS:]
        return kept[0].rules

    def restored(self, name: str, forward: Forward) -> None:
        """Scope `name`'s forward is `forward` again (the caller took its findings from its own cache):
        its table becomes the most recent, so that more forward edits, each undone, do not push it out."""
        kept = self._scopes.get(name, [])
        for i, memo in enumerate(kept):
            if memo.forward is forward:
                kept.insert(0, kept.pop(i))
                return

    def carry(self, name: str, old: Forward, new: Forward, moved: Callable[[tuple[object, ...]], tuple[object, ...] | None]) -> None:
        """Scope `name`'s forward `new` is `old` with its code moved along a line (`adopter.engine.moved`; the
        caller carried its findings): `old`'s rule results, every span in them mapped by `moved`, become
        `new`'s, so that an `__init__` edit next finds them. Nothing is kept when a span does not map."""
        kept = self._scopes.get(name, [])
        found = next((m for m in kept if m.forward is old), None)
        if found is None or any(m.forward is new for m in kept):
            return
        rules: dict[str, _RuleResult] = {}
        for rule_id, result in found.rules.items():
            # The answers `__init__` gave move with the class; the questions hold the rule's own patterns
            # (spans in the rule file), left as they are.
            findings, problems = moved(result.findings), moved(result.problems)
            answers = moved(tuple(answer for _, _, _, answer in result.asked))
            if findings is None or problems is None or answers is None:
                return
            asked = tuple((q, t, p, a) for (q, t, p, _), a in zip(result.asked, answers, strict=True))
            rules[rule_id] = _RuleResult(asked, findings, problems)  # type: ignore[arg-type]
        kept.insert(0, _ScopeMemo(found.kind, new, rules))
        del kept[self.GENERATIONS:]

    def keep_only(self, names: set[str]) -> None:
        """Forget the scopes no longer in the file."""
        for name in [n for n in self._scopes if n not in names]:
            del self._scopes[name]


def reduce_sites(findings: Sequence[Finding], class_spans: dict[str, Span]) -> tuple[Finding, ...]:
    """A file's findings as reported: one per rule and source site (a forward inherited by a subclass
    is its defining class's site; a Sequential nested in a bound one is its construction's site,
    `nested_chains`), none inside a larger match of its family, in source order.

    `check` applies it to a whole file; the language server to the findings it matched class by class
    (`adopter.session.UnitMatcher`), so both report the same sites. `class_spans`: class name -> span.
    """
    reduced = one_rotation_per_function(_outside_larger_matches(_one_per_site(one_site_per_application(
        into_bound_chains(into_built_chains(_through_factories(list(findings))))), class_spans)))
    reduced.sort(key=lambda f: (f.span.start_line, f.span.start_col, f.rule_id))
    return tuple(reduced)


def _match_scope(scope_name: str, forward: Forward, init: InitIndex, kind: str, rules: Sequence[Rule],
                 path: str | None, env: Environment, findings: list[Finding], problems: list[Problem],
                 kept: dict[str, _RuleResult] | None = None) -> None:
    """Match every rule (`rules`: in canonical form) in one forward (or function), appending findings and
    problems. `kept`: the
    rules' last results in this same forward (`MatchMemo.scope`), reused where `init` answers as before;
    each rule matched here is stored there."""
    try:
        keys = op_keys(forward.body)
        # Every rule matches module-level functions too (`eager_attention_forward`, a timm helper):
        # rules that need `__init__` bindings simply find none there.
        candidates = _possible_rules(rules, keys, init)
        if not candidates:
            return
        flat = flatten(forward)
    except Exception as exc:  # a malformed architecture must not take the file down
        problems.append(Problem(f"cannot flatten {scope_name}.{forward.name}: {exc}", forward.span,
                                path, Severity.WARNING))
        return
    view: FlatForward | None = None
    for rule in candidates:
        result = kept.get(rule.id) if kept is not None else None
        if result is not None and result.holds_for(init):
            findings.extend(result.findings)
            problems.extend(result.problems)
            continue
        asked = _AskedInit.for_rule(init, rule) if kept is not None else init
        found, failed = len(findings), len(problems)
        try:
            if any(g.kind is INSIDE_SUBMODULE_GUARD for g in rule.guards):
                # This rule may read through submodule calls: match it in the view where they are unrolled.
                if view is None:
                    unrolled = submodule_view(forward, [b for bs in init.by_attr.values() for b in bs])
                    view = flatten(unrolled) if unrolled is not None else flat
                findings.extend(_rule_findings(rule, view, asked, scope_name, path, env))
            else:
                findings.extend(_rule_findings(rule, flat, asked, scope_name, path, env))
        except BudgetExceeded:
            problems.append(Problem(f"matching gave up in {scope_name} (pattern too ambiguous)",
                                    forward.span, path, Severity.WARNING, rule.id))
        except Exception as exc:
            problems.append(Problem(f"rule failed in {scope_name}: {type(exc).__name__}: {exc}",
                                    forward.span, path, Severity.WARNING, rule.id))
        if kept is not None and isinstance(asked, _AskedInit):
            kept[rule.id] = _RuleResult(tuple(asked.asked), tuple(findings[found:]), tuple(problems[failed:]))


def with_callees_checked(text: str, module_file: ModuleFile, findings: tuple[Finding, ...],
                         unreduced: Sequence[Finding], memo: StatementMemo | None = None) -> tuple[Finding, ...]:
    """A file's reduced findings, each written in a callee detection-only where the file calls or uses that callee
    other than as this site (`engine.called_elsewhere.with_unseen_calls`); `unreduced`: every scope's findings
    before `reduce_sites`; `memo`: the tables of the statements the caller's earlier texts had
    (`engine.file_uses`)."""
    forwards: dict[str, Forward] = {fn.name: fn for fn in module_file.functions}
    forwards.update((a.name, a.forward) for a in (*module_file.chains, *module_file.architectures)
                    if a.forward is not None)
    try:
        return with_unseen_calls(text, findings, unreduced, forwards, _unrolled, memo)
    except Exception as exc:  # the check failing never leaves a site in a callee called fixable
        return with_calls_unknown(findings, _unrolled, f"the check of its other calls failed ({type(exc).__name__}: "
                                  f"{exc})")


def _one_per_site(findings: list[Finding], class_spans: dict[str, Span]) -> list[Finding]:
    """One finding per rule and source site: a forward inherited by a subclass is the same code.

    The finding of the class whose body holds the code wins (its `__init__` is the one to edit). A match
    made only of a container's items (`self.proj[0]`, `self.proj[1]`: the layers of one `nn.Sequential`)
    has its site in `__init__`, where the container is built: calling the container twice is one site,
    reported at its first call, whose statements are every call's (`return x + self.conv(x)` in one branch
    and `return self.conv(x)` in the other both run it; a fix edits the container's construction alone).
    """
    best: dict[tuple[str, tuple[object, ...]], Finding] = {}
    for f in findings:
        items = _called_items(f.match.ops)
        # Items written in different places (two subclasses' Sequentials run by one inherited forward) are
        # different source sites even when the forward's spans and item indices are the same.
        spans: tuple[object, ...] = (*sorted((op.span for op in f.match.ops), key=_span_key),
                                     *_item_targets(f.match.ops), *item_spans(f), *_application(f))
        key: tuple[str, tuple[object, ...]] = (f.rule_id, (*items, *f.init_spans) if items else spans)
        old = best.get(key)
        if old is None:
            best[key] = f
            continue
        if items and old.scope_name == f.scope_name:
            first, other = (f, old) if _span_key(f.span) < _span_key(old.span) else (old, f)
            calls = sorted({*first.stmt_spans, *other.stmt_spans}, key=_span_key)
            best[key] = first if len(calls) == len(first.stmt_spans) else replace(first, stmt_spans=tuple(calls))
            continue
        here = class_spans.get(f.scope_name)
        if here is not None and here.contains(f.span) and not (
                (there := class_spans.get(old.scope_name)) is not None and there.contains(old.span)):
            best[key] = f
        dropped = old if best[key] is f else f
        if dropped.call_spans:
            best[key] = _with_calls(best[key], dropped.call_spans)
    # A helper's own site (the function matched as a scope of its own) is reported at its applications.
    applied = {(rule, spans[:-1]) for (rule, spans), f in best.items() if _application(f)}
    return [f for key, f in best.items() if not applied or _application(f) or key not in applied]


def _application(f: Finding) -> tuple[Span, ...]:
    """The application a site is reported at, when it is not where its ops are written (a rotary helper
    applied at several places, `engine.applications`): each application is its own site."""
    return (f.span,) if f.span in f.call_spans else ()


def _with_calls(f: Finding, calls: tuple[Span, ...]) -> Finding:
    """`f` with `calls` (another scope's calls of the helper its site is in) among its statements."""
    extra = tuple(s for s in calls if s not in f.stmt_spans)
    if not extra:
        return f
    return replace(f, stmt_spans=(*f.stmt_spans, *extra),
                   call_spans=tuple(sorted((*f.call_spans, *extra), key=_span_key)))


def _through_factories(findings: list[Finding]) -> list[Finding]:
    """A site found through the layers of a container a same-file helper returns (`self.ff = FeedForward(dim)`,
    `FeedForward` returning `nn.Sequential(norm, Linear, GELU, Linear)`) and the same rule's site in that
    helper's own chain are one site. When the helper's chain has an automatic fix (conv-BN folded in place in
    its Sequential), the site is the helper's, where the fix applies, and its statements are the helper's
    and every call that runs the helper's container (`conv3 = self.conv3(x)` in each forward: the layers run
    there, as the statements of a container called twice are both calls); otherwise the forward's finding,
    covering the helper's lines too. Containers the helper built twice (`ff = FeedForward(dim)` and
    `context_ff = FeedForward(context_dim)`, `self.light_ff` and `self.heavy_ff`) run the same source lines:
    the same items of them are one site too, reported at the first forward call, whose statements are every
    call's."""
    chains = {(f.rule_id, f.scope_name): f for f in findings}
    merged: list[Finding] = []
    absorbed: set[int] = set()
    calls: dict[int, list[Span]] = {}
    first_of: dict[tuple[str, str, tuple[str, ...]], Finding] = {}
    for f in findings:
        factory = _factory_of(f)
        chain = chains.get((f.rule_id, factory)) if factory is not None else None
        if chain is not None and chain is not f:
            if chain.fixable:
                absorbed.add(id(f))
                calls.setdefault(id(chain), []).extend(f.stmt_spans)
            else:
                f = replace(f, init_spans=(*f.init_spans, *(s for s in chain.stmt_spans if s not in f.init_spans)))
                absorbed.add(id(chain))
                same = (f.rule_id, chain.scope_name, _positions(f.match.ops))
                first = first_of.setdefault(same, f)
                if first is not f:  # the same items of another container the helper built
                    absorbed.add(id(f))
                    calls.setdefault(id(first), []).extend(f.stmt_spans)
        merged.append(f)
    if not absorbed:
        return findings
    out: list[Finding] = []
    for f in merged:
        if id(f) in absorbed:
            continue
        extra = [s for s in dict.fromkeys(calls.get(id(f), ())) if s not in f.stmt_spans]
        out.append(replace(f, stmt_spans=(*f.stmt_spans, *sorted(extra, key=_span_key))) if extra else f)
    return out


def _positions(ops: Sequence[Op]) -> tuple[str, ...]:
    """Each layer's position inside the container it is an item of (`self.layers[*][2][1]` -> `[1]`), each
    other op's target (an `nn.GELU()` item read as `F.gelu`)."""
    return tuple(("[" + op.target.rsplit("[", 1)[1]) if op.kind is MODULE_OP and _ITEM.match(op.target)
                 else op.target for op in ops)


def _factory_of(f: Finding) -> str | None:
    """The same-file helper whose returned container a finding's layers are items of, else None."""
    # Layers called as items of a container; an `nn.GELU()` item is read as an `F.gelu` call whose origin is
    # the module call it was spelled from.
    modules = [op for op in f.match.ops if op.kind is MODULE_OP]
    if not modules or not _container_items(modules) or any(
            op.kind is not MODULE_OP and (op.origin is None or op.origin.kind is not MODULE_OP)
            for op in f.match.ops):
        return None
    names: set[str] = set()
    for b in f.match.bindings:
        level = [b.value] if isinstance(b.value, Ctor) else []
        if isinstance(b.value, Ctor) and b.value.lead:  # `self.features[0][1]`: the item at position 0 only
            lead = b.value.lead
            picked = {int(m.group(1)) for op in modules if (m := re.match(rf"self\.{b.attr}\[(\d+)\]", op.target))}
            level = [x for k in sorted(picked) if k < len(lead) and (x := lead[k]) is not None] or level
        for _ in range(4):
            names.update(c.origin[: -len(FACTORY_ORIGIN)] for c in level
                         if c.origin is not None and c.origin.endswith(FACTORY_ORIGIN))
            level = [i for c in level for i in c.items]
    return next(iter(names)) if len(names) == 1 else None


def _container_items(ops: Sequence[Op]) -> tuple[str, ...]:
    """The targets of a match whose ops are all calls of numbered container items, else ()."""
    targets = tuple(op.target for op in ops)
    if all(op.kind is MODULE_OP and _ITEM.match(op.target) for op in ops):
        return targets
    return ()


def _called_items(ops: Sequence[Op]) -> tuple[str, ...]:
    """The container items a match's ops all call, else (): an op spelled as a function from a call of the
    container itself (an `nn.GELU()` item of `self.mlp` read as `F.gelu`) counts as that container's, named
    by the function, when another op of the match is an item of the same container. So `Sequential(Linear,
    GELU)` run at two calls of one forward is one site, as a container of layers only already was."""
    items = [_item_target(op) for op in ops]
    containers = {t.rsplit("[", 1)[0] for t in items if t is not None}
    out: list[str] = []
    for op, item in zip(ops, items):
        origin = op.origin
        if item is not None:
            out.append(item)
        elif origin is not None and origin.kind is MODULE_OP and origin.target in containers:
            out.append(f"{origin.target}:{op.target}")
        else:
            return ()
    return tuple(out)


def _item_target(op: Op) -> str | None:
    """The numbered container item `op` calls (`self.net[2]`), itself or as the module it was spelled
    from (an `nn.GELU()` item read as `F.gelu`), else None."""
    if _ITEM.match(op.target):
        return op.target
    origin = op.origin
    if origin is not None and origin.kind is MODULE_OP and _ITEM.match(origin.target):
        return origin.target
    return None


def _item_targets(ops: Sequence[Op]) -> tuple[str, ...]:
    """The container items a match's ops call, sorted: items of one container called once share the call's
    span, so these tell two pairs of them apart."""
    return tuple(sorted(t for op in ops if (t := _item_target(op)) is not None))


# family -> the family whose larger matches may contain its matches (the group `_outside_larger_matches` reduces in)
_CONTAINING = {12: 11}


def _outside_larger_matches(findings: list[Finding]) -> list[Finding]:
    """Drop a finding whose ops all belong to a larger finding of the same family (the one-tensor RoPE
    inside the q/k pair): one site, reported by the rule that covers it whole.

    Two findings of one family on the same source spans are one site too: a helper applied to q and k
    through one `map(lambda t: ..., (q, k))` writes the pair's ops once, so the q/k rule and the one-tensor
    rule match the same text. The finding of more ops (the pair) is kept; on a tie, the first rule id.

    A LayerNorm contains an RMS normalisation (of the centred value): an RMSNorm match (family 12) inside a larger
    LayerNorm match (11) is that LayerNorm, so the two families are one group here (`_CONTAINING`). Findings
    reported at different applications of one helper are different sites (`_comparable`).
    """
    by_family: dict[int, list[tuple[frozenset[tuple[Span, str | None]], Finding]]] = {}
    for f in findings:
        # Items of one container called once share the call's span: which item each op is tells them apart.
        by_family.setdefault(_CONTAINING.get(f.family, f.family), []).append(
            (frozenset((op.span, _item_target(op)) for op in f.match.ops), f))
    kept: list[Finding] = []
    for group in by_family.values():
        for spans, f in group:
            if not any((spans < other or (spans == other and g is not f and _covers_more(g, f))) and _comparable(f, g)
                       for other, g in group):
                kept.append(f)
    return kept


def _comparable(f: Finding, g: Finding) -> bool:
    """Whether two findings may be one site: not when both are reported at applications of a helper, and at
    different ones (`engine.applications`: each application is a site of its own)."""
    a, b = _application(f), _application(g)
    return not a or not b or a == b


def _covers_more(g: Finding, f: Finding) -> bool:
    """Of two findings on the same spans, whether `g` is the one reported: more ops, else the first rule id."""
    return (len(g.match.ops), f.rule_id) > (len(f.match.ops), g.rule_id)


def _rule_findings(rule: Rule, flat: FlatForward, init: InitIndex, scope_name: str, path: str | None,
                   env: Environment) -> list[Finding]:
    raw = list(RuleMatcher(rule, flat, init).matches())
    if not raw:
        return []
    # Largest matches first (optional steps present), then source order; a node belongs to one site.
    raw.sort(key=lambda m: (-len(m.nodes), m.nodes))
    taken: set[int] = set()
    # Each site seen, with the index in `out` of its finding when it is not reported at an application.
    seen_sites: dict[tuple[tuple[Span, ...], tuple[str, ...], Span | None, tuple[Span, ...]], int | None] = {}
    out: list[Finding] = []
    # The nodes of each site's matches with the same constants (one per inlined call of a callee it is written in).
    copies: dict[tuple[object, ...], set[int]] = {}
    edits: list[tuple[object, ...]] = []
    for m in raw:
        if taken.intersection(m.nodes):
            continue
        ops = tuple(flat.nodes[n].op for n in m.nodes)
        if not _reach_allowed(rule, m, ops):
            continue  # reaches into a submodule read through at its call, which the rule does not allow
        if _kept_for_probabilities(rule, flat, m):
            taken.update(m.nodes)
            continue
        # Items of one container called once share the call's span: their targets tell two pairs apart.
        written = [op for op in ops if op is not None]
        if only_the_forward_reread(written):
            continue  # the forward's own site, found (or refused) where the forward is read
        # A rotary helper applied at several places is one site per application (`engine.applications`).
        group = application_group(written, flat.forward) if rule.family == ROTARY_FAMILY else None
        items = _item_targets(written)
        # Items of a container bound on two paths (`if expansion == 1: self.conv = nn.Sequential(...)` /
        # `else: self.conv = nn.Sequential(...)`) are built in two places: the binding the match read on its
        # path tells the two apart (the site of items is their construction, `_one_per_site`).
        site = (tuple(sorted((op.span for op in written), key=_span_key)), items,
                group[0] if group is not None else None,
                tuple(b.span for b in m.bindings) if items else ())
        taken.update(m.nodes)
        edit = (site[0], items, site[3], tuple((k, v) for k, v in m.env if v[0] != "ref"))
        copies.setdefault(edit, set()).update(m.nodes)
        if site in seen_sites:
            # The same source statements reached again (a helper inlined twice). A rotary helper reached through
            # another call (`self._compress(...)` rotating the keys, `q = rope(q)` the query) runs at both.
            if group is None and rule.family == ROTARY_FAMILY and (calls := _helper_calls(
                    tuple(written), flat.forward, [])) and (at := seen_sites[site]) is not None:
                out[at] = _with_calls(out[at], calls)
            continue
        seen_sites[site] = len(out) if group is None else None
        found = _finding(rule, flat, m, scope_name, path, env, init)
        out.append(_at_application(found, group, group_count(flat.forward, written_in(written)[-1]) > 1)
                   if group is not None else found)
        edits.append(edit)
    return [_every_call_a_site(f, flat, copies[e]) for f, e in zip(out, edits, strict=True)]


def _every_call_a_site(f: Finding, flat: FlatForward, matched: set[int]) -> Finding:
    """`f`, detection-only where it is written in a callee that another call in this scope runs without being this
    site (`engine.called_elsewhere`)."""
    if not f.fixable:
        return f
    reason = unmatched_call(flat, f.match.ops, matched, _unrolled)
    return f if reason is None else replace(f, fixable=False, no_fix_reason=reason)


def _at_application(f: Finding, group: tuple[Span, ...], several: bool) -> Finding:
    """`f` (a site wholly inside a helper) run at the calling statements `group`: among its statements and
    calls; reported at the first of them when the helper is applied at `several` groups (each is a site)."""
    written = [s for s in f.stmt_spans if s not in f.call_spans]
    calls = tuple(s for s in group if s not in written) if several else tuple(
        sorted({*f.call_spans, *(s for s in group if s not in written)}, key=_span_key))
    return replace(f, span=group[0] if several else f.span, stmt_spans=(*written, *calls), call_spans=calls)


def _helper_calls(ops: tuple[Op, ...], forward: Forward, stmt_spans: list[Span]) -> tuple[Span, ...]:
    """The statements of `forward` that call the same-file function every op of a match was inlined from
    (`Forward.calls`, in source order): the site is reported in the function, where its ops are written
    and a rewrite edits them, and runs at each of those calls (the helper inlined at two calls matches once,
    `_rule_findings`' `seen_sites`). Empty when an op is written in `forward` itself or the ops come
    through different calls."""
    if not ops or not forward.calls or any(not op.via for op in ops):
        return ()
    label = ops[0].via[0]
    if any(op.via[0] != label for op in ops):
        return ()
    found = [s for lab, s in forward.calls if lab == label and s not in stmt_spans]
    return tuple(sorted(dict.fromkeys(found), key=_span_key))


def _kept_for_probabilities(rule: Rule, flat: FlatForward, m: RawMatch) -> bool:
    """Whether an attention chain is the path kept for the probabilities beside an SDPA call, as
    `sdpa_chain` writes it and transformers' own SDPA classes do: it sits in the body of an `if` whose
    test asks for them (`output_attentions`, alone or as an operand of `or`), and the `else` calls
    `scaled_dot_product_attention`. There is nothing left to fix there: SDPA does not return the
    probabilities."""
    if rule.replacement is None or rule.replacement.strategy != "sdpa_chain":
        return False
    common = set.intersection(*(set(c for c in flat.nodes[n].ctx if c[0] == "b") for n in m.nodes))
    for _, bid, alt in common:
        tests = flat.tests.get(bid, ())
        if alt != 0 or not tests or not _asks_for_probabilities(tests[0]):
            continue
        if any((op := node.op) is not None and op.target.endswith("scaled_dot_product_attention")
               and ("b", bid, 1) in node.ctx for node in flat.nodes):
            return True
    return False


def _asks_for_probabilities(test: str) -> bool:
    """`output_attentions`, or `output_attentions or ...`."""
    try:
        node = ast.parse(test, mode="eval").body
    except SyntaxError:
        return False
    operands = node.values if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) else [node]
    return any(isinstance(v, ast.Name) and v.id == "output_attentions" for v in operands)


def _reach_allowed(rule: Rule, m: RawMatch, ops: tuple[Op | None, ...]) -> bool:
    """A match may use layers of a submodule read through at its call (`_unrolled`) only as the
    layers its rule's `inside_submodule($v)` guard names, and never consist of such layers alone (that
    submodule's own forward reports those)."""
    unrolled = [op for op in ops if op is not None and _unrolled(op)]
    if not unrolled:
        return True
    if len(unrolled) == len([op for op in ops if op is not None]):
        return False
    allowed: set[str] = set()
    env = dict(m.env)
    for g in rule.guards:
        if g.kind is INSIDE_SUBMODULE_GUARD:
            for arg in g.args:
                bound = env.get(arg.name) if isinstance(arg, PVar) else None
                if bound is not None and bound[0] == "mod":
                    allowed.add(str(bound[1]))
    return all(op.target in allowed or _added_parameter(op) for op in unrolled)


def _added_parameter(op: Op) -> bool:
    """The view's `+ self.<path>` of a submodule whose forward adds its own parameter to its last layer's output
    (`x = self.decoder(x) + self.bias`): part of that layer's reading, allowed beside it."""
    return (op.kind is OPERATOR_OP and op.target == "+" and len(op.args) == 2
            and isinstance(op.args[1], Expr) and op.args[1].text.startswith("self."))


def _unrolled(op: Op) -> bool:
    """Whether `op` is a layer of a same-file submodule the canonical pass read through at its call."""
    origin = op.origin
    # An item of a Sequential the forward runs (`self.body[1]`) has the Sequential's call as its origin; its
    # leaves sit at that call (a stateless item's spliced forward keeps the item class's spans: `_spliced`).
    return origin is not None and origin.kind is MODULE_OP and bool(op.via) and (
        op.via[-1] == origin.target or (op.via[-1].startswith(origin.target + "[") and op.span == origin.span))


def _called_alone(flat: FlatForward) -> Callable[[Op], bool]:
    """Whether a layer read through at its submodule's call is all that call runs (the submodule's forward
    is `return self.norm(x)`): the call computes the layer, so a rewrite may name the layer
    (`self.norm.norm`) in its place."""
    def alone(op: Op) -> bool:
        if "[" in op.via[-1]:
            return False  # an item of a Sequential: the fold would have to edit the Sequential's construction
        return sum(1 for n in flat.nodes if n.op is not None and _unrolled(n.op) and n.op.via == op.via
                   and n.op.span == op.span) == 1
    return alone


def _span_key(s: Span) -> tuple[int, int, int, int]:
    return (s.start_line, s.start_col, s.end_line, s.end_col)


def _value(bound: Bound) -> Value | str:
    if bound[0] == "ref":
        return Ref(bound[1])
    if bound[0] == "expr":
        return Expr(bound[1])
    return bound[1]


def _formula_reason(bindings: Sequence[Binding], ops: Sequence[Op], init: InitIndex | None) -> str | None:
    """`formula_reason` over the match's bindings and those of the module calls its ops were written as."""
    written = [b for a in written_modules(ops) for b in init.bindings_of(a)] if init is not None else []
    return formula_reason((*bindings, *written))


def _finding(rule: Rule, flat: FlatForward, m: RawMatch, scope_name: str, path: str | None,
             env: Environment, init: InitIndex | None = None) -> Finding:
    ops = tuple(op for op in (flat.nodes[n].op for n in m.nodes) if op is not None)
    stmt_spans: list[Span] = []
    for op in ops:
        if op.stmt_span not in stmt_spans:
            stmt_spans.append(op.stmt_span)
    # A layer read through at its submodule's call sits at that call, in this forward.
    depth = [len(op.via) - (1 if _unrolled(op) else 0) for op in ops]
    outer = min(depth)
    primary = [op.stmt_span for op, d in zip(ops, depth) if d == outer]
    first = min(primary, key=_span_key)
    last = max(primary, key=lambda s: (s.end_line, s.end_col))
    span = Span(first.start_line, first.start_col, last.end_line, last.end_col)
    offered = [t for t in rule.targets if env.offers(t)]
    offered.sort(key=lambda t: not t.preferred)
    fixable, reason = True, None
    if rule.replacement is None:
        fixable, reason = False, "this rule has no automatic rewrite"
    elif rule.targets and not offered:
        needs = "; ".join(f"{t.name}: {_needs(t.devices, t.packages, t.torch)}" for t in rule.targets)
        fixable, reason = False, f"no target is available in this environment ({needs})"
    elif (spelled := _spelling_reason(ops, einsum=rule.replacement.strategy in EINSUM_AWARE_STRATEGIES,
                                      sequential=rule.replacement.strategy in SEQUENTIAL_AWARE_STRATEGIES,
                                      items=rule.replacement.strategy in ITEM_AWARE_STRATEGIES,
                                      layouts=rule.replacement.strategy in LAYOUT_AWARE_STRATEGIES,
                                      alone=_called_alone(flat) if rule.replacement.strategy
                                      in WRAPPER_AWARE_STRATEGIES else None)) is not None:
        fixable, reason = False, spelled
    elif (resolved := subclass_reason(m.bindings) or inherited_reason(m.bindings) or foreign_reason(ops)
                       or chosen_class_reason(ops) or handed_reason(ops)
                       or unrolled_reason(ops) or linear_like_reason(m.bindings) or chosen_layer_reason(m.bindings)
                       or _formula_reason(m.bindings, ops, init)) is not None:
        fixable, reason = False, resolved
    elif m.used_elsewhere is not None:
        fixable, reason = False, m.used_elsewhere
    elif (rule.replacement.strategy in ONE_CALL_AWARE_STRATEGIES and (m.path_dependent or _straddle_reason(flat, m))
          and _one_statement_of_calls(flat, m)):
        reason = _straddle_reason(flat, m, aware=True)  # the loops are still checked
        fixable = reason is None
    elif m.path_dependent and rule.replacement.strategy not in PATH_AWARE_STRATEGIES:
        fixable, reason = False, PATH_DEPENDENT
    else:
        reason = _straddle_reason(flat, m, aware=rule.replacement.strategy in STRUCTURE_AWARE_STRATEGIES,
                                  branches=rule.replacement.strategy in BRANCH_AWARE_STRATEGIES) or split_call_reason(
            rule.replacement.strategy, ops)
        fixable = reason is None
    match = Match(ops, m.bindings, tuple((k, _value(v)) for k, v in m.env))
    calls = _helper_calls(ops, flat.forward, stmt_spans)
    return Finding(
        rule_id=rule.id, family=rule.family, severity=rule.severity, title=rule.title, message=rule.message,
        path=path, scope_name=scope_name, span=span, stmt_spans=(*stmt_spans, *calls), call_spans=calls,
        init_spans=_init_spans(m.bindings, ops) + _spelled_item_spans(m.bindings, ops, init), match=match,
        targets=tuple(t.name for t in offered), fixable=fixable, no_fix_reason=reason,
        path_dependent=m.path_dependent,
    )


def _init_spans(bindings: Sequence[Binding], ops: Sequence[Op]) -> tuple[Span, ...]:
    """The bindings' statements, and where the matched items of a Sequential built from a list filled in
    loops were written (`Binding.item_spans`: `layers.append(nn.Linear(...))` in the loop)."""
    spans: list[Span] = []
    for b in bindings:
        items = [b.item_spans[int(m.group(2))] for op in ops
                 if (m := _ONE_ITEM.match(_item_target(op) or "")) is not None and m.group(1) == b.attr
                 and int(m.group(2)) < len(b.item_spans)]
        # Items written inside the binding's own statement (a literal `nn.Sequential(...)`) stand for it:
        # each of its pairs is a site at its own items' lines.
        inside = bool(items) and all(b.span.contains(s) for s in items)
        for span in ([] if inside else [b.span]) + items:
            if span not in spans:
                spans.append(span)
    return tuple(spans)


_ONE_ITEM = re.compile(r"^self\.(\w+)\[(\d+)\]$")
_CONTAINER_CALL = re.compile(r"^self\.(\w+)(?:\[(\d+)\])?$")


def _spelled_item_spans(bindings: Sequence[Binding], ops: Sequence[Op], init: InitIndex | None) -> tuple[Span, ...]:
    """Where a stateless item of a Sequential that the match reads as the function it computes was built
    (`nn.Sequential(nn.Softmax(dim=-1), nn.Dropout(p))` called as `self.attend(s)`: the softmax's axis is
    written there), when the rule binds no layer of that Sequential: the item's span, else the binding's.
    The call and the constructor are one site, as for the Sequential children matched as layers."""
    if init is None:
        return ()
    bound = {b.attr for b in bindings}
    spans: list[Span] = []
    for op in ops:
        origin = op.origin
        if op.kind is MODULE_OP or origin is None or origin.kind is not MODULE_OP:
            continue
        m = _CONTAINER_CALL.match(origin.target)
        if m is None or m.group(1) in bound:
            continue
        found = init.bindings_of(m.group(1))
        if len(found) != 1 or found[0].condition is not None or not isinstance(found[0].value, Ctor):
            continue  # built on several paths: no one place to name
        b, ctor = found[0], found[0].value
        if m.group(2) is not None:
            picked = [int(m.group(2))]
        elif ctor.callee == SEQUENTIAL and ctor.items:
            picked = [i for i, item in enumerate(ctor.items)
                      if (spelled := MODULES.get(item.callee)) is not None and spelled.op == (op.kind.value, op.target)]
        else:
            continue  # a stateless module bound on its own: its call is the site
        span = b.item_spans[picked[0]] if len(picked) == 1 and picked[0] < len(b.item_spans) else b.span
        if span not in spans:
            spans.append(span)
    return tuple(spans)


def _spelling_reason(ops: tuple[Op, ...], einsum: bool = False, sequential: bool = False,
                     layouts: bool = False, items: bool = False,
                     alone: Callable[[Op], bool] | None = None) -> str | None:
    """Why a match written in a spelling the rewrites cannot edit has no automatic fix, else None; with
    `einsum`, the rule's strategy reads `einsum` products itself (and declines the ones it cannot); with
    `sequential`, it rewrites children of an `nn.Sequential` itself; with `layouts`, it reads keys laid out
    (..., d, n) itself; with `items`, it edits only statements spliced from a stateless item's forward and
    leaves the Sequential's children as built; with `alone`, it names a layer read through at its submodule's
    call when the call runs that layer and nothing else (`alone(op)`)."""
    for op in ops:
        origin = op.origin
        if origin is None:
            continue
        if _unrolled(op) and alone is not None and alone(op):
            continue
        if _unrolled(op):
            return (f"the matched layer `{op.target}` sits inside the submodule `{op.via[-1]}`; Adopter does "
                    "not rewrite across a submodule's boundary, so change it by hand")
        if (origin.kind is MODULE_OP and origin.target == SEQUENTIAL and not origin.args
                and origin.stmt_span != origin.span):
            return ("the layers are children of an nn.Sequential subclass whose own forward runs them (`for mod "
                    "in self`, `super().forward(x)`); building it as another Sequential would not change that forward, so change it "
                    "by hand")
        if items and origin.kind is MODULE_OP and (
                (origin.target == SEQUENTIAL and not origin.args) or op.target.startswith(origin.target + "[")
                or _spliced(op)):
            continue
        if sequential and origin.kind is MODULE_OP and (
                (origin.target == SEQUENTIAL and not origin.args) or op.target.startswith(origin.target + "[")):
            continue
        if origin.kind is MODULE_OP and origin.target == SEQUENTIAL and not origin.args:
            return ("the matched layers are built inside an nn.Sequential(...) outside any forward; Adopter "
                    "does not rewrite inside a Sequential, so change it by hand")
        if origin.kind is MODULE_OP and op.target.startswith(origin.target + "["):
            return (f"the matched layers are children of the nn.Sequential `{origin.target}`; Adopter does not "
                    "rewrite inside a Sequential, so change it by hand")
        if origin.kind is FUNCTION_OP and origin.target == "map" and not origin.args:
            return ("the match is computed by a lambda inside `map(...)`, for several values in one statement; "
                    "Adopter does not rewrite that statement for one of them, so change it by hand")
        if (op.kind is OPERATOR_OP and op.target in ("*", "/") and origin.kind is OPERATOR_OP
                and origin.target in ("*", "/")):
            return ("the scores are scaled by several factors one after another; Adopter does not fold them "
                    "into scaled_dot_product_attention's `scale`, so change it by hand")
        if layouts and op.target == "transpose" and (
                origin.target in ("permute", "einops.rearrange") or (origin.kind.value, origin.target) in _PRODUCTS):
            continue
        if op.target == "transpose" and (origin.kind.value, origin.target) in _PRODUCTS:
            return ("the matrix product is written in another layout (keys already laid out (..., d, n), or the "
                    "values multiplied by the transposed probabilities); SDPA takes q, k and v as (..., n, d), "
                    "and Adopter does not rewrite that layout")
        if einsum and origin.kind is FUNCTION_OP and origin.target in _EINSUM:
            continue
        if origin.kind is FUNCTION_OP and origin.target in ("torch.einsum", "torch.baddbmm", "einops.einsum"):
            return (f"the match is written with `{origin.target.rsplit('.', 1)[-1]}`; Adopter has no automatic "
                    "rewrite of that spelling yet")
        if op.target == "transpose" and (origin.target == "permute" or origin.target == "einops.rearrange"):
            return (f"the keys are laid out transposed by `{origin.target.rsplit('.', 1)[-1]}` (last two axes "
                    "swapped); SDPA takes them untransposed, and Adopter does not rewrite that layout")
    return None


def _spliced(op: Op) -> bool:
    """Whether `op` is an op of a stateless item's forward that the canonical pass spliced where its
    `nn.Sequential` runs it (`idioms.submodules.item_forwards`): it keeps the item class's span."""
    origin = op.origin
    return (origin is not None and origin.kind is MODULE_OP and bool(op.via) and op.kind is not MODULE_OP
            and (origin.target == SEQUENTIAL or op.via[-1].startswith(origin.target + "[")))


def _needs(devices: tuple[str, ...], packages: tuple[str, ...], torch: str | None) -> str:
    parts = [f"device {'/'.join(devices)}"]
    if packages:
        parts.append("package " + ", ".join(packages))
    if torch:
        parts.append(f"torch {torch}")
    return ", ".join(parts)


# Rewrite strategies that read the statements around a match themselves and decline what they cannot
# rewrite exactly: for them a match that straddles an `if` or an inlined helper is not refused up
# front. `sdpa_chain`: an attention mask added under `if mask is not None:` is passed as `attn_mask`;
# `fuse_qkv`: the head splits sit in a helper (`transpose_for_scores`), only the caller's
# projection statements are edited; `gated_chunked`: only the split and the product are edited, which
# must be statements of one block of one function (the projection and the activation's body stay).
STRUCTURE_AWARE_STRATEGIES = frozenset({"sdpa_chain", "fuse_qkv", "gated_chunked"})
# Strategies that edit a chain written with `einsum` products (`sdpa_chain`: `einsum("b h i d, b h j d
# -> b h i j", q, k)` is q·kᵀ with q and k as SDPA takes them).
EINSUM_AWARE_STRATEGIES = frozenset({"sdpa_chain"})
# Strategies that read keys laid out (..., d, n) themselves (`sdpa_chain`: `q @ k` with `k = k.permute(0, 2, 3,
# 1)`, a `rearrange` to `b h d n`, or a local already channels-first, is SDPA with `k.transpose(-2, -1)`).
LAYOUT_AWARE_STRATEGIES = frozenset({"sdpa_chain"})
_EINSUM = frozenset({"torch.einsum", "einops.einsum"})
# Spellings of a matrix product: a `transpose` the canonical pass inserted around one (`product_layouts`)
# reads a layout the rewrites do not edit.
_PRODUCTS = frozenset({("operator", "@"), ("function", "torch.matmul"), ("method", "matmul"),
                       ("function", "torch.bmm"), ("method", "bmm")})
# Strategies that rewrite a match whose layers are children of an `nn.Sequential` (`fold_conv_bn`: the
# Sequential is built as a subclass that folds each Conv -> BatchNorm pair, keeping every child and key).
SEQUENTIAL_AWARE_STRATEGIES = frozenset({"fold_conv_bn"})
# Strategies whose edit lands in the forward of a stateless same-file class built as an `nn.Sequential` item
# (spliced where the Sequential runs it, `idioms.submodules.item_forwards`), leaving the Sequential's children
# as built (`gated_chunked`: `x, gate = x.chunk(2, dim=-1); return x * F.gelu(gate)` in the item class
# becomes `fused_gated_activation(x, F.gelu)`, the same values for any input, so for every use of the class;
# the projection `nn.Linear` before it in the Sequential is not touched). The strategy declines a split or a
# product that is not one of those spliced statements.
ITEM_AWARE_STRATEGIES = frozenset({"gated_chunked"})
# Strategies that may name a layer read through at its submodule's call when that call runs the layer alone
# (`self.norm = Norm(c)`, `Norm.forward` is `return self.bn(x)`): `folded_conv_bn(x, self.conv, self.norm.bn)`
# computes what `self.norm(self.conv(x))` computes. A submodule that runs anything else keeps the call.
WRAPPER_AWARE_STRATEGIES = frozenset({"fold_conv_bn", "fold_linear_bn"})
# Strategies that rebuild the rewrite from the source text at the site and accept only a block of the
# matched statements alone (`sdpa_chain`): a value of the match that has another definition on another
# path (`k = self.k_norm(k)` with an `nn.Identity()` alternative, an `if self.fused_attn:` branch that binds
# the output too) is read as the same text in the same place, so the rewrite computes what the code did.
# `dropout_add_layer_norm`: only a chain ending each branch of an `if` alike, with the norm after it (each
# branch gets the fused call), else it declines with the refusal below.
# `fold_conv_bn`: a pair inside an `nn.Sequential` (the fold edits the Sequential's construction alone), or a
# pair in one statement (`bn(conv(x))` replaced in place, reading the same operand text).
# `gated_chunked`: the split value and the activation are read as the text of the split and the product,
# adjacent statements of one block (the activation's own `if`, as in diffusers' GEGLU.gelu, is kept).
PATH_AWARE_STRATEGIES = frozenset({"sdpa_chain", "dropout_add_layer_norm", "fold_conv_bn", "gated_chunked"})
PATH_DEPENDENT = ("a value of the match is redefined on another control-flow path, so the matched statements "
                  "do not always see the same value")
# Strategies that rewrite a match straddling an `if` themselves, and decline the straddles they cannot
# (`dropout_add_layer_norm`: a dropout-add chain just before an `if` whose branch starts with the norm moves
# into both branches, fused in the norm's).
BRANCH_AWARE_STRATEGIES = frozenset({"dropout_add_layer_norm"})


# Strategies that rewrite the matched statement in place, reading the same texts (`fuse_gate_up`: `self.act(...)`
# becomes the helper's `act` argument `self.act`): a match in one source statement whose only paths are those of a
# submodule bound conditionally (`self.act = act_layer() if act_layer else nn.Identity()`: the call runs the
# submodule on one path, passes its input on the other, at the same span) computes after the edit what it did
# before on every path (`_one_statement_of_calls`).
ONE_CALL_AWARE_STRATEGIES = frozenset({"fuse_gate_up"})


def _one_statement_of_calls(flat: FlatForward, m: RawMatch) -> bool:
    """Whether the match's ops are written in one statement, none inlined, and every other definition of a
    value they make is made at the span of the matched op making it (the alternatives of one call of a
    conditionally bound submodule, not of a conditional expression of the source)."""
    ops = [flat.nodes[n].op for n in m.nodes]
    if any(op is None or op.via for op in ops) or len({op.stmt_span for op in ops if op is not None}) != 1:
        return False
    for op in ops:
        assert op is not None
        for name in op.outputs:
            for d in flat.defs_of.get(name, ()):
                other = flat.nodes[d].op
                if other is None or other.span != op.span:
                    return False
    return True


def _straddle_reason(flat: FlatForward, m: RawMatch, aware: bool = False, branches: bool = False) -> str | None:
    """Why the matched statements cannot be edited in one place, or None when they can."""
    nodes = [flat.nodes[n] for n in m.nodes]
    # A layer read through at its submodule's call sits at that call, in the caller's code.
    vias = {n.op.via[:-1] if _unrolled(n.op) else n.op.via for n in nodes if n.op is not None}
    if len(vias) > 1 and not aware:
        return "the match spans an inlined helper and its caller; rewrite it by hand"
    branch_ctx = {tuple(c for c in n.ctx if c[0] == "b") for n in nodes}
    if len(branch_ctx) > 1 and not aware and not branches:
        return "the match straddles if/else branches; no single place to rewrite it"
    loop_ctx = {tuple(c for c in n.ctx if c[0] == "l") for n in nodes}
    if len(loop_ctx) > 1:
        return "the match straddles a loop body; no single place to rewrite it"
    return None
