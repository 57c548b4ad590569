"""Same-file activation functions written as a formula: `def gelu(x): return x * 0.5 * (1.0 + torch.erf(x /
math.sqrt(2.0)))`.

BERT's original code and its many copies (pytorch-pretrained-bert, TAPE, ...) define the exact GELU as a
module-level function and pick it by name (`ACT2FN = {"gelu": gelu, ...}`, `get_activation_fn("gelu")`). A
module attribute holding that function is, for the rules, `F.gelu`. The function is recognised by what its
body computes, never by its name: a function of one parameter whose body (a docstring aside) is one `return`
of an arithmetic expression in that parameter; the expression is evaluated by a small interpreter of its
syntax tree (numbers, the parameter, `+ - * / **`, and `erf`, `sqrt`, `tanh`, `exp`, `pow` of `math` or
`torch`, `pi`), never by running the code, at a few points, and must agree with x·Φ(x) there.

From-scratch model code (BERT and GPT-2 ports, "GPT from scratch" packages) writes the activation as a module
instead: `class GELU(nn.Module)` whose `forward(self, x)` returns the exact formula or the tanh approximation
`0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x ** 3)))`. `gelu_approximation` reads such a forward
with the same interpreter (locals assigned once before the `return` are substituted into it) and says which
GELU it is: `"none"` (agrees with x·Φ(x) to 1e-12) or `"tanh"` (agrees with torch's tanh approximation to
1e-7: written constants such as `0.7978845608` are rounded; the exact and tanh forms differ by 1e-4 at the
points); `formula_gelu` answers it for a method of the analysed file (a tree-sitter node).
"""

from __future__ import annotations

import ast
import copy
import math
import textwrap
from collections.abc import Callable
from functools import lru_cache

from tree_sitter import Node

from adopter.analysis.names.ast_dotted import dotted_name
from adopter.analysis.parse.source import SourceText

_POINTS = (-2.75, -1.0, -0.3, 0.4, 1.3, 3.1)
_TOLERANCE = 1e-12  # the exact (erf) form only: the tanh approximation differs by ~1e-4
FORMULA_GELU = "; its forward writes the GELU formula out"  # `Ctor.origin` suffix of such a module: no fix
_TANH_TOLERANCE = 1e-7  # the tanh approximation with its constants rounded as written (`0.7978845608`)
_MAX_LOCALS = 8
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


def gelu_approximation(function: ast.FunctionDef) -> str | None:
    """`"none"` when `forward(self, x)` returns the exact GELU of `x`, `"tanh"` when it returns torch's tanh
    approximation of it, else None: one input, no decorator, a body (a docstring aside) of locals each assigned
    once from the arithmetic then one `return`, nothing else read (no `self.` attribute, no other name)."""
    a = function.args
    names = [p.arg for p in a.posonlyargs + a.args]
    if len(names) != 2 or a.vararg or a.kwarg or a.kwonlyargs or a.defaults or function.decorator_list:
        return None
    body = [s for s in function.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if not body or len(body) > _MAX_LOCALS or not isinstance(body[-1], ast.Return) or body[-1].value is None:
        return None
    x = names[1]
    local: dict[str, ast.expr] = {}
    for stmt in body[:-1]:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
            return None
        target = stmt.targets[0].id
        if target in local or target in names:
            return None  # rebound: the value read depends on the order, not worth following
        local[target] = _substituted(stmt.value, local)
    expr = _substituted(body[-1].value, local)
    try:
        values = [(_value(expr, x, p), p) for p in _POINTS]
    except (_NotArithmetic, ArithmeticError, ValueError, TypeError, RecursionError):
        return None
    if all(abs(v - _gelu(p)) <= _TOLERANCE * max(1.0, abs(p)) for v, p in values):
        return "none"
    if all(abs(v - _tanh_gelu(p)) <= _TANH_TOLERANCE * max(1.0, abs(p)) for v, p in values):
        return "tanh"
    return None


def formula_gelu(function: Node, src: SourceText) -> str | None:
    """`gelu_approximation` of a method of the analysed file, memoised per file (asked at every binding of its
    class and for its fingerprint)."""
    key = ("formula-gelu", function.start_byte)
    if key not in src.memo:
        src.memo[key] = _formula_gelu(" " * function.start_point[1] + src.text(function))
    return src.memo[key]  # type: ignore[return-value]


@lru_cache(maxsize=256)
def _formula_gelu(text: str) -> str | None:
    if "tanh" not in text and "erf" not in text:
        return None  # the cheap test first: neither form can be written without one
    try:
        tree = ast.parse(textwrap.dedent(text))
    except (SyntaxError, ValueError):
        return None
    function = tree.body[0] if len(tree.body) == 1 else None
    return gelu_approximation(function) if isinstance(function, ast.FunctionDef) else None


def _substituted(expr: ast.expr, local: dict[str, ast.expr]) -> ast.expr:
    """`expr` with each name of `local` replaced by the expression assigned to it (a copy; no visitor class, so
    the module compiles natively)."""
    if not local:
        return expr
    copied = copy.deepcopy(expr)
    if isinstance(copied, ast.Name):
        return local.get(copied.id, copied)
    for node in ast.walk(copied):
        for name, value in ast.iter_fields(node):
            if isinstance(value, ast.Name) and value.id in local:
                setattr(node, name, local[value.id])
            elif isinstance(value, list):
                value[:] = [local[v.id] if isinstance(v, ast.Name) and v.id in local else v for v in value]
    return copied


def _tanh_gelu(x: float) -> float:
    return 0.5 * x * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


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
    if isinstance(node, ast.Attribute) and node.attr == "pi" and dotted_name(node.value) in _MODULES:
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
        if f is not None and dotted_name(node.func.value) in _MODULES:
            return f(*(_value(arg, name, x) for arg in node.args))
        if f is not None:  # `x.pow(3)`, `t.erf()`: the method of the value
            return f(_value(node.func.value, name, x), *(_value(arg, name, x) for arg in node.args))
    raise _NotArithmetic


def _tensor_of_one_number(node: ast.Call) -> bool:
    """`torch.tensor(c)`, `torch.Tensor([c])` (a dtype or device keyword aside): a tensor holding one number."""
    if dotted_name(node.func) not in ("torch.tensor", "torch.Tensor", "torch.as_tensor") or len(node.args) != 1:
        return False
    if any(k.arg not in ("dtype", "device") for k in node.keywords):
        return False
    inner = node.args[0]
    return not isinstance(inner, ast.List | ast.Tuple) or (isinstance(inner, ast.List) and len(inner.elts) == 1)
