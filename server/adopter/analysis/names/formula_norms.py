"""Module forwards that write a LayerNorm over the last axis out: mean, biased variance, normalise, scale, shift.

From-scratch model code (GPT-2 and BERT ports, "GPT from scratch" books) writes its own LayerNorm module:

    class LayerNorm(nn.Module):                   # sagar-neuron-gpt2 0.1.9, transfomer/layer_norm.py
        def __init__(self, emb_dim):
            super().__init__()
            self.eps = 1e-5
            self.scale = nn.Parameter(torch.ones(emb_dim))
            self.shift = nn.Parameter(torch.zeros(emb_dim))
        def forward(self, x):
            mean = x.mean(dim=-1, keepdim=True)
            var = x.var(dim=-1, keepdim=True, unbiased=False)
            norm_x = (x - mean) / torch.sqrt(var + self.eps)
            return self.scale * norm_x + self.shift

`layer_norm_roles` reads such a `forward(self, x)` (Python's `ast`, never run) by evaluating it, with a small
interpreter of its syntax, on fixed vectors standing for the last axis of the input: every attribute of `self`
it reads arithmetically is given a role (the weight, the bias: a vector; eps: a number), and the forward must
agree, for some assignment of roles, with `(x - E[x]) / sqrt(Var[x] + eps) * weight + bias` (biased variance;
the bias, or both weight and bias, may be absent) at every point, to 1e-9. eps is given a large value (0.37), so
that a forward placing it elsewhere (`/ (std + eps)`, an unbiased variance, a clamp) disagrees and is refused,
as the fused kernel would compute another value. A small literal constant (below 1e-3) of the forward is
eps itself. What it evaluates: locals assigned in a straight line, `+ - * / **`, unary minus, `mean`, `var`, `std`
(method or `torch.` function) over `dim=-1` (or `(-1,)`, `[-1]`) with `keepdim=True`, `sqrt`, `rsqrt`, `pow`,
`torch.square`, and dtype casts (`.float()`, `.to(...)`, `.type_as(x)`, also to a local holding `x.dtype`),
which change nothing here. Anything else (another axis, `keepdim=False`, a branch, a call of another function
or module) is refused.
"""

from __future__ import annotations

import ast
import itertools
import math
import textwrap
from collections.abc import Callable
from functools import lru_cache

from tree_sitter import Node

from adopter.analysis.canonical.spellings import PARAMETERS
from adopter.analysis.names.ast_dotted import dotted_name
from adopter.analysis.parse.source import SourceText

FORMULA_NORM = "; its forward writes a LayerNorm out"  # `Ctor.origin` suffix of such a module: no fix
_X = ((0.3, -1.2, 2.5, 0.7, -0.4), (1.9, 0.2, -0.8, -2.2, 0.6))  # two inputs of five features
_WEIGHT = (1.3, -0.7, 0.45, 2.1, 0.9)
_BIAS = (0.25, -1.1, 0.6, 0.05, -0.35)
_EPS = 0.37  # large, so that where eps is added shows
_SMALL = 1e-3  # a literal below this is the forward's eps
_TOLERANCE = 1e-9
_MAX_STATEMENTS = 12
_ROLES = ("weight", "bias", "eps")
_CASTS = frozenset({"float", "double", "half", "bfloat16", "to", "type", "type_as", "contiguous"})

_DTYPE = ()  # what `x.dtype` stands for: arithmetic on it fails, a cast does not read it
Value = float | tuple[float, ...]


class _Refused(Exception):
    """The forward does something the interpreter does not evaluate."""


def layer_norm_roles(function: ast.FunctionDef) -> tuple[tuple[str, str], ...] | None:
    """For `forward(self, x)` that writes a LayerNorm over the last axis out (see the module doc): each attribute
    of `self` it reads and its role (`("scale", "weight"), ("shift", "bias"), ("eps", "eps")`), sorted; else None."""
    a = function.args
    names = [p.arg for p in a.posonlyargs + a.args]
    if len(names) != 2 or a.vararg or a.kwarg or a.kwonlyargs or a.defaults or function.decorator_list:
        return None
    body = [s for s in function.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if not body or len(body) > _MAX_STATEMENTS or not isinstance(body[-1], ast.Return) or body[-1].value is None:
        return None
    for stmt in body[:-1]:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
            return None
    self_name, x = names
    attrs = sorted({n.attr for n in ast.walk(function) if isinstance(n, ast.Attribute)
                    and isinstance(n.value, ast.Name) and n.value.id == self_name})
    if len(attrs) > len(_ROLES):
        return None
    for roles in itertools.permutations(_ROLES, len(attrs)):
        assigned = dict(zip(attrs, roles, strict=True))
        if "bias" in roles and "weight" not in roles:
            continue  # a shift without a scale is not nn.LayerNorm's affine
        if all(_agrees(body, self_name, x, xs, assigned) for xs in _X):
            return tuple(sorted(assigned.items()))
    return None


def formula_norm(function: Node, src: SourceText) -> tuple[tuple[str, str], ...] | None:
    """`layer_norm_roles` of a method of the analysed file (a tree-sitter node), memoised per file (asked at every
    binding of its class and for its fingerprint)."""
    key = ("formula-norm", function.start_byte)
    if key not in src.memo:
        src.memo[key] = layer_norm_text(" " * function.start_point[1] + src.text(function))
    return src.memo[key]  # type: ignore[return-value]


def affine_parameters(init: ast.FunctionDef | None, roles: tuple[tuple[str, str], ...],
                      qualify: Callable[[str], str]) -> bool:
    """Whether `__init__` binds each weight and bias attribute of `roles` once, at its top level, to
    `nn.Parameter(...)`, and binds no attribute of `roles` anywhere else (a nested assignment, a second one)."""
    needed = {attr for attr, role in roles if role in ("weight", "bias")}
    if not needed:
        return True
    if init is None or not init.args.args:
        return False
    self_name = init.args.args[0].arg
    attrs = {attr for attr, _ in roles}
    top: dict[str, list[ast.expr]] = {}
    for node in ast.walk(init):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AugAssign | ast.AnnAssign) else []
        for t in targets:
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == self_name \
                    and t.attr in attrs:
                nested = node not in init.body
                value = node.value if isinstance(node, ast.Assign) and not nested else None
                top.setdefault(t.attr, []).append(value)  # type: ignore[arg-type]
    for attr in needed:
        values = top.get(attr, [])
        if len(values) != 1 or not isinstance(values[0], ast.Call):
            return False
        func = values[0].func
        name = dotted_name(func)
        if name is None or qualify(name) not in PARAMETERS:
            return False
    return True


@lru_cache(maxsize=256)
def layer_norm_text(text: str) -> tuple[tuple[str, str], ...] | None:
    """`layer_norm_roles` of the source text of one `def`, memoised by the text."""
    if "mean" not in text:
        return None  # the cheap test first
    try:
        tree = ast.parse(textwrap.dedent(text))
    except (SyntaxError, ValueError):
        return None
    function = tree.body[0] if len(tree.body) == 1 else None
    return layer_norm_roles(function) if isinstance(function, ast.FunctionDef) else None


def _agrees(body: list[ast.stmt], self_name: str, x: str, xs: tuple[float, ...], roles: dict[str, str]) -> bool:
    values: dict[str, Value] = {"weight": _WEIGHT, "bias": _BIAS, "eps": _EPS}
    attrs: dict[str, Value] = {attr: values[role] for attr, role in roles.items()}
    has_eps = "eps" in roles.values()
    env: dict[str, Value] = {x: xs}
    try:
        reader = _Reader(self_name, attrs, env, has_eps)
        for stmt in body[:-1]:
            assert isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name)
            env[stmt.targets[0].id] = reader.value(stmt.value)
        out = reader.value(body[-1].value)  # type: ignore[attr-defined]
    except (_Refused, ArithmeticError, ValueError, TypeError, RecursionError):
        return False
    if not isinstance(out, tuple) or len(out) != len(xs) or not (has_eps or reader.small_eps):
        return False
    weight = _WEIGHT if "weight" in roles.values() else (1.0,) * len(xs)
    bias = _BIAS if "bias" in roles.values() else (0.0,) * len(xs)
    mean = sum(xs) / len(xs)
    var = sum((v - mean) ** 2 for v in xs) / len(xs)
    expected = [(v - mean) / math.sqrt(var + _EPS) * w + b for v, w, b in zip(xs, weight, bias, strict=True)]
    return all(abs(o - e) <= _TOLERANCE * max(1.0, abs(e)) for o, e in zip(out, expected, strict=True))


class _Reader:
    """Evaluates one forward's expressions over the vectors (see the module doc)."""

    def __init__(self, self_name: str, attrs: dict[str, Value], env: dict[str, Value], has_eps: bool) -> None:
        self.self_name = self_name
        self.attrs = attrs
        self.env = env
        self.has_eps = has_eps
        self.small_eps = False  # a small literal read as eps

    def value(self, node: ast.expr) -> Value:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
            if 0 < node.value < _SMALL:
                if self.has_eps:
                    raise _Refused  # eps twice: an attribute and a literal
                self.small_eps = True
                return _EPS
            return float(node.value)
        if isinstance(node, ast.Name) and node.id in self.env:
            return self.env[node.id]
        if isinstance(node, ast.Attribute) and node.attr == "dtype":
            return _DTYPE  # `input_dtype = x.dtype`, read back only by a cast
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == self.self_name:
            if node.attr not in self.attrs:
                raise _Refused
            return self.attrs[node.attr]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return _map(lambda v: -v, self.value(node.operand))
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _zip(_OPS[type(node.op)], self.value(node.left), self.value(node.right))
        if isinstance(node, ast.Call):
            return self.call(node)
        raise _Refused

    def call(self, node: ast.Call) -> Value:
        func = node.func
        if not isinstance(func, ast.Attribute):
            raise _Refused
        owner = func.value
        if isinstance(owner, ast.Name) and owner.id == "torch" and func.attr != "Tensor":
            if not node.args:
                raise _Refused
            receiver, args = node.args[0], node.args[1:]  # `torch.mean(x, -1, keepdim=True)` as `x.mean(...)`
        else:
            receiver, args = owner, node.args
        name = func.attr
        if name in _CASTS:
            return self.value(receiver)
        value = self.value(receiver)
        if name in ("mean", "var", "std"):
            return _reduce(name, value, args, node.keywords)
        if node.keywords:
            raise _Refused
        if name in ("sqrt", "rsqrt", "square") and not args:
            fn = {"sqrt": math.sqrt, "rsqrt": lambda v: 1.0 / math.sqrt(v), "square": lambda v: v * v}[name]
            return _map(fn, value)
        if name == "pow" and len(args) == 1:
            exponent = self.value(args[0])
            if not isinstance(exponent, float):
                raise _Refused
            return _map(lambda v: v**exponent, value)
        raise _Refused


_OPS: dict[type, Callable[[float, float], float]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b, ast.Pow: lambda a, b: a**b,
}


def _map(fn: Callable[[float], float], value: Value) -> Value:
    return tuple(fn(v) for v in value) if isinstance(value, tuple) else fn(value)


def _zip(fn: Callable[[float, float], float], left: Value, right: Value) -> Value:
    if isinstance(left, tuple) and isinstance(right, tuple):
        if len(left) != len(right):
            raise _Refused
        return tuple(fn(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, tuple):
        return tuple(fn(a, right) for a in left)  # type: ignore[arg-type]
    if isinstance(right, tuple):
        return tuple(fn(left, b) for b in right)
    return fn(left, right)


def _reduce(name: str, value: Value, args: list[ast.expr], keywords: list[ast.keyword]) -> float:
    """`mean` / `var` / `std` over the last axis with `keepdim=True` (the variance biased only when asked)."""
    if not isinstance(value, tuple):
        raise _Refused
    given = dict.fromkeys(("dim", "keepdim", "unbiased", "correction"))
    order = ("dim", "keepdim") if name == "mean" else ("dim", "unbiased", "keepdim")
    if len(args) > len(order):
        raise _Refused
    for key, arg in zip(order, args, strict=False):
        given[key] = arg
    for k in keywords:
        if k.arg not in given or given[k.arg] is not None:
            raise _Refused
        given[k.arg] = k.value
    if not _last_axis(given["dim"]) or not _true(given["keepdim"]):
        raise _Refused
    n = len(value)
    mean = sum(value) / n
    if name == "mean":
        if given["unbiased"] is not None or given["correction"] is not None:
            raise _Refused
        return mean
    biased = _false(given["unbiased"]) if given["correction"] is None else (
        given["unbiased"] is None and _literal(given["correction"]) == 0)
    var = sum((v - mean) ** 2 for v in value) / (n if biased else n - 1)
    return var if name == "var" else math.sqrt(var)


def _last_axis(node: ast.expr | None) -> bool:
    if isinstance(node, ast.Tuple | ast.List) and len(node.elts) == 1:
        node = node.elts[0]
    return node is not None and _literal(node) == -1


def _true(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def _false(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


def _literal(node: ast.expr | None) -> object:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        v = node.operand.value
        return -v if isinstance(v, int | float) and not isinstance(v, bool) else None
    return node.value if isinstance(node, ast.Constant) else None
