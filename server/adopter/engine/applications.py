"""Where a rotary site written in a same-file helper is reported: at each application of the helper.

A helper that rotates one tensor (`def rope(x, dim): ...; return cat([x1 * cos - x2 * sin, ...])`) is written
once and applied where q and k are rotated: `q = rope(q, 1)` then `k = rope(k, 1)` on one path, `base =
rope(base, dim=1)` (q and k stacked) on another, `a = rope(self.a...)`, `b = rope(self.b...)` in a method the
forward calls. Each application is a rotary embedding of its own (`shared/design/RULES.md`, family 15: one site
per q/k pair, or per single application when the helper rotates one tensor), while the matcher sees the same
source spans at every inlining. `Forward.applications` records every inlined call, at any depth, with the names
its result is bound to, so a match inside the helper is traced to the call that produced it: the match's ops
carry the call's `via` and bind the call's result names.

The applications of one helper (one `via`) on one control-flow path (no `if` around them whose alternatives differ)
rotate one q/k pair: `q = rope(q)` and `k = rope(k)`, or the slices of one tensor rotated one by one and
concatenated (transformers' V-JEPA 2 axial rotary): one site, reported at the first (the q statement). A helper
applied on one such path only keeps its site in the helper, as before (the statements of the calls among its
statements); on several paths (mmpose: the self-attention path, the cross-attention path, the relative-bias
method), each path's applications are a site reported at their first call.
"""

from __future__ import annotations

from collections.abc import Sequence

from adopter.dsl.types import Forward, Op, Span

ROTARY_FAMILY = 15

Path = tuple[tuple[int, int], ...]
Application = tuple[tuple[str, ...], tuple[str, ...], Span, Path]
Call = tuple[Span, Path]


def application_group(ops: Sequence[Op], forward: Forward) -> tuple[Span, ...] | None:
    """The calling statements of the applications on the path of the one `ops` (a match wholly inside one
    inlined helper, `written_in`) came from, in source order; None when the ops are not all from one inlining
    or its call is not known for sure."""
    if not ops or not forward.applications:
        return None
    via = written_in(ops)  # ops of a helper the rotation calls in turn (`_multiply_by_i`) are still inside it
    if not via:
        return None
    names = {name for op in ops for name in op.outputs}
    calls = {(span, path) for v, outs, span, path in forward.applications if v == via and names.intersection(outs)}
    groups = _groups(forward.applications, via)
    if not calls:
        # The match ends before the value the call binds (`return torch.stack((r1, r2), -1).flatten(-2)` after
        # the rotation it matched): it came from the helper's only group of applications here, if it has one.
        return groups[0][0] if len(groups) == 1 and group_count(forward, via[-1]) == 1 else None
    # One call (`q = rope(q)`), or the calls of one group whose results the match rotates together (a q/k pair
    # matched through both applications of a helper that rotates one tensor).
    return next((spans for spans, members in groups if calls <= members), None)


def written_in(ops: Sequence[Op]) -> tuple[str, ...]:
    """The inlined callee every op of a match comes from (the longest common prefix of their `via`)."""
    common = ops[0].via
    for op in ops[1:]:
        n = 0
        while n < len(common) and n < len(op.via) and common[n] == op.via[n]:
            n += 1
        common = common[:n]
    return common


def group_count(forward: Forward, helper: str) -> int:
    """On how many paths the helper labelled `helper` (the last `via` entry) is applied, over every way to it."""
    vias = {v for v, _, _, _ in forward.applications if v and v[-1] == helper}
    return sum(len(_groups(forward.applications, v)) for v in vias)


def _groups(applications: Sequence[Application], via: tuple[str, ...]) -> list[tuple[tuple[Span, ...], set[Call]]]:
    """`via`'s applications joined where one's path lies on the other's (the alternatives around one call start
    the alternatives around the other: `q = rope(q)` before an `if` whose paths each rotate k), each group as its
    calling statements in source order and its members."""
    calls = list(dict.fromkeys((span, path) for v, _, span, path in applications if v == via))
    groups: list[set[Call]] = []
    for call in calls:
        joined = [g for g in groups if any(_on_one_path(call[1], other[1]) for other in g)]
        merged = {call}.union(*joined)
        groups = [g for g in groups if not any(g is j for j in joined)] + [merged]
    out = []
    for g in groups:
        spans = tuple(sorted({span for span, _ in g}, key=lambda s: (s.start_line, s.start_col, s.end_line, s.end_col)))
        out.append((spans, g))
    out.sort(key=lambda x: (x[0][0].start_line, x[0][0].start_col))
    return out


def _on_one_path(a: Path, b: Path) -> bool:
    """Whether two calls' alternatives agree as far as both go (one call's path holds the other's)."""
    n = min(len(a), len(b))
    return a[:n] == b[:n]
