"""One rotary site per function that rotates: a one-tensor rotation beside another rotation of it is that site.

Family 15 counts one site per q/k pair, or per application of a helper that rotates one tensor
(`shared/design/RULES.md`; `bench/data/realworld/LABELLING.md`: "one site per q/k pair, or per single
application when the helper rotates one tensor", at the q statement). The one-tensor rules
(`f15-rope-single`, `f15-rope-chunk-single`, the written-out rotations) match each rotation statement on its
own, so a function that rotates more than once was reported once per statement (issue 20; helper `prec8`'s
census of the checker's own findings over the dev corpora):

- q and k rotated one statement at a time, each with its own tables (`cos_k = cos.repeat(...)` for the keys
  of a cross-attention: transformers' SAM 2 video, SAM 3 tracker and EdgeTAM video 2-D rotary);
- v rotated beside the q/k pair in the same helper (transformers' CLVP): still that pair's site;
- the rotation returned from alternative branches of one helper: the partial-rotary branch and the full one
  (diffsynth's MiniMax VAE), the tables broadcast or not (birder), rotate-half or interleaved chosen by a flag
  (timm `apply_rot_embed`, sktime's FalconTST, whose one statement calls a helper with both forms and was
  reported twice at one line).

A one-tensor finding is therefore dropped when another family-15 finding of the same function (the same scope
and the same inlined callee the rotation is written in) comes first in the source: the kept one is the first
rotation, the q statement. Sites reported at a helper's applications (`engine.applications`: each path's q/k
calls) are sites of their own and are left alone, and so are functions whose findings all rotate pairs
(two helpers of one attention, DeepSeek-V3's interleaved and plain rotary, stay two sites).

Which findings rotate one tensor is read from the match, not from the rule's name: the values it produces
that none of its later ops reads are what it rotated (one tensor: one, a q/k pair: two).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from adopter.dsl.types import Op, Ref, Span
from adopter.engine.applications import ROTARY_FAMILY, written_in
from adopter.engine.types import Finding


def one_rotation_per_function(findings: Sequence[Finding]) -> list[Finding]:
    """`findings` less each one-tensor rotary finding preceded by another rotary finding of its function."""
    groups: dict[tuple[object, ...], list[Finding]] = {}
    for f in findings:
        if f.family == ROTARY_FAMILY and f.span not in f.call_spans and f.match.ops:
            groups.setdefault((f.path, f.scope_name, written_in(f.match.ops)), []).append(f)
    dropped: set[int] = set()
    for group in groups.values():
        if len(group) < 2:
            continue
        group.sort(key=lambda f: (f.span.start_line, f.span.start_col, f.rule_id))
        dropped.update(id(f) for f in group[1:] if _one_tensor(f.match.ops))
    if not dropped:
        return list(findings)
    return [f for f in findings if id(f) not in dropped]


def _one_tensor(ops: Sequence[Op]) -> bool:
    """Whether a match rotates one tensor: exactly one of the values it produces is read by none of its
    later ops (a q/k pair leaves two: the rotated q and the rotated k)."""
    results = 0
    for i, op in enumerate(ops):
        later = {v.name for o in ops[i + 1:] for v in (*o.args, *(k.value for k in o.kwargs)) if isinstance(v, Ref)}
        if any(name not in later for name in op.outputs):
            results += 1
    return results == 1


def one_site_per_application(findings: Sequence[Finding]) -> list[Finding]:
    """`findings` with each application, in its own function, of a helper that rotates one tensor reported as a
    site of its own, at that function's first call (the module doc of `engine.applications`, across functions).

    Every function that applies such a helper (a class's `forward`, a public entry method, a module-level
    function) has its findings written in the helper, with its own calls (`Finding.call_spans`); the sites of a
    file are one per source site (`engine.sites._one_per_site`), which would join them into one site at the
    helper's lines (nano-deepseek-v4: `apply_partial_rope` applied in four classes, each a site; yet-another-retnet:
    `_theta_shift` in `forward_parallel`, `forward_recurrent` and `forward_chunkwise`). They stay one site:

    - where one function's calls run another's (open-moonvit's `MoonViTAttention` calls `apply_rotary_2d`, whose
      own applications of `_rot` are the site) or two share calls (a forward a subclass inherits);
    - where the helper rotates a q/k pair written out in it (transformers' `apply_rotary_pos_emb` applied in
      `LlamaAttention` and `LlamaFlashAttention2`): one site, in the helper, which the one-tensor matches of its
      q and k statements lie inside.
    """
    groups: dict[tuple[Span, ...], list[Finding]] = {}
    spans_of: dict[int, frozenset[Span]] = {}
    for f in findings:
        if f.family == ROTARY_FAMILY and f.match.ops:
            spans = frozenset(op.span for op in f.match.ops)
            spans_of[id(f)] = spans
            if f.call_spans:
                groups.setdefault(tuple(sorted(spans, key=_span_key)), []).append(f)
    moved: dict[int, Finding] = {}
    for key, group in groups.items():
        inside = frozenset(key)
        if any(inside < other for other in spans_of.values()) or not _separate_applications(group):
            continue
        moved.update((id(f), replace(f, span=f.call_spans[0])) for f in group if f.span not in f.call_spans)
    if not moved:
        return list(findings)
    return [moved.get(id(f), f) for f in findings]


def _separate_applications(group: Sequence[Finding]) -> bool:
    """Whether findings at one helper's lines, with their functions' calls, are applications of a one-tensor
    helper in two functions or more, none of which runs another's (`one_site_per_application`)."""
    calls: dict[str, set[Span]] = {}
    for f in group:
        calls.setdefault(f.scope_name, set()).update(f.call_spans)
    # Functions with the same calls run one code (a forward a subclass inherits): one application.
    applied = list({frozenset(c) for c in calls.values()})
    if len(applied) < 2 or not all(_applies_one_tensor_helper(f.match.ops) for f in group):
        return False
    if any(a & b for i, a in enumerate(applied) for b in applied[i + 1:]):
        return False  # calls shared in part: not told apart here
    functions = {name.rsplit(".", 1)[-1] for name in calls}
    return not any(label.removeprefix("self.") in functions for f in group for label in written_in(f.match.ops))


def _applies_one_tensor_helper(ops: Sequence[Op]) -> bool:
    """Whether a match's rotation is written once in its helper: the values computed in the helper itself (not in
    a helper it calls, such as `rotate_half`) that no later op of the match reads all come from one statement.
    One application rotates one tensor there; a q/k pair matched through two applications of such a helper runs
    that statement twice (one span), where a pair written out in the helper (`q_embed = ...`, `k_embed = ...`)
    has a statement for each."""
    via = written_in(ops)
    results: set[Span] = set()
    for i, op in enumerate(ops):
        if op.via != via:
            continue
        later = {v.name for o in ops[i + 1:] for v in (*o.args, *(k.value for k in o.kwargs)) if isinstance(v, Ref)}
        if any(name not in later for name in op.outputs):
            results.add(op.span)
    return len(results) == 1


def _span_key(s: Span) -> tuple[int, int, int, int]:
    return (s.start_line, s.start_col, s.end_line, s.end_col)
