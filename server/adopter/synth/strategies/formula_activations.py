"""Whether a module attribute may hold a same-file function computing the exact GELU (BERT's `def gelu(x)`).

The analysis reads such a function as `F.gelu` (`analysis.names.formula_functions`), so the Linear+GELU
rule matches; but `fused_linear_gelu` decides at run time by the callable's identity (`F.gelu`, the GELU
modules) and runs the original code for the user's own function. The fix would claim a fused kernel and
give none, so the strategy declines it when the attribute may be bound to such a function: directly
(`self.act = gelu`), through a same-file dict (`ACT2FN[config.hidden_act]` with `ACT2FN = {"gelu": gelu}`)
or a same-file helper returning it (`get_activation_fn(hidden_act)`), in any branch. The function as
f13's fix leaves it (`return F.gelu(x)`) counts too: the helper does not recognise it either.
"""

from __future__ import annotations

import ast

from adopter.analysis.names.formula_functions import exact_gelu

_DEPTH = 4  # helper returning a dict entry returning ...: a few hops, never a cycle


class _File:
    """The module-level functions and dict literals of one file, and which functions compute GELU."""

    def __init__(self, tree: ast.Module, source: str) -> None:
        self.source = source
        self.functions = {s.name: s for s in tree.body if isinstance(s, ast.FunctionDef)}
        self.tables = {t.id: s.value for s in tree.body if isinstance(s, ast.Assign) and isinstance(s.value, ast.Dict)
                       for t in s.targets if isinstance(t, ast.Name)}
        self.classes = {s.name: s for s in tree.body if isinstance(s, ast.ClassDef)}
        self._gelu: dict[str, bool] = {}

    def is_gelu(self, name: str) -> bool:
        if name not in self._gelu:
            node = self.functions.get(name)
            text = ast.get_source_segment(self.source, node) if node is not None else None
            self._gelu[name] = node is not None and text is not None and (exact_gelu(text) or _calls_gelu(node))
        return self._gelu[name]

    def reaches(self, expr: ast.expr | None, depth: int = _DEPTH) -> str | None:
        """The same-file GELU function `expr` may evaluate to, else None."""
        if expr is None or depth == 0:
            return None
        if isinstance(expr, ast.Name):
            return expr.id if self.is_gelu(expr.id) else None
        if isinstance(expr, ast.IfExp):
            return self.reaches(expr.body, depth) or self.reaches(expr.orelse, depth)
        if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Name) and expr.value.id in self.tables:
            return next((f for v in self.tables[expr.value.id].values if (f := self.reaches(v, depth - 1))), None)
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id in self.functions:
            returns = (n.value for n in ast.walk(self.functions[expr.func.id]) if isinstance(n, ast.Return))
            return next((f for v in returns if (f := self.reaches(v, depth - 1))), None)
        return None

    def class_chain(self, name: str) -> list[ast.ClassDef]:
        """The class `name` of this file and its same-file bases."""
        out: list[ast.ClassDef] = []
        todo = [name]
        while todo and len(out) < 16:
            cls = self.classes.get(todo.pop())
            if cls is not None and cls not in out:
                out.append(cls)
                todo.extend(b.id for b in cls.bases if isinstance(b, ast.Name))
        return out


def _calls_gelu(function: ast.FunctionDef) -> bool:
    """`def gelu(x): return F.gelu(x)`: what f13's fix makes of the formula (the next round must still decline)."""
    body = [s for s in function.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    params = function.args.args
    if len(body) != 1 or not isinstance(body[0], ast.Return) or len(params) != 1:
        return False
    call = body[0].value
    return (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "gelu"
            and not call.keywords and len(call.args) == 1 and isinstance(call.args[0], ast.Name)
            and call.args[0].id == params[0].arg)


def formula_function_held(tree: ast.Module, source: str, scope: str, target: str) -> str | None:
    """The name of a same-file exact-GELU function that the attribute `target` (`self.act`, read in class
    `scope`) may be bound to, else None. A deeper target (`self.mlp.act`) is looked up in every class."""
    file = _File(tree, source)
    if not file.functions:
        return None
    parts = target.split(".")
    attr = parts[-1]
    classes = file.class_chain(scope.split(".")[-1]) if len(parts) == 2 else list(file.classes.values())
    for cls in classes:
        for node in ast.walk(cls):
            if not isinstance(node, ast.Assign | ast.AnnAssign):
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Attribute) and t.attr == attr and isinstance(t.value, ast.Name)
                   and t.value.id == "self" for t in targets) and (found := file.reaches(node.value)):
                return found
    return None
