"""Value types of the rule engine: matches and findings."""

from __future__ import annotations

from dataclasses import dataclass

from adopter.dsl.types import Binding, Op, Severity, Span, Value


@dataclass(frozen=True, slots=True)
class Match:
    """One occurrence of a rule's pattern: the ops and bindings it covers and what variables bound.

    `ops` are in path order; `env` maps pattern variable names (without `$`) to what they bound: a
    `Value` for forward values, an attribute path (`"self.query"`) for submodule variables.
    """

    ops: tuple[Op, ...]
    bindings: tuple[Binding, ...]
    env: tuple[tuple[str, Value | str], ...]


@dataclass(frozen=True, slots=True)
class Finding:
    """A site where a rule applies: one per site, whatever the number of control-flow paths."""

    rule_id: str
    family: int
    severity: Severity
    title: str
    message: str
    path: str | None
    scope_name: str  # the class name, or the function name for scope-"function" rules
    span: Span  # the primary range: from the first to the last statement of the match
    stmt_spans: tuple[Span, ...]  # every forward statement involved, in order
    init_spans: tuple[Span, ...]  # every __init__ binding involved
    match: Match
    targets: tuple[str, ...]  # names of the targets offered in this environment, preferred first
    fixable: bool
    no_fix_reason: str | None = None
    # A value of the match has another definition on another control-flow path (set for the strategies in
    # `engine.sites.PATH_AWARE_STRATEGIES`, which decide themselves whether they can rewrite it).
    path_dependent: bool = False
    # The statements of the scope that call the same-file function every matched op was inlined from (`q =
    # apply_rotary_pos_emb(pos, q)` for a site wholly inside the helper): also in `stmt_spans`, since the site
    # runs there, but not edited by a rewrite, which edits the helper's statements where the site is reported.
    call_spans: tuple[Span, ...] = ()
