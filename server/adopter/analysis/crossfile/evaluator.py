"""A small evaluator over constants, for what another file's code leaves evident without running it.

Cross-file reach reads a config class's `__init__` to learn the defaults of its fields (`self.hidden_act
= hidden_act` with `hidden_act="gelu"`), or, for a class without one (transformers 5's dataclass configs),
its class-level fields (`hidden_act: str = "gelu_new"`) over its bases' and then its `__post_init__`; and
the tests around a construction (`if config.is_gated_act:`) under those defaults. Names, `self.x`, `<obj>.x`, `str.split`, indexing, `len`, comparisons, `not`,
`and` and `or` over constants are evaluated; anything else is `UNKNOWN`. Reads stdlib `ast` nodes
(`ast_files.py`); never imports or runs anything.
"""

from __future__ import annotations

import ast
import re

UNKNOWN = object()
# Two or more names joined by dots, ASCII: Python parses it as an attribute (or fails to parse it), not a literal.
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


def literal(text: str) -> object:
    if _DOTTED.fullmatch(text) is not None:
        return UNKNOWN  # `config.hidden_act` (most keys read): an attribute, never a literal
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, TypeError, RecursionError):
        return UNKNOWN
    return value if isinstance(value, str | int | float | bool | type(None)) else UNKNOWN



def config_defaults(init: ast.FunctionDef) -> dict[str, object]:
    """`self.<field>` values after `__init__` runs with every parameter at its default, where evident."""
    args = init.args
    positional = args.posonlyargs + args.args
    env: dict[str, object] = {}
    for a, default in zip(positional[len(positional) - len(args.defaults):], args.defaults):
        env[a.arg] = evaluate(default, env, {})
    for a, kw_default in zip(args.kwonlyargs, args.kw_defaults):
        env[a.arg] = evaluate(kw_default, env, {}) if kw_default is not None else UNKNOWN
    fields: dict[str, object] = {}
    run_body(init.body, env, fields)
    return {k: v for k, v in fields.items() if v is not UNKNOWN}


def class_defaults(cls: ast.ClassDef, inherited: dict[str, object]) -> dict[str, object]:
    """`<instance>.<field>` values of a class with no `__init__` of its own, where evident: the bases'
    defaults (`inherited`), overridden by the class-level fields of its body (`hidden_act: str = "gelu"`,
    as a dataclass writes them), then by what its `__post_init__` assigns under those values."""
    fields = dict(inherited)
    env: dict[str, object] = {}
    for stmt in cls.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            value = evaluate(stmt.value, env, {})
            env[stmt.target.id] = fields[stmt.target.id] = value
    post = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__post_init__"), None)
    if post is not None:
        run_body(post.body, {}, fields)
    return {k: v for k, v in fields.items() if v is not UNKNOWN}


def run_body(body: list[ast.stmt], env: dict[str, object], fields: dict[str, object]) -> None:
    for stmt in body:
        if isinstance(stmt, ast.Assign):
            value = evaluate(stmt.value, env, fields)
            for target in stmt.targets:
                assign(target, value, env, fields)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            assign(stmt.target, evaluate(stmt.value, env, fields), env, fields)
        elif isinstance(stmt, ast.If):
            test = evaluate(stmt.test, env, fields)
            if test is UNKNOWN:  # either branch may run: what they assign is unknown
                for sub in ast.walk(stmt):
                    if isinstance(sub, ast.Assign | ast.AugAssign | ast.AnnAssign):
                        targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
                        for t in targets:
                            assign(t, UNKNOWN, env, fields)
            else:
                run_body(stmt.body if test else stmt.orelse, env, fields)
        elif isinstance(stmt, ast.AugAssign):
            assign(stmt.target, UNKNOWN, env, fields)
        elif isinstance(stmt, ast.For | ast.While | ast.With | ast.Try):
            for sub in ast.walk(stmt):
                if isinstance(sub, ast.Assign | ast.AugAssign | ast.AnnAssign):
                    targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
                    for t in targets:
                        assign(t, UNKNOWN, env, fields)


def assign(target: ast.AST, value: object, env: dict[str, object], fields: dict[str, object]) -> None:
    if isinstance(target, ast.Name):
        env[target.id] = value
    elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
        fields[target.attr] = value
    elif isinstance(target, ast.Tuple | ast.List):
        for t in target.elts:
            assign(t, UNKNOWN, env, fields)


def evaluate(node: ast.AST, env: dict[str, object], fields: dict[str, object],
           obj: tuple[str, dict[str, object]] | None = None) -> object:
    """A tiny evaluator over constants: names, `self.x` (and `<obj>.x` from `obj`'s values), `str.split`,
    indexing, comparisons, `not`, `and`, `or`."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str | int | float | bool | type(None)) else UNKNOWN
    if isinstance(node, ast.Name):
        return env.get(node.id, UNKNOWN)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return fields.get(node.attr, UNKNOWN)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and obj is not None \
            and node.value.id == obj[0]:
        return obj[1].get(node.attr, UNKNOWN)
    if isinstance(node, ast.Subscript):
        base, index = evaluate(node.value, env, fields, obj), evaluate(node.slice, env, fields, obj)
        if isinstance(base, tuple | str) and isinstance(index, int) and -len(base) <= index < len(base):
            return base[index]
        return UNKNOWN
    if isinstance(node, ast.UnaryOp):
        operand = evaluate(node.operand, env, fields, obj)
        if operand is UNKNOWN:
            return UNKNOWN
        if isinstance(node.op, ast.Not):
            return not operand
        if isinstance(node.op, ast.USub) and isinstance(operand, int | float):
            return -operand
        return UNKNOWN
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "split":
        receiver = evaluate(node.func.value, env, fields, obj)
        sep = [evaluate(a, env, fields, obj) for a in node.args]
        if isinstance(receiver, str) and all(isinstance(s, str) for s in sep) and len(sep) <= 1 and not node.keywords:
            return tuple(receiver.split(*sep))  # type: ignore[arg-type]
        return UNKNOWN
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len" and len(node.args) == 1:
        seq = evaluate(node.args[0], env, fields, obj)
        return len(seq) if isinstance(seq, tuple | str) else UNKNOWN
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, right = evaluate(node.left, env, fields, obj), evaluate(node.comparators[0], env, fields, obj)
        if left is UNKNOWN or right is UNKNOWN:
            return UNKNOWN
        op = node.ops[0]
        try:
            if isinstance(op, ast.Eq):
                return left == right
            if isinstance(op, ast.NotEq):
                return left != right
            if isinstance(op, ast.Gt | ast.Lt | ast.GtE | ast.LtE) and type(left) is type(right):
                return {ast.Gt: left > right, ast.Lt: left < right, ast.GtE: left >= right,  # type: ignore[operator]
                        ast.LtE: left <= right}[type(op)]  # type: ignore[operator]
            if isinstance(op, ast.Is) and right is None:
                return left is None
            if isinstance(op, ast.IsNot) and right is None:
                return left is not None
        except TypeError:
            return UNKNOWN
        return UNKNOWN
    if isinstance(node, ast.BoolOp):
        values = [evaluate(v, env, fields, obj) for v in node.values]
        if isinstance(node.op, ast.And):
            for v in values:
                if v is UNKNOWN:
                    return UNKNOWN
                if not v:
                    return v
            return values[-1]
        for v in values:
            if v is UNKNOWN:
                return UNKNOWN
            if v:
                return v
        return values[-1]
    return UNKNOWN


def truth(text: str, root: str, defaults: dict[str, object]) -> object:
    """The truth of a test under the config's defaults (`config.x` read from them), or unknown."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return UNKNOWN
    value = evaluate(node, {}, {}, (root, defaults))
    return UNKNOWN if value is UNKNOWN else bool(value)


def getattr_parts(text: str) -> tuple[str, str] | None:
    """`getattr(config, "field", default)` -> ("config", "field")."""
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return None
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
            and len(node.args) in (2, 3) and isinstance(node.args[0], ast.Name)
            and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
        return node.args[0].id, node.args[1].value
    return None
