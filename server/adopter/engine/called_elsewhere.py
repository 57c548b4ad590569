"""A site written inside a same-file function that the scope calls: fixable only where every call is that site.

The flow analysis inlines a call of a same-file function or method (`probs = attend(a, -1)`), so a rule matches
ops written in the callee's body, reached through the call (`Op.via`). A rewrite of such a site edits the callee's
own statements (`scores.softmax(dim)` becomes `liger_softmax(scores)`), and every call of the callee runs the
edited code. The edit is right only where each of those calls is a match of the same rule at the same source ops
with the same constants bound (`attend(a, 1)` beside `attend(a, -1)` is not: the softmax is then over axis 1, and
the rewrite would move it to the last axis).

Two checks, both leaving the site reported (only its fixability changes):
- in the scope the site is found in (`unmatched_call`): each inlined copy of each callee op belongs to a match of
  the same site with the same constants;
- in the file (`with_unseen_calls`): each use of the callee's name, and of each function on the way to it, is a
  call at a statement of one of the rule's findings at these ops, so calls from other classes and scopes that
  are not sites, and a callee used as a value (stored, passed as an argument, listed in `__all__`), refuse it.
Callers in other files are not seen.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from adopter.dsl.types import Forward, Op, Ref, Span
from adopter.engine.file_uses import PARSE_ERRORS, FileUses, StatementMemo, file_uses
from adopter.engine.flow import FlatForward
from adopter.engine.types import Finding

# Every reason given here names the callee this way: the file-level check reads the scope's refusals by it.
IN_CALLEE = "the site is written in the function `"


def callee_ops(ops: Sequence[Op], unrolled: Callable[[Op], bool]) -> list[Op]:
    """The ops of a match when every one is written in a same-file function or method the scope calls (not a layer
    of a submodule read through at its call, `unrolled`, nor an item of a container), else none: a match partly
    in the scope (the projections of a fused q/k/v in `forward`, their reshaping in `self._shape`) is rewritten
    in the scope, where a rule's rewrite may not touch the callee at all."""
    inner = [op for op in ops if op.via and not unrolled(op) and "[" not in op.via[-1]]
    return inner if len(inner) == len(ops) else []


def unmatched_call(flat: FlatForward, ops: Sequence[Op], matched: set[int],
                   unrolled: Callable[[Op], bool]) -> str | None:
    """Why a site whose ops are all in a callee cannot be rewritten there: the inlined copy of one of those ops at
    another call of the callee is not among the nodes `matched`, the nodes of this scope's matches of the same
    site with the same constants. None when every copy is, and where the copies of an op through one `via` are not
    one per call (`Forward.applications`: paths through the callee's branches copy its ops too), which call a copy
    came from is not known: no refusal is read from them."""
    for op in callee_ops(ops, unrolled):
        copies = [n for n in flat.nodes if n.op is not None and n.op.span == op.span and n.op.target == op.target]
        for via in dict.fromkeys(n.op.via for n in copies if n.op is not None):
            same = [n for n in copies if n.op is not None and n.op.via == via]
            calls = [span for v, _, span, _ in flat.forward.applications if v == via]
            if len(same) != len(calls):
                continue
            missing = next((i for i, n in enumerate(same) if n.index not in matched), None)
            if missing is not None:
                return (f"{IN_CALLEE}{_name(op.via[-1])}`, and its call at line {calls[missing].start_line + 1} in "
                        "this scope is not the same site (another axis, argument or pattern there): rewriting the "
                        "function would change that call")
    return None


def with_unseen_calls(text: str, findings: tuple[Finding, ...], unreduced: Sequence[Finding],
                      forwards: Mapping[str, Forward], unrolled: Callable[[Op], bool],
                      memo: StatementMemo | None = None) -> tuple[Finding, ...]:
    """`findings` (a file's, one per site) with each site written in a callee decided over the whole file:
    `unreduced` holds every scope's findings before they were made one per site.

    A site is fixable where the callee's own scope matches the rule at the same ops with the same constants,
    reached through no call (the match and its rewrite then hold whatever a caller passes), even if a scope refused
    it (`unmatched_call`). Otherwise it is detection-only where one scope refused it, where another scope's finding
    of it binds other constants (a rewrite writes the site's constants into the callee), or where the file uses the
    callee (or a function on the way to it) other than by a call on a line of one of the rule's findings there, or
    of a call on the way to its ops in the scope of one (`Forward.applications` of `forwards`, by scope name: the
    call of the function in the `forward` of a submodule the scope runs)."""
    keyed = [(f, _site_key(f, unrolled)) for f in findings]
    if not any(key and (f.fixable or _refused_here(f)) for f, key in keyed):
        return findings
    alone: dict[tuple[object, ...], list[dict[str, str]]] = {}  # sites the callee's own scope matches: constants
    covered: dict[tuple[object, ...], set[int]] = {}
    refused: dict[tuple[object, ...], str] = {}
    bound: dict[tuple[object, ...], list[Finding]] = {}  # the findings of each site, in every scope
    for f in (*unreduced, *findings):
        key = _site_key(f, unrolled)
        if not key:
            if f.fixable and f.match.ops:
                alone.setdefault(_site_key(f, lambda op: False, every=True), []).append(_constants(f))
            continue
        lines = covered.setdefault(key, set())
        for s in (*f.stmt_spans, *f.call_spans, *_calls_on_the_way(f, forwards.get(f.scope_name), unrolled)):
            lines.update(range(s.start_line + 1, s.end_line + 2))
        if _refused_here(f):
            refused.setdefault(key, f.no_fix_reason or "")
        bound.setdefault(key, []).append(f)
    uses: _Uses | None = None
    out: list[Finding] = []
    for f, key in keyed:
        if key and _constants(f) in alone.get(key, ()):
            if _refused_here(f):
                f = replace(f, fixable=True, no_fix_reason=None)
        elif key and f.fixable:
            reason = refused.get(key) or _other_constants(f, bound[key], callee_ops(f.match.ops, unrolled))
            if reason is None:
                if uses is None:
                    try:
                        uses = _Uses(file_uses(text, memo))
                    except PARSE_ERRORS:
                        callee = _name(callee_ops(f.match.ops, unrolled)[0].via[-1])
                        reason = f"{IN_CALLEE}{callee}`, and the file does not parse, so its other calls are not known"
                if uses is not None:
                    reason = uses.unseen(callee_ops(f.match.ops, unrolled), covered[key])
            if reason is not None:
                f = replace(f, fixable=False, no_fix_reason=reason)
        out.append(f)
    return tuple(out)


def with_calls_unknown(findings: tuple[Finding, ...], unrolled: Callable[[Op], bool], why: str) -> tuple[Finding, ...]:
    """`findings` with each fixable site written in a callee made detection-only because its other calls are not
    known (`why`: the file-wide check could not run)."""
    out: list[Finding] = []
    for f in findings:
        ops = callee_ops(f.match.ops, unrolled) if f.fixable else []
        if ops:
            f = replace(f, fixable=False, no_fix_reason=f"{IN_CALLEE}{_name(ops[0].via[-1])}`, and {why}, so they are "
                        "not known")
        out.append(f)
    return tuple(out)


def _other_constants(f: Finding, site: list[Finding], ops: Sequence[Op]) -> str | None:
    """Why `f` cannot be rewritten in its callee when another scope's finding of the same site binds other
    constants (`dim = 1` where `f` binds `dim = -1`): the rewrite writes one of them into the callee."""
    mine = _constants(f)
    for g in site:
        theirs = _constants(g)
        if theirs != mine:
            names = sorted(k for k in {*mine, *theirs} if mine.get(k) != theirs.get(k))
            shown = ", ".join(f"{k} = {theirs.get(k, '?')}" for k in names)
            at = f"the call at line {g.call_spans[0].start_line + 1} in `{g.scope_name}`" if g.call_spans \
                else f"a call in `{g.scope_name}`"
            return (f"{IN_CALLEE}{_name(ops[0].via[-1])}`, and {at} runs it with {shown} where this site has "
                    f"{', '.join(f'{k} = {mine.get(k, chr(63))}' for k in names)}: rewriting the function would "
                    "change that call")
    return None


def _constants(f: Finding) -> dict[str, str]:
    """What a match binds other than names of values (the axis, eps, a layer)."""
    return {k: getattr(v, "text", str(v)) for k, v in f.match.env if not isinstance(v, Ref)}


def _calls_on_the_way(f: Finding, forward: Forward | None, unrolled: Callable[[Op], bool]) -> list[Span]:
    """The calling statements, at any depth, of the calls `f`'s callee ops were inlined through in its scope."""
    if forward is None:
        return []
    vias = {op.via for op in callee_ops(f.match.ops, unrolled)}
    return [span for v, _, span, _ in forward.applications if any(via[:len(v)] == v for via in vias)]


def _refused_here(f: Finding) -> bool:
    return not f.fixable and (f.no_fix_reason or "").startswith(IN_CALLEE)


def _site_key(f: Finding, unrolled: Callable[[Op], bool], every: bool = False) -> tuple[object, ...]:
    """The rule and the source ops of `f` when all are written in a callee (`every`: all its ops, for a callee's
    own scope); () otherwise."""
    inner = list(f.match.ops) if every else callee_ops(f.match.ops, unrolled)
    return (f.rule_id, *_spans(inner)) if inner else ()


def _spans(ops: Sequence[Op]) -> list[tuple[tuple[int, int, int, int], str]]:
    return sorted(((op.span.start_line, op.span.start_col, op.span.end_line, op.span.end_col), op.target)
                  for op in ops)


def _name(label: str) -> str:
    return label.rsplit(".", 1)[-1]


class _Uses:
    """Where the file names each function (`engine.file_uses`): `name` (a function), `self.name` in the class that
    defines it and its same-file subclasses, `obj.name` on any other receiver (a method), and `__all__`'s strings."""

    def __init__(self, uses: FileUses) -> None:
        self.file = uses
        self.defs = uses.defs()
        self.bases = uses.bases
        self.exported = uses.exported

    def unseen(self, ops: Sequence[Op], covered: set[int]) -> str | None:
        """Why rewriting the callee of `ops` would change code that is not this site, or None: a use of the
        callee or of a function on the way to it that is not a call on the `covered` lines."""
        wanted: dict[tuple[str, str | None], None] = {}
        for op in ops:
            written = self._def_of(op.span)
            owner = written[1] if written is not None else None
            for label in op.via:
                wanted[(_name(label), (owner or "") if "." in label else None)] = None
            if written is not None:
                wanted[(written[0], owner)] = None
        callee = _name(ops[0].via[-1])
        for name, owner in wanted:
            if name in self.exported:
                return (f"{IN_CALLEE}{callee}`, and the file exports `{name}` (`__all__`): a caller elsewhere "
                        "may not be this site, and rewriting the function would change that call")
            for line, is_call in self._uses(name, owner):
                if not is_call:
                    return (f"{IN_CALLEE}{callee}`, and line {line} uses `{name}` as a value (stored or passed "
                            "on), so its calls are not all known: rewriting the function could change one that "
                            "is not this site")
                if line not in covered:
                    return (f"{IN_CALLEE}{callee}`, and the call of `{name}` at line {line} is not the same site "
                            "(another axis, argument or pattern, or a scope Adopter does not match): rewriting "
                            "the function would change that call")
        return None

    def _uses(self, name: str, owner: str | None) -> list[tuple[int, bool]]:
        """A function's uses (`owner` None), or a method's: on `self` in its class `owner` (\"\" when not known:
        every class) and the classes derived from it here, on any other receiver anywhere."""
        if owner is None:
            return self.file.names_of(name)
        family = self._derived(owner) if owner else None
        return [(line, called) for line, called, around in self.file.attrs_of(name)
                if around is None or family is None or around in family]

    def _derived(self, owner: str) -> set[str]:
        family = {owner}
        grown = True
        while grown:
            more = {c for c, bases in self.bases.items() if c not in family and bases & family}
            family |= more
            grown = bool(more)
        return family

    def _def_of(self, span: Span) -> tuple[str, str | None] | None:
        """The innermost function written around `span` (its name), and the class it is a method of."""
        line = span.start_line + 1
        around = [(name, first, cls) for name, first, last, cls in self.defs if first <= line <= last]
        innermost = max(around, key=lambda d: d[1], default=None)
        return (innermost[0], innermost[2]) if innermost is not None else None


