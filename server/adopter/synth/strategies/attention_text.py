"""Source-text helpers of the SDPA rewrite: positions in a statement's text, parsed operands, parentheses."""

from __future__ import annotations

import ast

from adopter.dsl.types import Span


def offset(text: str, stmt: Span, line: int, col: int) -> int:
    """The index in `text` (the source of statement `stmt`) of the position (line, col)."""
    lines = text.split("\n")
    rel = line - stmt.start_line
    base = sum(len(x) + 1 for x in lines[:rel])
    return base + (col - stmt.start_col if rel == 0 else col)


def expr_parts(text: str) -> tuple[ast.expr, str]:
    """Parse an expression's source (possibly spanning lines) for reading its operands; an augmented
    assignment (`attn += mask`) reads as the operation it performs (`attn + mask`)."""
    wrapped = "(" + text + "\n)"
    try:
        return ast.parse(wrapped, mode="eval").body, wrapped
    except SyntaxError:
        stmt = ast.parse(text).body
        if len(stmt) != 1 or not isinstance(stmt[0], ast.AugAssign):
            raise
        node = ast.BinOp(left=stmt[0].target, op=stmt[0].op, right=stmt[0].value)
        return ast.copy_location(node, stmt[0]), text


def chain_reads(expr: ast.expr, names: set[str]) -> list[str]:
    """How `expr` reads each of `names` it reads: "dtype" for `name.dtype`, "value" for any other read."""
    parents = {child: node for node in ast.walk(expr) for child in ast.iter_child_nodes(node)}
    out = []
    for node in ast.walk(expr):
        if isinstance(node, ast.Name) and node.id in names:
            parent = parents.get(node)
            out.append("dtype" if isinstance(parent, ast.Attribute) and parent.attr == "dtype" else "value")
    return out


def root_name(node: ast.expr) -> str | None:
    """The name an attribute or subscript chain starts from (`q` for `q[0].data`), else None."""
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def is_plain_number(text: str) -> bool:
    """A scale computed from numbers, settings and sizes (`math.sqrt(k.size(-1))`), not a tensor op."""
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return False
    allowed = (
        ast.Constant,
        ast.BinOp,
        ast.UnaryOp,
        ast.operator,
        ast.unaryop,
        ast.Call,
        ast.Attribute,
        ast.Name,
        ast.Load,
        ast.Subscript,
        ast.Slice,
    )
    for sub in ast.walk(node):
        if not isinstance(sub, allowed):
            return False
        if isinstance(sub, ast.Call) and not number_call(sub):
            return False
        if isinstance(sub, ast.Subscript) and not (
            isinstance(sub.value, ast.Attribute) and sub.value.attr == "shape"
        ):
            return False
    return True


def number_call(call: ast.Call) -> bool:
    """`math.*(...)`, `float/int/len(...)` and `x.size(...)` / `x.dim()` give Python numbers."""
    func = ast.unparse(call.func)
    if func.startswith("math.") or func in ("float", "int", "len"):
        return True
    return isinstance(call.func, ast.Attribute) and call.func.attr in ("size", "dim")


def paren_test(text: str) -> str:
    """A condition as an operand of `or`."""
    node = ast.parse(text, mode="eval").body
    return f"({text})" if isinstance(node, ast.BoolOp | ast.IfExp | ast.Lambda | ast.NamedExpr) else text


def is_flag(node: ast.expr) -> bool:
    """`output_attentions` (the parameter), as a condition."""
    return isinstance(node, ast.Name) and node.id == "output_attentions"


def is_keyword(text: str) -> bool:
    """Whether a call argument's text is `name=value`."""
    head = text.split("=", 1)[0]
    return "=" in text and head.isidentifier() and not text.split("=", 1)[1].startswith("=")


def paren_sum(text: str) -> str:
    """A term as an operand of `+` (parenthesised unless it binds at least as tightly)."""
    node = ast.parse(text, mode="eval").body
    loose = isinstance(node, ast.BoolOp | ast.IfExp | ast.Lambda | ast.NamedExpr | ast.Compare) or (
        isinstance(node, ast.BinOp) and not isinstance(node.op, ast.Mult | ast.Div | ast.MatMult | ast.Pow
                                                       | ast.FloorDiv | ast.Mod | ast.Add))
    return f"({text})" if loose else text


def paren(text: str) -> str:
    node = ast.parse(text, mode="eval").body
    return text if isinstance(node, ast.Name | ast.Attribute | ast.Call | ast.Constant) else f"({text})"


def names_read(text: str) -> set[str]:
    """The names an expression's text reads (none when it does not parse as an expression)."""
    try:
        return {n.id for n in ast.walk(ast.parse(text, mode="eval").body) if isinstance(n, ast.Name)}
    except SyntaxError:
        return set()
