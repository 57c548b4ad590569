"""Renaming a local in statements already emitted: how an inlined callee's result takes the call's name.

When a callee returns one of its locals (`return h`), the ops that computed `h` are renamed to write
the output the caller asked for (`y = self.block(x)` -> the last op of the block writes `y`), instead of
adding a copy. Statements that do not mention the name are returned as they are, not copied.
"""

from __future__ import annotations

import re
from dataclasses import replace

from adopter.analysis.flow.state import FlowState
from adopter.dsl.types import Branch, Expr, Kwarg, Loop, Op, Ref, Stmt, Value


def rename_value(v: Value, old: str, new: str) -> Value:
    """`v` with the local `old` renamed to `new`; `v` itself when it does not mention `old`."""
    if isinstance(v, Ref):
        if v.name == old:
            return Ref(new)
        if v.name == "*" + old:
            return Ref("*" + new)
    elif old in v.text:  # `x.dtype` kept as text
        text = re.sub(rf"(?<![\w%]){re.escape(old)}(?!\w)", new, v.text)
        return v if text == v.text else Expr(text)
    return v


def _rename_values(values: tuple[Value, ...], old: str, new: str) -> tuple[Value, ...]:
    renamed = tuple(rename_value(v, old, new) for v in values)
    return values if all(a is b for a, b in zip(renamed, values)) else renamed


def _rename_block(block: tuple[Stmt, ...], old: str, new: str) -> tuple[Stmt, ...]:
    renamed = tuple(rename_stmt(s, old, new) for s in block)
    return block if all(a is b for a, b in zip(renamed, block)) else renamed


def rename_stmt(stmt: Stmt, old: str, new: str) -> Stmt:
    """`stmt` with the local `old` renamed to `new`; `stmt` itself (no copy) when nothing changes:
    a callee's returned local is renamed in every statement emitted since the call began."""
    if isinstance(stmt, Op):
        args = _rename_values(stmt.args, old, new)
        kwargs = stmt.kwargs
        if any(rename_value(k.value, old, new) is not k.value for k in kwargs):
            kwargs = tuple(Kwarg(k.name, rename_value(k.value, old, new)) for k in kwargs)
        outputs = tuple(new if o == old else o for o in stmt.outputs) if old in stmt.outputs else stmt.outputs
        if args is stmt.args and kwargs is stmt.kwargs and outputs is stmt.outputs:
            return stmt
        return replace(stmt, args=args, kwargs=kwargs, outputs=outputs)
    if isinstance(stmt, Branch):
        paths = tuple(_rename_block(p, old, new) for p in stmt.paths)
        if all(a is b for a, b in zip(paths, stmt.paths)):
            return stmt
        return replace(stmt, paths=paths)
    if isinstance(stmt, Loop):
        body = _rename_block(stmt.body, old, new)
        return stmt if body is stmt.body else replace(stmt, body=body)
    values = _rename_values(stmt.values, old, new)
    return stmt if values is stmt.values else replace(stmt, values=values)


def defines(stmt: Stmt, name: str) -> bool:
    """Whether `stmt` (or a statement nested in it) writes `name`."""
    if isinstance(stmt, Op):
        return name in stmt.outputs
    if isinstance(stmt, Branch):
        return any(defines(s, name) for p in stmt.paths for s in p)
    if isinstance(stmt, Loop):
        return any(defines(s, name) for s in stmt.body)
    return False


def rename_in_callee(state: FlowState, old: str, new: str) -> bool:
    """Rename the current callee's local `old` to `new` in everything it emitted so far and in its
    environment; False (and nothing renamed) when none of its statements writes `old`."""
    frame = state.frame
    lists = state.live[frame.start[0] :]
    found = False
    for k, lst in enumerate(lists):
        begin = frame.start[1] if k == 0 else 0
        if any(defines(s, old) for s in lst[begin:]):
            found = True
            break
    if not found:
        return False
    for k, lst in enumerate(lists):
        begin = frame.start[1] if k == 0 else 0
        for j in range(begin, len(lst)):
            lst[j] = rename_stmt(lst[j], old, new)
    frame.rewrite[old] = new
    for key, value in list(frame.env.items()):
        if isinstance(value, Ref) and value.name == old:
            frame.env[key] = Ref(new)
    return True
