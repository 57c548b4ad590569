"""Forward parameters that a same-file caller passes one tensor for: SAM's `Attention.forward(self, q, k, v)`
projects each with its own Linear, and `TwoWayAttentionBlock` calls it as `self.self_attn(q=queries,
k=queries, v=queries)` (its other calls, and the cross-attention instances, pass different tensors).

For that call the three projections are one input's (family 9), so the site is reported in the callee, without
a fix: a fused rewrite of the class is not valid for the calls that pass different tensors. Read only from what
the analysis holds: a class of the file whose `__init__` binds `self.<attr> = Callee(...)` and whose forward
calls `self.<attr>(...)` with the same name in two or more of the callee's forward parameters (by position or
keyword). One name at one call is one value.
"""

from __future__ import annotations

from dataclasses import dataclass

from adopter.dsl.types import Ctor, ModuleFile, Op, OpKind, Ref, block_ops


@dataclass(frozen=True, slots=True)
class CallerAlias:
    """One call that passes one tensor for several of a class's forward parameters."""

    caller: str  # the calling class
    line: int  # 1-based line of the call
    names: frozenset[str]  # the callee's forward parameters given that tensor


def caller_aliases(module_file: ModuleFile) -> dict[str, tuple[CallerAlias, ...]]:
    """Class name -> the same-file calls of its instances that pass one tensor for several parameters."""
    classes = {a.name: a for a in module_file.architectures if a.forward is not None}
    out: dict[str, list[CallerAlias]] = {}
    for arch in module_file.architectures:
        if arch.init is None or arch.forward is None:
            continue
        held = {b.attr: b.value.callee for b in arch.init.bindings
                if isinstance(b.value, Ctor) and b.value.callee in classes and b.value.callee != arch.name}
        if not held:
            continue
        for op in block_ops(arch.forward.body):
            callee = held.get(op.target.removeprefix("self.")) if op.kind is OpKind.MODULE else None
            if callee is None or not op.target.startswith("self."):
                continue
            params = [p.name for p in classes[callee].forward.params]  # type: ignore[union-attr]
            for names in _shared(op, params):
                out.setdefault(callee, []).append(CallerAlias(arch.name, op.span.start_line + 1, names))
    return {name: tuple(found) for name, found in out.items()}


def _shared(op: Op, params: list[str]) -> list[frozenset[str]]:
    """Groups of `params` that `op` passes one name for."""
    given: dict[str, set[str]] = {}
    for param, value in zip(params, op.args):
        if isinstance(value, Ref):
            given.setdefault(value.name, set()).add(param)
    for kw in op.kwargs:
        if kw.name in params and isinstance(kw.value, Ref):
            given.setdefault(kw.value.name, set()).add(kw.name)
    return [frozenset(g) for g in given.values() if len(g) > 1]
