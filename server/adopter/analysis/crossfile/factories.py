"""Factories that choose a layer class by a string key: how the key is spelled, and factories of factories.

`get_norm_layer(name)` looks `name.replace('_', '').lower()` up in a module-level table; `create_norm_layer(
name, num_features)` hands its `name` to `get_norm_layer` and calls the class it returns (timm's
`create_norm.py`). Both compute the table's layer for a literal key, so both are factories of that table.
The key's spelling (`lower`, `replace`, `split(...)[i]` ...) is applied to the literal as Python would;
anything else about it is not evident. Reads stdlib `ast` nodes; never imports or runs anything.
"""

from __future__ import annotations

import ast

from adopter.analysis.crossfile.ast_files import entry_class

# One string method applied to the key: the method's name and its constant arguments; ("[]", (i,)) indexes.
Step = tuple[str, tuple[object, ...]]

_METHODS = frozenset({"lower", "upper", "casefold", "strip", "lstrip", "rstrip", "replace", "split",
                      "removeprefix", "removesuffix"})
MAX_HOPS = 3  # locals followed back from the key (`layer_name = name.lower()`)


def key_steps(node: ast.expr, fn: ast.FunctionDef) -> tuple[ast.Name | None, tuple[Step, ...]]:
    """The name a lookup key is computed from, and the string methods applied to it in order: `R[n.lower()]`
    is (n, lower); a local assigned once in `fn` from such a chain is followed (`k = n.replace('_', '')`)."""
    steps: list[Step] = []
    line = getattr(node, "lineno", 0)
    for _ in range(MAX_HOPS + 1):
        node, outer = _peel(node)
        steps[:0] = outer
        if not isinstance(node, ast.Name):
            return None, ()
        value = _single_value(node.id, fn)
        if value is None or not _peel(value)[1]:
            return node, tuple(steps)
        root, inner = _peel(value)
        if isinstance(root, ast.Name) and root.id == node.id:
            # `act_fn = act_fn.lower()` (diffusers' `get_activation`): the parameter respelled in place, by a
            # statement of the function's own block before the lookup, so it runs first on every path.
            if not any(isinstance(s, ast.Assign) and s.value is value and s.lineno < line for s in fn.body):
                return None, ()
            return root, (*inner, *steps)
        node = value
    return None, ()


def _peel(node: ast.expr) -> tuple[ast.expr, list[Step]]:
    """`x.replace('_', '').lower()` -> (x, [replace, lower]); stops at anything that is not a string method
    with constant arguments, or an integer index of a `split`."""
    steps: list[Step] = []
    while True:
        if (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)
                and type(node.slice.value) is int and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Attribute) and node.value.func.attr == "split"):
            steps.insert(0, ("[]", (node.slice.value,)))
            node = node.value
            continue
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _METHODS
                and not node.keywords and all(isinstance(a, ast.Constant) and isinstance(a.value, str | int)
                                              for a in node.args)):
            steps.insert(0, (node.func.attr, tuple(a.value for a in node.args if isinstance(a, ast.Constant))))
            node = node.func.value
            continue
        return node, steps


def _single_value(name: str, fn: ast.FunctionDef) -> ast.expr | None:
    """What `name` is assigned, when `fn` assigns it exactly once (a plain `name = value`)."""
    values = [n.value for n in ast.walk(fn) if isinstance(n, ast.Assign) and len(n.targets) == 1
              and isinstance(n.targets[0], ast.Name) and n.targets[0].id == name]
    stores = sum(1 for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store))
    return values[0] if len(values) == 1 and stores == 1 else None


def apply_steps(key: str, steps: tuple[Step, ...]) -> str | None:
    """`key` with the steps applied, as the factory computes it; None when a step does not give a string."""
    value: object = key
    for method, args in steps:
        try:
            if method == "[]":
                value = value[args[0]] if isinstance(value, list) and isinstance(args[0], int) else None
            elif isinstance(value, str):
                value = getattr(value, method)(*args)
            else:
                return None
        except (IndexError, TypeError, ValueError):
            return None
    return value if isinstance(value, str) else None


def dict_entries(value: ast.Call, imports: dict[str, str]) -> list[tuple[str, str]]:
    """`dict(batchnorm=nn.BatchNorm2d, ...)`: the keyword entries that name a class, as a display's would."""
    if not (isinstance(value.func, ast.Name) and value.func.id == "dict") or value.args:
        return []
    out: list[tuple[str, str]] = []
    for k in value.keywords:
        target = entry_class(k.value, imports) if k.arg is not None else None
        if k.arg is not None and target is not None:
            out.append((k.arg, target))
    return out


def handed_on(fn: ast.FunctionDef, param: str) -> ast.Call | None:
    """The call `g(param, ...)` whose result `fn` returns, or calls and returns (`layer = g(name); m =
    layer(n, **kw); return m`), on every return; None for any other shape (a `return None` path, a result
    wrapped in something else, the parameter changed before the call)."""
    if any(isinstance(n, ast.Name) and n.id == param and isinstance(n.ctx, ast.Store) for n in ast.walk(fn)):
        return None
    calls = [n for n in ast.walk(fn) if isinstance(n, ast.Call) and n.args and isinstance(n.args[0], ast.Name)
             and n.args[0].id == param]
    if len(calls) != 1:
        return None
    handed = calls[0]
    built: set[str] = set()  # locals holding the handed call's result, or a call of it
    for stmt in ast.walk(fn):
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                and _builds(stmt.value, handed, built) and _single_value(stmt.targets[0].id, fn) is stmt.value):
            built.add(stmt.targets[0].id)
    returns = [n for n in ast.walk(fn) if isinstance(n, ast.Return)]
    if not returns or any(r.value is None or not _builds(r.value, handed, built) for r in returns):
        return None
    return handed


def _builds(node: ast.expr, handed: ast.Call, built: set[str]) -> bool:
    if node is handed or (isinstance(node, ast.Name) and node.id in built):
        return True
    return isinstance(node, ast.Call) and (node.func is handed or (
        isinstance(node.func, ast.Name) and node.func.id in built))


def returned_lambda(fn: ast.FunctionDef) -> ast.expr | None:
    """The body of the lambda `fn` returns as its one statement (a docstring aside): pytorchcv's
    `def lambda_batchnorm2d(eps=1e-5): return lambda num_features: nn.BatchNorm2d(num_features, eps=eps)`."""
    body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or not isinstance(body[0].value, ast.Lambda):
        return None
    return body[0].value.body


def is_function_test(node: ast.expr) -> str | None:
    """The name `isfunction(name)` / `inspect.isfunction(name)` tests, else None."""
    if (isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords
            and isinstance(node.args[0], ast.Name)
            and ((isinstance(node.func, ast.Name) and node.func.id == "isfunction")
                 or (isinstance(node.func, ast.Attribute) and node.func.attr == "isfunction"
                     and isinstance(node.func.value, ast.Name) and node.func.value.id == "inspect"))):
        return node.args[0].id
    return None
