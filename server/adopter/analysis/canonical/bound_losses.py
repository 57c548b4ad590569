"""A loss module bound to a local and called: `criterion = nn.CrossEntropyLoss(); criterion(logits, y)`.

The flow emits the constructor as a function op whose output is the local (`criterion`) and the later call
as a call of that local. Whatever the local is named (`loss_fct` in Hugging Face models, `criterion`,
`loss_fn`, `ce`), the call runs the module the local holds when the call is reached: the constructor the
reaching binding made. The canonical pass reads such a call as the function the module computes
(`F.cross_entropy` with the constructor's arguments as keywords), as it does `self.loss(x, y)` with
`self.loss = nn.CrossEntropyLoss()` bound in `__init__`.

The binding that reaches a call is the last one before it on the same path: a binding under one branch of an
`if` (or in a loop body) does not reach past it, and a local rebound by any op (`criterion = MSELoss()`, a
result written to the same name) holds that op's value, not the loss module.
"""

from __future__ import annotations

from adopter.analysis.canonical.spellings import CROSS_ENTROPY, MODULES
from adopter.dsl.types import CALL_OP, FUNCTION_OP, Block, Branch, Ctor, Loop, Op

# The loss modules read this way: the module spellings of cross-entropy (`torch.nn.CrossEntropyLoss`).
LOSS_MODULES = frozenset(name for name, spelled in MODULES.items() if spelled.op == CROSS_ENTROPY)


def bound_loss_calls(body: Block) -> dict[int, Ctor]:
    """`id` of each call of a local that holds a loss module where it is called -> the module's constructor."""
    found: dict[int, Ctor] = {}
    _walk(body, {}, found)
    return found


def _walk(block: Block, held: dict[str, Ctor], found: dict[int, Ctor]) -> set[str]:
    """Read `block` with `held` the loss modules locals hold on entry (updated in place); the names it binds."""
    bound: set[str] = set()
    for stmt in block:
        if isinstance(stmt, Op):
            if stmt.kind == CALL_OP and (ctor := held.get(stmt.target)) is not None:
                found[id(stmt)] = ctor
            for out in stmt.outputs:
                held.pop(out, None)
                bound.add(out)
            if (stmt.kind == FUNCTION_OP and stmt.target in LOSS_MODULES and len(stmt.outputs) == 1
                    and stmt.outputs[0].isidentifier()):
                held[stmt.outputs[0]] = Ctor(stmt.target, stmt.args, stmt.kwargs)
        elif isinstance(stmt, Branch):
            rebound: set[str] = set()  # the names any path binds: a binding before the `if` reaches past it otherwise
            for path in stmt.paths:
                rebound |= _walk(path, dict(held), found)
            bound |= rebound
            for name in rebound:
                held.pop(name, None)
        elif isinstance(stmt, Loop):
            # a name the body binds may hold, at a call before that binding, the value of the last iteration
            rebound = _bound_names(stmt.body)
            _walk(stmt.body, {k: v for k, v in held.items() if k not in rebound}, found)
            bound |= rebound
            for name in rebound:
                held.pop(name, None)
    return bound


def _bound_names(block: Block) -> set[str]:
    names: set[str] = set()
    for stmt in block:
        if isinstance(stmt, Op):
            names.update(stmt.outputs)
        elif isinstance(stmt, Branch):
            for path in stmt.paths:
                names |= _bound_names(path)
        elif isinstance(stmt, Loop):
            names |= _bound_names(stmt.body)
    return names
