"""Where a same-file helper's container runs when it is passed to a wrapper class: `PreNormResidual(dim,
FeedForward(dim))` with `self.fn = fn` and `return self.fn(self.norm(x)) + x` (lucidrains' wrappers and
their many copies: `PreNorm`, `Residual`, `PreNormResidual`).

The helper's chain (`def FeedForward(...): return nn.Sequential(nn.Linear, nn.GELU(), ...)`) is reported in
the helper, where its layers are written; they run at the wrapper's `self.fn(...)`. Those statements are
the chain's too, as the statements of a container called twice are both calls (`sites._one_per_site`). Read
only from what the analysis already holds: the wrapper's `__init__` binds the parameter unchanged, on every
path, to an attribute its forward calls; the construction passes the helper's call as that argument, by
position or keyword, in any class's `__init__` of the same file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace

from adopter.dsl.types import (
    CALL_OP,
    KEYWORD_ONLY,
    MODULE_OP,
    POSITIONAL,
    Ctor,
    Expr,
    ModuleFile,
    Span,
    block_ops,
)
from adopter.engine.types import Finding

_CALL = re.compile(r"([A-Za-z_]\w*)\s*\(")


def chain_statements(module_file: ModuleFile) -> dict[int, tuple[Span, ...]]:
    """`id(chain)` -> the statements of other classes' forwards that run the chain's container: a helper's
    passed to a wrapper (`wrapper_statements`), a method's local handed to a same-file class that holds and
    calls it (`Architecture.passed_to`: torchvision's `downsample` passed to `block(...)`, run at
    `identity = self.downsample(x)`). Empty for most files."""
    if not module_file.chains:
        return {}
    held = _held_parameters(module_file)
    if not held:
        return {}
    wrapped = wrapper_statements(module_file, held)
    params = {a.name: a.init.params for a in module_file.architectures if a.init is not None}
    out: dict[int, tuple[Span, ...]] = {}
    for chain in module_file.chains:
        spans = list(wrapped.get(chain.name, ()))
        for passed in chain.passed_to:
            for cls in passed.classes:
                for (position, name), stmts in held.get(cls, {}).items():
                    by_position = passed.position == position and all(
                        p.kind is POSITIONAL for p in params[cls][:position + 1])
                    if by_position or name == passed.keyword:
                        spans.extend(s for s in stmts if s not in spans)
        if spans:
            out[id(chain)] = tuple(spans)
    return out


def wrapper_statements(module_file: ModuleFile, held: dict[str, dict[tuple[int, str], tuple[Span, ...]]] | None = None,
                       ) -> dict[str, tuple[Span, ...]]:
    """Helper name -> the wrapper statements that run the container it returns (empty for most files).
    `held`: `_held_parameters(module_file)` when the caller has it."""
    helpers = {c.name for c in module_file.chains}
    if not helpers:
        return {}
    held = _held_parameters(module_file) if held is None else held
    if not held:
        return {}
    out: dict[str, list[Span]] = {}
    for arch in module_file.architectures:
        for b in arch.init.bindings if arch.init is not None else ():
            if not isinstance(b.value, Ctor):
                continue
            for ctor in _ctors(b.value):
                for param, spans in held.get(ctor.callee, {}).items():
                    helper = _helper_passed(ctor, param)
                    if helper in helpers:
                        found = out.setdefault(helper, [])
                        found.extend(s for s in spans if s not in found)
    return {k: tuple(v) for k, v in out.items()}


def _held_parameters(module_file: ModuleFile) -> dict[str, dict[tuple[int, str], tuple[Span, ...]]]:
    """Class -> {(position, parameter): statements of its forward calling the attribute bound to it}."""
    held: dict[str, dict[tuple[int, str], tuple[Span, ...]]] = {}
    for arch in module_file.architectures:
        if arch.init is None or arch.forward is None:
            continue
        positions = {p.name: i for i, p in enumerate(arch.init.params)
                     if p.kind in (POSITIONAL, KEYWORD_ONLY)}
        counts: dict[str, int] = {}
        for b in arch.init.bindings:
            counts[b.attr] = counts.get(b.attr, 0) + 1
        bound = {b.attr: b.value.text for b in arch.init.bindings
                 if isinstance(b.value, Expr) and b.condition is None and counts[b.attr] == 1
                 and b.value.text in positions}
        if not bound:
            continue
        calls: dict[str, list[Span]] = {}
        for op in block_ops(arch.forward.body):
            attr = op.target[5:] if op.target.startswith("self.") else None
            if attr in bound and op.kind in (MODULE_OP, CALL_OP) and op.stmt_span not in calls.get(attr, []):
                calls.setdefault(attr, []).append(op.stmt_span)
        if calls:
            held[arch.name] = {(positions[bound[a]], bound[a]): tuple(s) for a, s in calls.items()}
    return held


def _helper_passed(ctor: Ctor, param: tuple[int, str]) -> str | None:
    """The helper whose call `ctor` passes as `param` (`FeedForward(dim)`), else None."""
    position, name = param
    value = next((k.value for k in ctor.kwargs if k.name == name), None)
    if value is None and position < len(ctor.args):
        value = ctor.args[position]
    if isinstance(value, Ctor):
        return value.callee
    if not isinstance(value, Expr) or not value.text.rstrip().endswith(")"):
        return None
    text = value.text.strip()
    m = _CALL.match(text)
    return m.group(1) if m is not None and _closing(text, m.end() - 1) == len(text) - 1 else None


def _closing(text: str, start: int) -> int:
    """The index of the parenthesis closing the one at `start` (-1: none); `FeedForward(d) + x` is no call."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i
    return -1


def _ctors(ctor: Ctor) -> Iterator[Ctor]:
    yield ctor
    for item in ctor.items:
        yield from _ctors(item)


def with_wrapper_statements(f: Finding, extra: dict[str, tuple[Span, ...]]) -> Finding:
    """`f` (a finding of a helper's chain) with the wrapper statements that run the helper's container."""
    return with_statements(f, extra.get(f.scope_name, ()))


def with_statements(f: Finding, spans: tuple[Span, ...]) -> Finding:
    """`f` (a finding of a chain) with `spans`, other statements that run the chain's container."""
    if not spans:
        return f
    merged = tuple(sorted({*f.stmt_spans, *spans}, key=lambda s: (s.start_line, s.start_col, s.end_line, s.end_col)))
    return f if merged == f.stmt_spans else replace(f, stmt_spans=merged)
