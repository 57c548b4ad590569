"""Same-file decorators that run the method they wrap once, with its own arguments.

lucidrains' autoregressive wrappers (x-transformers, PaLM, MEGA, token-shift-gpt and many more) decorate their
`generate` with a decorator of their own file:

    def eval_decorator(fn):
        def inner(model, *args, **kwargs):
            was_training = model.training
            model.eval()
            out = fn(model, *args, **kwargs)
            model.train(was_training)
            return out
        return inner

Calling the decorated method runs its body once with the arguments it was given, so what the body computes
is read as written (`entry_methods`). A decorator is read so only when its definition (one `def` of the same
file, read as text, never run) has exactly that shape: one parameter; its body a nested function (optionally
under `@wraps(fn)` / `@functools.wraps(fn)`) and `return` of it; the nested function calls the parameter exactly
once, at the top level of its body (an assignment, an expression or a `return`: not under a branch or a loop),
passing its own parameters in order (`*args`, `**kwargs` included) and naming the parameter nowhere else.
"""

from __future__ import annotations

import ast
from functools import lru_cache


@lru_cache(maxsize=256)
def runs_the_method_once(source: str) -> bool:
    """Whether `source` (one module-level `def`) is a decorator of the shape above."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef):
        return False
    outer = tree.body[0]
    a = outer.args
    if outer.decorator_list or len(a.args) != 1 or a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults:
        return False
    fn = a.args[0].arg
    body = [s for s in outer.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 2 or not isinstance(body[0], ast.FunctionDef) or not isinstance(body[1], ast.Return):
        return False
    inner, ret = body[0], body[1]
    if not (isinstance(ret.value, ast.Name) and ret.value.id == inner.name):
        return False
    if not all(_wraps(d, fn) for d in inner.decorator_list):
        return False
    return _calls_once_with_its_arguments(inner, fn)


def _wraps(node: ast.expr, fn: str) -> bool:
    """`@wraps(fn)` / `@functools.wraps(fn)`: copies the name and docstring, runs nothing."""
    return (isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords
            and isinstance(node.args[0], ast.Name) and node.args[0].id == fn
            and ast.unparse(node.func) in ("wraps", "functools.wraps"))


def _calls_once_with_its_arguments(inner: ast.FunctionDef, fn: str) -> bool:
    a = inner.args
    if a.kwonlyargs or a.posonlyargs or a.defaults:
        return False
    mentions = [n for stmt in inner.body for n in ast.walk(stmt) if isinstance(n, ast.Name) and n.id == fn]
    calls = [c for stmt in inner.body if (c := _top_call(stmt, fn)) is not None]
    if len(mentions) != 1 or len(calls) != 1:
        return False
    expected = [p.arg for p in a.args] + ([f"*{a.vararg.arg}"] if a.vararg else []) + (
        [f"**{a.kwarg.arg}"] if a.kwarg else [])
    given = [ast.unparse(x) for x in calls[0].args] + [
        f"**{ast.unparse(k.value)}" if k.arg is None else f"{k.arg}={ast.unparse(k.value)}" for k in calls[0].keywords]
    return given == expected


def _top_call(stmt: ast.stmt, fn: str) -> ast.Call | None:
    """The call of `fn` a statement of the nested function's own body makes at its top (`out = fn(...)`,
    `return fn(...)`, `fn(...)`)."""
    value = stmt.value if isinstance(stmt, ast.Assign | ast.Return | ast.Expr) else None
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == fn:
        return value
    return None
