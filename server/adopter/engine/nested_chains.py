"""A Sequential nested in a bound Sequential is one site: where it is built, not also where the outer one runs.

CompVis latent diffusion's `FeedForward` (copied into stable diffusion, audioldm, f5-tts and many more):

    project_in = nn.Sequential(nn.Linear(dim, inner_dim), nn.GELU())        # a chain (`chains.methods`)
    self.net = nn.Sequential(project_in, nn.Dropout(dropout), nn.Linear(inner_dim, dim_out))
    ...
    return self.net(x)                                                        # runs self.net[0][0], [0][1]

The inner `nn.Sequential(...)` is not bound to `self`, so it is a chain of `FeedForward.__init__` and its
layers are found there; the forward unrolls `self.net` into the same layers (`self.net[0][0]` and the GELU
read from `self.net[0][1]`) and finds them again. Both are one site, reported at the inner construction (a
fix edits that construction alone), whose statements are the chain's and the forward's that runs it, as
the statements of a container called twice are both calls (`sites._one_per_site`).

A forward finding joins a chain finding of the same rule in its class's `__init__` when every layer it
matched is an item of one Sequential nested at a fixed index path inside one `__init__` binding
(`self.net[0][k]`; an op spelled from an item, the GELU read as `F.gelu`, has the outer call as origin),
and the chain's layers are those items: the same constructors (`Ctor` equality) at the same positions, the
same other ops in the same order. Of several such chains (two equal inner Sequentials) the one built
inside the binding's own statement (`nn.Sequential(nn.Sequential(...), ...)`) is taken, else the first.
"""

from __future__ import annotations

import re
from dataclasses import replace

from adopter.dsl.types import MODULE_OP, Ctor, Span
from adopter.engine.types import Finding

_NESTED_ITEM = re.compile(r"^self\.(\w+)((?:\[\d+\])+)\[(\d+)\]$")
_LAYER = re.compile(r"^self\.layer(\d+)$")
_INDEX = re.compile(r"\[(\d+)\]")

# (kind, target) per op, with a layer's target replaced by its position among the container's items.
Shape = tuple[tuple[str, str], ...]


def into_built_chains(findings: list[Finding]) -> list[Finding]:
    """`findings` with each forward finding of a nested Sequential's layers merged into the chain finding
    of that Sequential's construction (see the module doc); unchanged when there is none."""
    chains: dict[tuple[str, str], list[Finding]] = {}
    for f in findings:
        if f.scope_name.endswith(".__init__"):
            chains.setdefault((f.rule_id, f.scope_name), []).append(f)
    if not chains:
        return findings
    calls: dict[int, list[Span]] = {}
    absorbed: set[int] = set()
    for f in findings:
        candidates = chains.get((f.rule_id, f.scope_name + ".__init__"))
        nested = _nested_container(f) if candidates else None
        if nested is None or candidates is None:
            continue
        container, shape, statements = nested
        same = [g for g in candidates if _chain_shape(g, container) == shape]
        if not same:
            continue
        inside = [g for g in same if any(s.contains(g.span) for s in statements)]
        chain = min(inside or same, key=lambda g: _span_key(g.span))
        absorbed.add(id(f))
        calls.setdefault(id(chain), []).extend(f.stmt_spans)
    if not absorbed:
        return findings
    out: list[Finding] = []
    for f in findings:
        if id(f) in absorbed:
            continue
        extra = [s for s in dict.fromkeys(calls.get(id(f), ())) if s not in f.stmt_spans]
        out.append(replace(f, stmt_spans=tuple(sorted((*f.stmt_spans, *extra), key=_span_key))) if extra else f)
    return out


def _nested_container(f: Finding) -> tuple[Ctor, Shape, tuple[Span, ...]] | None:
    """The Sequential nested in an `__init__` binding whose items are every layer `f` matched, the shape of
    the match over its items, and the spans of the binding's statements; None for any other finding."""
    path: tuple[str, str] | None = None
    shape: list[tuple[str, str]] = []
    for op in f.match.ops:
        if op.kind is MODULE_OP:
            m = _NESTED_ITEM.match(op.target)
            if m is None or path not in (None, (m.group(1), m.group(2))):
                return None
            path = (m.group(1), m.group(2))
            shape.append(("item", m.group(3)))
        elif op.origin is not None and op.origin.kind is MODULE_OP and op.origin.target.startswith("self."):
            shape.append((op.kind.value, op.target))
        else:
            return None
    if path is None:
        return None
    attr, indices = path
    origins = {op.origin.target for op in f.match.ops if op.origin is not None and op.kind is not MODULE_OP}
    if origins - {f"self.{attr}"}:
        return None  # an op spelled from another container's item
    found: list[Ctor] = []
    bound = [b for b in f.match.bindings if b.attr == attr]
    for b in bound:
        ctor: Ctor | None = b.value if isinstance(b.value, Ctor) else None
        for i in (int(x) for x in _INDEX.findall(indices)):
            ctor = ctor.items[i] if ctor is not None and not ctor.repeat and i < len(ctor.items) else None
        if ctor is not None and ctor not in found:
            found.append(ctor)
    if len(found) != 1 or found[0].repeat or found[0].keys:
        return None
    return found[0], tuple(shape), tuple(b.span for b in bound)


def _chain_shape(g: Finding, container: Ctor) -> Shape | None:
    """The shape of chain finding `g` over `container`'s items when its layers are those items (the same
    constructor at the same position), else None."""
    layers = {b.attr: b.value for b in g.match.bindings}
    shape: list[tuple[str, str]] = []
    for op in g.match.ops:
        if op.kind is MODULE_OP:
            m = _LAYER.match(op.target)
            i = int(m.group(1)) if m is not None else -1
            if not 0 <= i < len(container.items) or layers.get(f"layer{i}") != container.items[i]:
                return None
            shape.append(("item", str(i)))
        else:
            shape.append((op.kind.value, op.target))
    return tuple(shape)


def _span_key(s: Span) -> tuple[int, int, int, int]:
    return (s.start_line, s.start_col, s.end_line, s.end_col)

