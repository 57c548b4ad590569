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

from adopter.dsl.types import Op, Ref
from adopter.engine.applications import ROTARY_FAMILY
from adopter.engine.types import Finding


def one_rotation_per_function(findings: Sequence[Finding]) -> list[Finding]:
    """`findings` less each one-tensor rotary finding preceded by another rotary finding of its function."""
    groups: dict[tuple[object, ...], list[Finding]] = {}
    for f in findings:
        if f.family == ROTARY_FAMILY and f.span not in f.call_spans and f.match.ops:
            groups.setdefault((f.path, f.scope_name, _written_in(f.match.ops)), []).append(f)
    dropped: set[int] = set()
    for group in groups.values():
        if len(group) < 2:
            continue
        group.sort(key=lambda f: (f.span.start_line, f.span.start_col, f.rule_id))
        dropped.update(id(f) for f in group[1:] if _one_tensor(f.match.ops))
    if not dropped:
        return list(findings)
    return [f for f in findings if id(f) not in dropped]


def _written_in(ops: Sequence[Op]) -> tuple[str, ...]:
    """The inlined callee every op of a match comes from (the longest common prefix of their `via`)."""
    common = ops[0].via
    for op in ops[1:]:
        n = 0
        while n < len(common) and n < len(op.via) and common[n] == op.via[n]:
            n += 1
        common = common[:n]
    return common


def _one_tensor(ops: Sequence[Op]) -> bool:
    """Whether a match rotates one tensor: exactly one of the values it produces is read by none of its
    later ops (a q/k pair leaves two: the rotated q and the rotated k)."""
    results = 0
    for i, op in enumerate(ops):
        later = {v.name for o in ops[i + 1:] for v in (*o.args, *(k.value for k in o.kwargs)) if isinstance(v, Ref)}
        if any(name not in later for name in op.outputs):
            results += 1
    return results == 1
