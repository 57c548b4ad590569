"""Meaning-keeping rewrites of tensor algebra for the metamorphic harness (issue 20, second round).

The same attention, gated MLP or written-out norm spelled another way: einsum ↔ `@`, head splits through
`permute` ↔ `transpose`, the scale on q ↔ on the scores, `d ** -0.5` ↔ `1 / math.sqrt(d)`, softmax as a
module attribute ↔ a call, gated halves by `chunk` ↔ `split` ↔ slicing, operand order of `*` and of a residual
`+`, `x.pow(2)` ↔ `x * x`, `torch.rsqrt(v)` ↔ `1 / torch.sqrt(v)` ↔ `v ** -0.5`. Each is a fact of torch
algebra (equal up to float rounding) on the operands it accepts; the conditions below keep it meaning-keeping
on real files (a scale moves only when it is a Python scalar, a `transpose(1, 2)` becomes a permute only of a
4-D view). `einops.rearrange` is left out: einops is not in the venv, so no rewrite towards it can be proved.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Callable
from functools import partial

from metamorphic_names import NESTED_SCOPES, fresh, identifiers, module_imports, own_nodes, params, resolved
from metamorphic_rewrites import Variant, _classes, _import_at, _method, _name_of, _one

MATMULS = frozenset({"torch.matmul"})
SOFTMAX_FUNCTIONS = frozenset({"torch.softmax", "torch.nn.functional.softmax"})


def _functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


class _Replace(ast.NodeTransformer):
    """Replaces nodes bottom-up by `f(node)` (None: kept), inside `root`, not inside nested functions or lambdas."""

    def __init__(self, f: Callable[[ast.AST], ast.AST | None], root: ast.AST) -> None:
        self.f, self.root, self.changed = f, root, 0

    def visit(self, node: ast.AST) -> ast.AST:
        if node is not self.root and isinstance(node, (*NESTED_SCOPES,)):
            return node
        node = self.generic_visit(node)
        new = self.f(node)
        if new is None:
            return node
        self.changed += 1
        return new


def _replace(root: ast.AST, f: Callable[[ast.AST], ast.AST | None]) -> int:
    """How many nodes of `root`'s own code `f` replaced (in place)."""
    t = _Replace(f, root)
    t.visit(root)
    return t.changed


def _torch(tree: ast.Module) -> str | None:
    name = _name_of(module_imports(tree), "torch")
    if name is None:
        name = "torch"
        _import_at(tree, [ast.Import([ast.alias("torch")])])
    return name


def _matmul_operands(node: ast.AST, imports: dict[str, str]) -> tuple[ast.expr, ast.expr] | None:
    """(a, b) of `a @ b` / `torch.matmul(a, b)`, else None."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        return node.left, node.right
    if (isinstance(node, ast.Call) and resolved(node.func, imports) in MATMULS and len(node.args) == 2
            and not node.keywords and not any(isinstance(a, ast.Starred) for a in node.args)):
        return node.args[0], node.args[1]
    return None


def _last_two_swapped(node: ast.AST) -> ast.expr | None:
    """`k` of `k.transpose(-2, -1)` / `k.transpose(-1, -2)` / `k.mT`, else None."""
    if isinstance(node, ast.Attribute) and node.attr == "mT":
        return node.value
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "transpose"
            and not node.keywords and len(node.args) == 2
            and all(isinstance(a, ast.UnaryOp) and isinstance(a.operand, ast.Constant) for a in node.args)):
        dims = {-a.operand.value for a in node.args}  # type: ignore[attr-defined]
        if dims == {1, 2}:
            return node.func.value
    return None


def _calls_softmax(fn: ast.AST, imports: dict[str, str]) -> bool:
    for n in ast.walk(fn):
        if isinstance(n, ast.Call) and (resolved(n.func, imports) in SOFTMAX_FUNCTIONS or (
                isinstance(n.func, ast.Attribute) and n.func.attr == "softmax")):
            return True
    return False


def _einsum(torch_name: str, equation: str, a: ast.expr, b: ast.expr) -> ast.Call:
    return ast.Call(ast.Attribute(ast.Name(torch_name, ast.Load()), "einsum", ast.Load()),
                    [ast.Constant(equation), a, b], [])


# --- einsum ↔ @ -------------------------------------------------------------------------------------------

def _to_einsum(node: ast.AST, imports: dict[str, str], torch_name: str, attention: bool) -> ast.expr | None:
    ops = _matmul_operands(node, imports)
    if ops is None:
        return None
    a, b = ops
    k = _last_two_swapped(b)
    if k is not None:
        return _einsum(torch_name, "...id,...jd->...ij", a, k)
    if attention and isinstance(a, ast.Name) and isinstance(b, ast.Name):
        return _einsum(torch_name, "...ij,...jd->...id", a, b)
    return None


def matmul_to_einsum(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`q @ k.transpose(-2, -1)` -> `torch.einsum('...id,...jd->...ij', q, k)`; in a function that takes a softmax,
    also `attn @ v` of two names -> `torch.einsum('...ij,...jd->...id', attn, v)` (both ≥ 2-D there)."""
    imports = module_imports(tree)
    torch_name = _name_of(imports, "torch")
    if torch_name is None:
        return []
    changed = sum(_replace(fn, partial(_to_einsum, imports=imports, torch_name=torch_name,
                                       attention=_calls_softmax(fn, imports))) for fn in _functions(tree))
    return _one(tree) if changed else []


def _equation(node: ast.Call, imports: dict[str, str]) -> tuple[str, ast.expr, ast.expr] | None:
    if (resolved(node.func, imports) != "torch.einsum" or len(node.args) != 3 or node.keywords
            or not isinstance(node.args[0], ast.Constant) or not isinstance(node.args[0].value, str)
            or any(isinstance(a, ast.Starred) for a in node.args)):
        return None
    return node.args[0].value.replace(" ", ""), node.args[1], node.args[2]


def einsum_to_matmul(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`torch.einsum('bhid,bhjd->bhij', q, k)` -> `q @ k.transpose(-2, -1)`; `'bhij,bhjd->bhid'` -> `a @ v`.

    Only equations whose operands share one batch prefix (letters or `...`) and contract one letter as a matrix
    product does; the operands' ranks are the equation's, which `@` keeps.
    """
    imports = module_imports(tree)
    changed = 0

    class ToMatmul(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            nonlocal changed
            self.generic_visit(node)
            eq = _equation(node, imports)
            if eq is None or "->" not in eq[0] or eq[0].count(",") != 1:
                return node
            text, a, b = eq
            (x, y), out = text.split("->")[0].split(","), text.split("->")[1]
            if len(x) < 3 or len(y) < 3 or len(out) < 3 or not (len(x) == len(y) == len(out)):
                return node
            prefix = x[:-2]
            if y[:-2] != prefix or out[:-2] != prefix or len(set(prefix.replace("...", ""))) != len(prefix.replace("...", "")):
                return node
            i, c = x[-2:]
            if len({i, c} | set(prefix)) != len(prefix) + 2 if "..." not in prefix else len({i, c}) != 2:
                return node
            if y[-1] == c and out[-2:] == i + y[-2] and y[-2] not in (i, c) and y[-2] not in prefix:
                changed += 1
                k = ast.Call(ast.Attribute(b, "transpose", ast.Load()),
                             [ast.UnaryOp(ast.USub(), ast.Constant(2)), ast.UnaryOp(ast.USub(), ast.Constant(1))], [])
                return ast.BinOp(a, ast.MatMult(), k)
            if y[-2] == c and out[-2:] == i + y[-1] and y[-1] not in (i, c) and y[-1] not in prefix:
                changed += 1
                return ast.BinOp(a, ast.MatMult(), b)
            return node

    ToMatmul().visit(tree)
    return _one(tree) if changed else []


# --- head splits: transpose ↔ permute -----------------------------------------------------------------------

def _four_d(node: ast.AST) -> bool:
    """A `view`/`reshape` call to four sizes: its result is 4-D."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("view", "reshape")
            and len(node.args) == 4 and not node.keywords and not any(isinstance(a, ast.Starred) for a in node.args))


def _int_args(node: ast.Call) -> list[int] | None:
    out = []
    for a in node.args:
        if isinstance(a, ast.Constant) and type(a.value) is int:
            out.append(a.value)
        else:
            return None
    return out if not node.keywords else None


def transpose_to_permute(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`x.view(b, n, h, d).transpose(1, 2)` -> `.permute(0, 2, 1, 3)` (equal on a 4-D tensor)."""
    changed = 0

    class ToPermute(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            nonlocal changed
            self.generic_visit(node)
            f = node.func
            if (isinstance(f, ast.Attribute) and f.attr == "transpose" and _four_d(f.value)
                    and sorted(_int_args(node) or []) == [1, 2]):
                changed += 1
                return ast.Call(ast.Attribute(f.value, "permute", ast.Load()), [ast.Constant(v) for v in (0, 2, 1, 3)], [])
            return node

    ToPermute().visit(tree)
    return _one(tree) if changed else []


def permute_to_transpose(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`x.permute(0, 2, 1, 3)` -> `x.transpose(1, 2)` (a four-index permute asks for a 4-D tensor)."""
    changed = 0

    class ToTranspose(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            nonlocal changed
            self.generic_visit(node)
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr == "permute" and _int_args(node) == [0, 2, 1, 3]:
                changed += 1
                return ast.Call(ast.Attribute(f.value, "transpose", ast.Load()), [ast.Constant(1), ast.Constant(2)], [])
            return node

    ToTranspose().visit(tree)
    return _one(tree) if changed else []


# --- the attention scale ------------------------------------------------------------------------------------

SCALAR_CALLS = frozenset({"int", "float", "len", "min", "max", "abs", "round"})


class _Scalars:
    """Which expressions of a function are Python numbers: constants, sizes of tensors (`x.shape[-1]`,
    `x.size(-1)`), `math.*`, and names or `self.` attributes bound only to such (an `__init__`'s parameters
    count as numbers there: dimensions)."""

    def __init__(self, tree: ast.Module, cls: ast.ClassDef | None, fn: ast.FunctionDef | ast.AsyncFunctionDef):
        self.imports = module_imports(tree)
        self.names: set[str] = set()
        self.attrs: set[str] = set()
        if cls is not None:
            init = _method(cls, "__init__")
            if init is not None:
                inside = _Scalars.__new__(_Scalars)
                inside.imports, inside.attrs = self.imports, set()
                inside.names = {p for p in params(init) if p != "self"}
                inside._bind(init.body)
                assigned: dict[str, bool] = {}
                for s in own_nodes(init.body):
                    if isinstance(s, ast.Assign):
                        for t in s.targets:
                            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                                assigned[t.attr] = assigned.get(t.attr, True) and inside.scalar(s.value)
                self.attrs = {a for a, ok in assigned.items() if ok}
                for m in cls.body:  # an attribute reassigned elsewhere is not known
                    if m is not init:
                        for n in ast.walk(m):
                            if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store):
                                self.attrs.discard(n.attr)
        if fn.name == "__init__":
            self.names = {p for p in params(fn) if p != "self"}
        self._bind(fn.body)

    def _bind(self, body: list[ast.stmt]) -> None:
        verdict: dict[str, bool] = {}
        for s in own_nodes(body):
            if isinstance(s, ast.Assign) and len(s.targets) == 1:
                t = s.targets[0]
                if isinstance(t, ast.Name):
                    verdict[t.id] = verdict.get(t.id, True) and self.scalar(s.value)
                    if verdict[t.id]:
                        self.names.add(t.id)
                    else:
                        self.names.discard(t.id)
                elif isinstance(t, ast.Tuple) and self._sizes(s.value):
                    for e in t.elts:
                        if isinstance(e, ast.Name):
                            verdict[e.id] = verdict.get(e.id, True)
                            if verdict[e.id]:
                                self.names.add(e.id)
            elif isinstance(s, (ast.AugAssign, ast.AnnAssign, ast.For, ast.comprehension, ast.With)):
                for n in ast.walk(s.target if not isinstance(s, ast.With) else s):
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                        verdict[n.id] = False
                        self.names.discard(n.id)

    @staticmethod
    def _sizes(node: ast.AST) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr == "shape") or (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "size"
            and not node.args)

    def scalar(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Constant):
            return type(node.value) in (int, float)
        if isinstance(node, ast.Name):
            return node.id in self.names
        if isinstance(node, ast.Attribute):
            return isinstance(node.value, ast.Name) and node.value.id == "self" and node.attr in self.attrs
        if isinstance(node, ast.Subscript):
            return self._sizes(node.value) and not isinstance(node.slice, ast.Slice)
        if isinstance(node, ast.BinOp):
            return self.scalar(node.left) and self.scalar(node.right) and not isinstance(node.op, ast.MatMult)
        if isinstance(node, ast.UnaryOp):
            return self.scalar(node.operand)
        if isinstance(node, ast.Call):
            target = resolved(node.func, self.imports) or ""
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr == "size" and len(node.args) == 1:
                return True
            if target.startswith("math.") or (isinstance(f, ast.Name) and f.id in SCALAR_CALLS):
                return all(self.scalar(a) for a in node.args)
        return False


def _scoped(tree: ast.Module) -> list[tuple[ast.ClassDef | None, ast.FunctionDef | ast.AsyncFunctionDef]]:
    owner: dict[int, ast.ClassDef] = {}
    for cls in _classes(tree):
        for m in cls.body:
            owner[id(m)] = cls
    return [(owner.get(id(fn)), fn) for fn in _functions(tree)]


def _blocks(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[list[ast.stmt]]:
    """The statement lists of `fn` (its body and its compound statements'), not of nested functions."""
    out = [fn.body]
    for n in own_nodes(fn.body):
        for attr in ("body", "orelse", "finalbody"):
            block = getattr(n, attr, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                out.append(block)
    return out


def _loaded_after(block: list[ast.stmt], k: int, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
               for s in block[k + 1:] for n in ast.walk(s))


def _moved(mm: ast.AST, op: ast.operator, s: ast.expr, left: bool, imports: dict[str, str],
           sc: _Scalars) -> ast.expr | None:
    """`(a op s) @ b` for the product `mm` of a and b scaled by the number `s`, else None."""
    ops = _matmul_operands(mm, imports)
    if ops is None or not sc.scalar(s):
        return None
    a, b = ops
    scaled = ast.BinOp(s, op, a) if left else ast.BinOp(a, op, s)
    return ast.BinOp(scaled, ast.MatMult(), b)


def _to_query(node: ast.AST, imports: dict[str, str], sc: _Scalars) -> ast.expr | None:
    if not isinstance(node, ast.BinOp):
        return None
    new = None
    if isinstance(node.op, (ast.Mult, ast.Div)):
        new = _moved(node.left, node.op, node.right, False, imports, sc)
    if new is None and isinstance(node.op, ast.Mult):
        new = _moved(node.right, node.op, node.left, True, imports, sc)
    return new


def scale_to_query(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """The scale moved from the scores onto the first operand: `(q @ k.transpose(-2, -1)) * s` ->
    `(q * s) @ k.transpose(-2, -1)` (also `/ s`, `s * (...)`, `torch.matmul`), and the statement pair
    `attn = q @ kT; attn = attn * s` -> `attn = (q * s) @ kT`. `s` is a Python number (see `_Scalars`)."""
    imports = module_imports(tree)
    changed = 0
    for cls, fn in _scoped(tree):
        sc = _Scalars(tree, cls, fn)
        changed += _replace(fn, partial(_to_query, imports=imports, sc=sc))
        for block in _blocks(fn):
            k = 0
            while k + 1 < len(block):
                first, second = block[k], block[k + 1]
                if (isinstance(first, ast.Assign) and len(first.targets) == 1 and isinstance(first.targets[0], ast.Name)
                        and _matmul_operands(first.value, imports) is not None):
                    name = first.targets[0].id
                    v = second.value if isinstance(second, ast.Assign) and len(second.targets) == 1 and isinstance(
                        second.targets[0], ast.Name) and second.targets[0].id == name else None
                    if (isinstance(v, ast.BinOp) and isinstance(v.op, (ast.Mult, ast.Div))
                            and isinstance(v.left, ast.Name) and v.left.id == name
                            and not any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(v.right))):
                        new = _moved(first.value, v.op, v.right, False, imports, sc)
                        if new is not None:
                            first.value = new
                            del block[k + 1]
                            changed += 1
                k += 1
    return _one(tree) if changed else []


def _scaled(node: ast.AST, sc: _Scalars) -> tuple[ast.expr, ast.operator, ast.expr, bool] | None:
    """(x, op, s, s on the left) of `x * s` / `x / s` / `s * x` with `s` a number, else None."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)) and sc.scalar(node.right):
        return node.left, node.op, node.right, False
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and sc.scalar(node.left):
        return node.right, node.op, node.left, True
    return None


def _rebuilt(a: ast.expr, b: ast.expr, op: ast.operator, s: ast.expr, left: bool) -> ast.expr:
    mm = ast.BinOp(a, ast.MatMult(), b)
    return ast.BinOp(s, op, mm) if left else ast.BinOp(mm, op, s)


def _to_scores(node: ast.AST, imports: dict[str, str], sc: _Scalars) -> ast.expr | None:
    ops = _matmul_operands(node, imports)
    if ops is None or (found := _scaled(ops[0], sc)) is None:
        return None
    return _rebuilt(found[0], ops[1], found[1], found[2], found[3])


def scale_to_scores(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """The scale moved from the first operand onto the scores: `(q * s) @ kT` -> `(q @ kT) * s`, and the statement
    pair `q = x * s; attn = q @ kT` (q not read after) -> `attn = (x @ kT) * s`. `s` a Python number."""
    imports = module_imports(tree)
    changed = 0
    for cls, fn in _scoped(tree):
        sc = _Scalars(tree, cls, fn)

        changed += _replace(fn, partial(_to_scores, imports=imports, sc=sc))
        for block in _blocks(fn):
            k = 0
            while k + 1 < len(block):
                first, second = block[k], block[k + 1]
                if (isinstance(first, ast.Assign) and len(first.targets) == 1 and isinstance(first.targets[0], ast.Name)
                        and isinstance(second, ast.Assign) and len(second.targets) == 1):
                    name = first.targets[0].id
                    found = _scaled(first.value, sc)
                    ops = _matmul_operands(second.value, imports)
                    if (found is not None and ops is not None and isinstance(ops[0], ast.Name) and ops[0].id == name
                            and not any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(ops[1]))
                            and not _loaded_after(block, k + 1, name)):
                        second.value = _rebuilt(found[0], ops[1], found[1], found[2], found[3])
                        del block[k]
                        changed += 1
                k += 1
    return _one(tree) if changed else []


def _spelled(node: ast.AST, imports: dict[str, str], sc: _Scalars, math_name: str) -> ast.expr | None:
    if not isinstance(node, ast.BinOp):
        return None
    r = node.right
    if (isinstance(node.op, ast.Pow) and isinstance(r, ast.UnaryOp) and isinstance(r.op, ast.USub)
            and isinstance(r.operand, ast.Constant) and r.operand.value == 0.5 and sc.scalar(node.left)):
        return ast.BinOp(ast.Constant(1.0), ast.Div(), ast.Call(
            ast.Attribute(ast.Name(math_name, ast.Load()), "sqrt", ast.Load()), [node.left], []))
    if (isinstance(node.op, ast.Div) and isinstance(r, ast.Call) and resolved(r.func, imports) == "math.sqrt"
            and len(r.args) == 1 and not r.keywords and sc.scalar(r.args[0])):
        return ast.BinOp(node.left, ast.Mult(), ast.BinOp(r.args[0], ast.Pow(), ast.UnaryOp(ast.USub(), ast.Constant(0.5))))
    return None


def scale_spelling(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`d ** -0.5` -> `1 / math.sqrt(d)` and `x / math.sqrt(d)` -> `x * d ** -0.5` (`d` a Python number)."""
    imports = module_imports(tree)
    math_name = _name_of(imports, "math")
    changed = 0
    taken = identifiers(tree)
    need_math = math_name is None
    if math_name is None:
        math_name = fresh("math", taken)
    for cls, fn in _scoped(tree):
        sc = _Scalars(tree, cls, fn)

        changed += _replace(fn, partial(_spelled, imports=imports, sc=sc, math_name=math_name))
    if not changed:
        return []
    if need_math:
        _import_at(tree, [ast.Import([ast.alias("math", None if math_name == "math" else math_name)])])
    return _one(tree)


# --- softmax: a call ↔ an nn.Softmax attribute ---------------------------------------------------------------

def _softmax_dim(node: ast.Call, imports: dict[str, str], modules: set[str]) -> tuple[ast.expr, ast.expr] | None:
    """(input, dim) of `F.softmax(x, dim=d)` / `torch.softmax(x, d)` / `x.softmax(d)` with a constant `d`."""
    kw = {k.arg: k.value for k in node.keywords}
    if any(isinstance(a, ast.Starred) for a in node.args) or set(kw) - {"dim"}:
        return None
    if resolved(node.func, imports) in SOFTMAX_FUNCTIONS:
        args = list(node.args)
    elif (isinstance(node.func, ast.Attribute) and node.func.attr == "softmax"
          and not (isinstance(node.func.value, ast.Name) and node.func.value.id in modules)):
        args = [node.func.value, *node.args]
    else:
        return None
    if len(args) == 2 and "dim" not in kw:
        x, d = args
    elif len(args) == 1 and "dim" in kw:
        x, d = args[0], kw["dim"]
    else:
        return None
    c = d.operand if isinstance(d, ast.UnaryOp) and isinstance(d.op, ast.USub) else d
    return (x, d) if isinstance(c, ast.Constant) and type(c.value) is int else None


def _to_module(node: ast.AST, imports: dict[str, str], modules: set[str], made: dict[str, str],
               taken: set[str]) -> ast.expr | None:
    """`self.<softmax>(x)` for a softmax call, the attribute named in `made` by its `dim`."""
    if not isinstance(node, ast.Call) or (found := _softmax_dim(node, imports, modules)) is None:
        return None
    x, d = found
    key = ast.unparse(d)
    if key not in made:
        made[key] = fresh("softmax" if not made else f"softmax_{len(made)}", taken)
    return ast.Call(ast.Attribute(ast.Name("self", ast.Load()), made[key], ast.Load()), [x], [])


def softmax_to_module(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`attn.softmax(dim=-1)` / `F.softmax(attn, -1)` in a method -> `self.softmax(attn)` with
    `self.softmax = nn.Softmax(dim=-1)` set in `__init__` after `super().__init__()`."""
    imports = module_imports(tree)
    nn_name = _name_of(imports, "torch.nn")
    modules = set(imports) | {"self", "cls", "super"}
    taken = identifiers(tree)
    changed = 0
    for cls in _classes(tree):
        init = _method(cls, "__init__")
        if init is None or not init.args.args or init.args.args[0].arg != "self":
            continue
        at = next((i for i, s in enumerate(init.body) if isinstance(s, ast.Expr) and "super()" in ast.unparse(s)
                   and "__init__" in ast.unparse(s)), None)
        if at is None:
            continue
        made: dict[str, str] = {}
        for m in cls.body:
            if m is init or not isinstance(m, ast.FunctionDef) or not m.args.args or m.args.args[0].arg != "self" \
                    or m.decorator_list:
                continue

            _replace(m, partial(_to_module, imports=imports, modules=modules, made=made, taken=taken))
        if not made:
            continue
        if nn_name is None:
            nn_name = fresh("nn", taken)
            _import_at(tree, [ast.ImportFrom("torch", [ast.alias("nn", None if nn_name == "nn" else nn_name)], 0)])
        init.body[at + 1:at + 1] = [ast.parse(f"self.{attr} = {nn_name}.Softmax(dim={dim})").body[0]
                                    for dim, attr in made.items()]
        changed += 1
    return _one(tree) if changed else []


def _to_call(node: ast.AST, good: set[int], torch_name: str, dims: dict[str, ast.expr]) -> ast.expr | None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and id(node.func) in good:
        return ast.Call(ast.Attribute(ast.Name(torch_name, ast.Load()), "softmax", ast.Load()),
                        [node.args[0]], [ast.keyword("dim", dims[node.func.attr])])
    return None


def softmax_to_call(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`self.softmax = nn.Softmax(dim=-1)` read only as `self.softmax(x)` -> `torch.softmax(x, dim=-1)` at the calls
    (the attribute stays: no parameters, the same state)."""
    imports = module_imports(tree)
    changed = 0
    torch_name = _name_of(imports, "torch")
    for cls in _classes(tree):
        init = _method(cls, "__init__")
        if init is None:
            continue
        dims: dict[str, ast.expr] = {}
        for s in init.body:
            if (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Attribute)
                    and isinstance(s.targets[0].value, ast.Name) and s.targets[0].value.id == "self"
                    and isinstance(s.value, ast.Call) and resolved(s.value.func, imports) == "torch.nn.Softmax"):
                kw = {k.arg: k.value for k in s.value.keywords}
                d = s.value.args[0] if len(s.value.args) == 1 and not kw else kw.get("dim") if not s.value.args else None
                if d is not None and set(kw) <= {"dim"}:
                    dims[s.targets[0].attr] = d
        calls: dict[str, list[ast.Call]] = {a: [] for a in dims}
        for m in cls.body:
            if m is init:
                continue
            for n in ast.walk(m):
                if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self" and n.attr in dims:
                    calls[n.attr].append(n)  # type: ignore[arg-type]
        good = set()
        for m in cls.body:
            if m is init:
                continue
            for n in ast.walk(m):
                if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in dims
                        and isinstance(n.func.value, ast.Name) and n.func.value.id == "self" and len(n.args) == 1
                        and not n.keywords and not isinstance(n.args[0], ast.Starred)):
                    good.add(id(n.func))
        attrs = {a for a in dims if calls[a] and all(id(c) in good for c in calls[a])}
        good = {g for g in good if g in {id(c) for a in attrs for c in calls[a]}}
        if not attrs:
            continue
        if torch_name is None:
            torch_name = _torch(tree)
        assert torch_name is not None

        for m in cls.body:
            if m is not init:
                changed += _replace(m, partial(_to_call, good=good, torch_name=torch_name, dims=dims))
    return _one(tree) if changed else []


# --- gated halves: chunk ↔ split ↔ slicing ---------------------------------------------------------------------

def _chunk_halves(s: ast.stmt) -> ast.expr | None:
    """The receiver of `a, b = x.chunk(2, dim=-1)` (also `chunk(2, -1)`), else None."""
    if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Tuple)
            and len(s.targets[0].elts) == 2 and isinstance(s.value, ast.Call)):
        return None
    c = s.value
    if not (isinstance(c.func, ast.Attribute) and c.func.attr == "chunk"):
        return None
    args = list(c.args) + [k.value for k in c.keywords if k.arg in ("chunks", "dim")]
    if len(args) != 2 or any(k.arg not in ("chunks", "dim") for k in c.keywords):
        return None
    n, d = args
    minus_one = isinstance(d, ast.UnaryOp) and isinstance(d.op, ast.USub) and getattr(d.operand, "value", None) == 1
    if isinstance(n, ast.Constant) and n.value == 2 and minus_one:
        return c.func.value
    return None


def _gated(tree: ast.Module, build) -> list[Variant]:
    taken = identifiers(tree)
    changed = 0
    for fn in _functions(tree):
        for block in _blocks(fn):
            k = 0
            while k < len(block):
                x = _chunk_halves(block[k])
                if x is None:
                    k += 1
                    continue
                s = block[k]
                assert isinstance(s, ast.Assign)
                pre: list[ast.stmt] = []
                if not isinstance(x, ast.Name):
                    name = fresh("hidden", taken)
                    pre = [ast.Assign([ast.Name(name, ast.Store())], x)]
                    x = ast.Name(name, ast.Load())
                s.value = build(x)
                block[k:k] = pre
                k += len(pre) + 1
                changed += 1
    return _one(tree) if changed else []


def _half(x: ast.Name) -> ast.expr:
    return ast.parse(f"{x.id}.shape[-1] // 2", mode="eval").body


def chunk_to_split(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`a, b = x.chunk(2, dim=-1)` -> `a, b = x.split(x.shape[-1] // 2, dim=-1)` (an even last size, as a gated MLP's)."""
    return _gated(tree, lambda x: ast.Call(ast.Attribute(x, "split", ast.Load()), [_half(x)],
                                           [ast.keyword("dim", ast.UnaryOp(ast.USub(), ast.Constant(1)))]))


def chunk_to_slices(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`a, b = x.chunk(2, dim=-1)` -> `a, b = x[..., :x.shape[-1] // 2], x[..., x.shape[-1] // 2:]`."""
    def build(x: ast.Name) -> ast.expr:
        h = ast.unparse(_half(x))
        return ast.parse(f"({x.id}[..., :{h}], {x.id}[..., {h}:])", mode="eval").body

    return _gated(tree, build)


# --- operand order ---------------------------------------------------------------------------------------------

def _sequence(node: ast.AST) -> bool:
    return isinstance(node, (ast.List, ast.Tuple, ast.ListComp, ast.JoinedStr, ast.Dict, ast.Set)) or (
        isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)))


def operand_order(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`act(a) * b` -> `b * act(a)`: every product with a call among its operands, swapped (elementwise `*`
    commutes; no list, tuple or string operand)."""
    changed = 0

    class Swap(ast.NodeTransformer):
        def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
            nonlocal changed
            self.generic_visit(node)
            if (isinstance(node.op, ast.Mult) and (isinstance(node.left, ast.Call) or isinstance(node.right, ast.Call))
                    and not _sequence(node.left) and not _sequence(node.right)):
                changed += 1
                return ast.BinOp(node.right, ast.Mult(), node.left)
            return node

    for fn in _functions(tree):
        if fn.name != "__init__":
            Swap().visit(fn)
    return _one(tree) if changed else []


def residual_order(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`x = x + self.attn(h)` -> `x = self.attn(h) + x` in a `forward` (the residual's operand order; a tensor sum
    commutes)."""
    changed = 0
    for fn in _functions(tree):
        if fn.name != "forward":
            continue
        for n in ast.walk(fn):
            if not (isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
                    and isinstance(n.value, ast.BinOp) and isinstance(n.value.op, ast.Add)):
                continue
            v, t = n.value, n.targets[0].id
            sides = (v.left, v.right)
            if (any(isinstance(e, ast.Name) and e.id == t for e in sides)
                    and any(isinstance(e, ast.Call) for e in sides) and not any(_sequence(e) for e in sides)):
                n.value = ast.BinOp(v.right, ast.Add(), v.left)
                changed += 1
    return _one(tree) if changed else []


# --- written-out norms ------------------------------------------------------------------------------------------

def square_spelling(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`x.pow(2)` / `x ** 2` -> `x * x` for a name `x`; `(x - m).pow(2)` -> `(x - m) ** 2` otherwise."""
    changed = 0

    class Square(ast.NodeTransformer):
        def _square(self, base: ast.expr) -> ast.expr:
            if isinstance(base, ast.Name):
                return ast.BinOp(base, ast.Mult(), ast.Name(base.id, ast.Load()))
            return ast.BinOp(base, ast.Pow(), ast.Constant(2))

        def visit_Call(self, node: ast.Call) -> ast.AST:
            nonlocal changed
            self.generic_visit(node)
            f = node.func
            if (isinstance(f, ast.Attribute) and f.attr == "pow" and len(node.args) == 1 and not node.keywords
                    and isinstance(node.args[0], ast.Constant) and node.args[0].value == 2
                    and not isinstance(f.value, ast.Constant)):
                changed += 1
                return self._square(f.value)
            return node

        def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
            nonlocal changed
            self.generic_visit(node)
            if (isinstance(node.op, ast.Pow) and isinstance(node.right, ast.Constant) and node.right.value == 2
                    and isinstance(node.left, ast.Name)):
                changed += 1
                return self._square(node.left)
            return node

    for fn in _functions(tree):
        if fn.name != "__init__":
            Square().visit(fn)
    return _one(tree) if changed else []


def _rsqrt_argument(node: ast.Call, imports: dict[str, str], modules: set[str]) -> ast.expr | None:
    if resolved(node.func, imports) == "torch.rsqrt" and len(node.args) == 1 and not node.keywords:
        return node.args[0]
    f = node.func
    if (isinstance(f, ast.Attribute) and f.attr == "rsqrt" and not node.args and not node.keywords
            and not (isinstance(f.value, ast.Name) and f.value.id in modules)):
        return f.value
    return None


def _rsqrt(tree: ast.Module, build) -> list[Variant]:
    imports = module_imports(tree)
    modules = set(imports) | {"self", "cls", "super"}
    torch_name = _name_of(imports, "torch")
    if torch_name is None:
        return []
    changed = 0

    class Rewrite(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            nonlocal changed
            self.generic_visit(node)
            v = _rsqrt_argument(node, imports, modules)
            if v is None:
                return node
            changed += 1
            return build(torch_name, v)

    Rewrite().visit(tree)
    return _one(tree) if changed else []


def rsqrt_to_sqrt(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`torch.rsqrt(v + eps)` / `(v + eps).rsqrt()` -> `1 / torch.sqrt(v + eps)`."""
    return _rsqrt(tree, lambda t, v: ast.BinOp(ast.Constant(1), ast.Div(), ast.Call(
        ast.Attribute(ast.Name(t, ast.Load()), "sqrt", ast.Load()), [v], [])))


def rsqrt_to_power(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`torch.rsqrt(v + eps)` -> `(v + eps) ** -0.5` (v a tensor: rsqrt takes nothing else)."""
    return _rsqrt(tree, lambda t, v: ast.BinOp(v, ast.Pow(), ast.UnaryOp(ast.USub(), ast.Constant(0.5))))


def rsqrt_to_pow_method(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`torch.rsqrt(v + eps)` -> `(v + eps).pow(-0.5)` (the spelling of fairchem's and e3nn's norms)."""
    return _rsqrt(tree, lambda t, v: ast.Call(ast.Attribute(v, "pow", ast.Load()),
                                              [ast.UnaryOp(ast.USub(), ast.Constant(0.5))], []))


def sqrt_to_rsqrt(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`x / torch.sqrt(v)` -> `x * torch.rsqrt(v)` (torch.sqrt takes a tensor)."""
    imports = module_imports(tree)
    torch_name = _name_of(imports, "torch")
    if torch_name is None:
        return []
    changed = 0

    class ToRsqrt(ast.NodeTransformer):
        def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
            nonlocal changed
            self.generic_visit(node)
            r = node.right
            if (isinstance(node.op, ast.Div) and isinstance(r, ast.Call) and resolved(r.func, imports) == "torch.sqrt"
                    and len(r.args) == 1 and not r.keywords):
                changed += 1
                return ast.BinOp(node.left, ast.Mult(), ast.Call(
                    ast.Attribute(ast.Name(torch_name, ast.Load()), "rsqrt", ast.Load()), r.args, []))
            return node

    ToRsqrt().visit(tree)
    return _one(tree) if changed else []


ALGEBRA = {f.__name__: f for f in (
    matmul_to_einsum, einsum_to_matmul, transpose_to_permute, permute_to_transpose,
    scale_to_query, scale_to_scores, scale_spelling, softmax_to_module, softmax_to_call,
    chunk_to_split, chunk_to_slices, operand_order, residual_order,
    square_spelling, rsqrt_to_sqrt, rsqrt_to_power, rsqrt_to_pow_method, sqrt_to_rsqrt,
)}
