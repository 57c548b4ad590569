"""Same-file activation functions written as a formula: `def gelu(x): return x * 0.5 * (1.0 + torch.erf(x /
math.sqrt(2.0)))`.

BERT's original code and its many copies (pytorch-pretrained-bert, TAPE, ...) define the exact GELU as a
module-level function and pick it by name (`ACT2FN = {"gelu": gelu, ...}`, `get_activation_fn("gelu")`). A
module attribute holding that function is, for the rules, `F.gelu`. The function is recognised by what its
body computes, never by its name: a function of one parameter whose body (a docstring aside) is one `return`
of an arithmetic expression in that parameter; the expression is evaluated by a small interpreter of its
syntax tree (numbers, the parameter, `+ - * / **`, and `erf`, `sqrt`, `tanh`, `exp`, `pow` of `math` or
`torch`, `pi`), never by running the code, at a few points, and must agree with x·Φ(x) there.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from functools import lru_cache

_POINTS = (-2.75, -1.0, -0.3, 0.4, 1.3, 3.1)
_TOLERANCE = 1e-12  # the exact (erf) form only: the tanh approximation differs by ~1e-4
_FUNCTIONS: dict[str, Callable[..., float]] = {
    "erf": math.erf, "sqrt": math.sqrt, "tanh": math.tanh, "exp": math.exp, "pow": math.pow,
}
_MODULES = frozenset({"math", "torch", "torch.special", "np", "numpy"})
_OPS: dict[type, Callable[[float, float], float]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b, ast.Pow: lambda a, b: a**b,
}


class _NotArithmetic(Exception):
    """The expression uses something the interpreter does not evaluate."""


def exact_gelu(source: str) -> bool:
    """Whether `source` (one `def`) is a function of one parameter returning the exact GELU of it."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    function = tree.body[0] if len(tree.body) == 1 else None
    if not isinstance(function, ast.FunctionDef) or function.decorator_list:
        return False
    a = function.args
    if len(a.args) != 1 or a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
        return False
    body = [s for s in function.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        return False
    expr, name = body[0].value, a.args[0].arg
    try:
        return all(abs(_value(expr, name, x) - _gelu(x)) <= _TOLERANCE * max(1.0, abs(x)) for x in _POINTS)
    except (_NotArithmetic, ArithmeticError, ValueError, TypeError, RecursionError):
        return False


@lru_cache(maxsize=1024)
def constant_value(text: str) -> float | None:
    """The number a constant expression's source text denotes (`torch.sqrt(torch.tensor(2.0 / torch.pi))`,
    `(2 / math.pi) ** 0.5`, `0.7978845608`), by the same interpreter; None for anything else (a name, a call it
    does not know). `torch.tensor(c)` / `torch.Tensor([c])` of one number stand for that number."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError):
        return None
    try:
        return _value(tree.body, "", math.nan)
    except (_NotArithmetic, ArithmeticError, ValueError, TypeError, RecursionError):
        return None


def _gelu(x: float) -> float:
    return 0.5 * x * (1.0 + math.erf(x / math.sqrt(2.0)))


def _value(node: ast.expr, name: str, x: float) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.Name) and node.id == name:
        return x
    if isinstance(node, ast.Attribute) and node.attr == "pi" and _dotted(node.value) in _MODULES:
        return math.pi
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        v = _value(node.operand, name, x)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_value(node.left, name, x), _value(node.right, name, x))
    if isinstance(node, ast.Call) and _tensor_of_one_number(node):  # `torch.tensor(2.0 / math.pi)`
        inner = node.args[0]
        return _value(inner.elts[0] if isinstance(inner, ast.List) else inner, name, x)
    if isinstance(node, ast.Call) and not node.keywords and isinstance(node.func, ast.Attribute):
        f = _FUNCTIONS.get(node.func.attr)
        if f is not None and _dotted(node.func.value) in _MODULES:
            return f(*(_value(arg, name, x) for arg in node.args))
        if f is not None:  # `x.pow(3)`, `t.erf()`: the method of the value
            return f(_value(node.func.value, name, x), *(_value(arg, name, x) for arg in node.args))
    raise _NotArithmetic


def _tensor_of_one_number(node: ast.Call) -> bool:
    """`torch.tensor(c)`, `torch.Tensor([c])` (a dtype or device keyword aside): a tensor holding one number."""
    if _dotted(node.func) not in ("torch.tensor", "torch.Tensor", "torch.as_tensor") or len(node.args) != 1:
        return False
    if any(k.arg not in ("dtype", "device") for k in node.keywords):
        return False
    inner = node.args[0]
    return not isinstance(inner, ast.List | ast.Tuple) or (isinstance(inner, ast.List) and len(inner.elts) == 1)


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner is not None else None
    return None
