"""Where a rotary site written in a same-file helper is reported: at each application of the helper.

A helper that rotates one tensor (`def rope(x, dim): ...; return cat([x1 * cos - x2 * sin, ...])`) is written
once and applied where q and k are rotated: `q = rope(q, 1)` then `k = rope(k, 1)` on one path, `base =
rope(base, dim=1)` (q and k stacked) on another, `a = rope(self.a...)`, `b = rope(self.b...)` in a method the
forward calls. Each application is a rotary embedding of its own (`shared/design/RULES.md`, family 15: one site
per q/k pair, or per single application when the helper rotates one tensor), while the matcher sees the same
source spans at every inlining. `Forward.applications` records every inlined call, at any depth, with the names
its result is bound to, so a match inside the helper is traced to the call that produced it: the match's ops
carry the call's `via` and bind the call's result names.

Applications of one helper (one `via`) in consecutive statements (`q = rope(q)`, `k = rope(k)`: the next starts on
the line after the previous ends) are one q/k pair, one site, reported at the first (the q statement). A helper
applied at one such group only keeps its site in the helper, as before (the statements of the calls among its
statements); at several groups, each group is a site reported at its first application.
"""

from __future__ import annotations

from collections.abc import Sequence

from adopter.dsl.types import Forward, Op, Span

ROTARY_FAMILY = 15

Application = tuple[tuple[str, ...], tuple[str, ...], Span]


def application_group(ops: Sequence[Op], forward: Forward) -> tuple[Span, ...] | None:
    """The calling statements of the q/k pair `ops` (a match wholly inside one inlined helper) belongs to,
    in source order; None when the ops are not all from one inlining or its call is not known for sure."""
    if not ops or not forward.applications:
        return None
    via = ops[0].via
    if not via or any(op.via != via for op in ops):
        return None
    names = {name for op in ops for name in op.outputs}
    calls = {span for v, outs, span in forward.applications if v == via and names.intersection(outs)}
    if len(calls) != 1:
        return None
    at = next(iter(calls))
    return next((g for g in _groups(forward.applications, via) if at in g), None)


def group_count(forward: Forward, helper: str) -> int:
    """How many q/k groups the helper labelled `helper` (the last `via` entry) is applied in, over every path
    to it."""
    vias = {v for v, _, _ in forward.applications if v and v[-1] == helper}
    return sum(len(_groups(forward.applications, v)) for v in vias)


def _groups(applications: Sequence[Application], via: tuple[str, ...]) -> list[tuple[Span, ...]]:
    """The calling statements of `via`'s applications, in source order, split where one does not follow
    the previous on the next line."""
    spans = sorted({span for v, _, span in applications if v == via},
                   key=lambda s: (s.start_line, s.start_col, s.end_line, s.end_col))
    groups: list[list[Span]] = []
    for s in spans:
        if groups and s.start_line <= groups[-1][-1].end_line + 1:
            groups[-1].append(s)
        else:
            groups.append([s])
    return [tuple(g) for g in groups]
