"""Classes of another file whose `forward` is a linear map of its input by a weight of their own: Linear-like.

A projection class is often imported: a quantising `nn.Linear` subclass, a library's own `Linear`, a class
that keeps an (out, in) weight and calls `F.linear` itself:

    class QuantizeLinear(nn.Linear):                         # torchao's ParetoQ: the weight quantised
        def forward(self, input_):
            if self.w_bits >= 16:
                weight = self.weight
            else:
                weight = Quant.apply(self.weight, self.weight_clip_val, self.w_bits).to(input_.dtype)
            out = nn.functional.linear(input_, weight)
            if self.bias is not None:
                out += self.bias.view(1, -1).expand_as(out)
            return out

    class Linear(Projection):                                # fairseq2: `Projection(Module, ABC)`
        def __init__(self, input_dim, output_dim, bias, ...):
            super().__init__(input_dim, output_dim)
            self.weight = Parameter(torch.empty((output_dim, input_dim), ...))
            ...
        def forward(self, x):
            return linear(x, self.weight, self.bias)

`linear_forward` reads such a class in its own file (Python's `ast`, never imported or run) and answers one
test: the forward's result is the one projection it makes of its input, `F.linear(x, W, b)`, `x @ W.t()`
(`torch.matmul`), `super().forward(x)` of an `nn.Linear` subclass, or `self.<child>(x)` of a child its `__init__`
binds once, at its top level, to `nn.Linear(...)` (mattersim's `LinearLayer`: `return self.linear(x)`), where

- `x` is the forward's one argument, or computed from it by elementwise work with values that do not read it
  (casts, clamps, `+ - * /` with the module's settings);
- `W` reads the class's (out, in) weight (and, in a quantiser's arguments, its settings): `nn.Linear`'s own, or an attribute its `__init__` (or a base's of the
  same file) binds to `Parameter(<a 2-D tensor>)`, possibly transformed (quantised, cast) by calls that read
  neither the input nor the output, never reshaped (`.view`, `.t()`, an index);
- after it, only elementwise work with such values (a bias added, a cast, a scale) and one `return`;
- the forward takes no argument but its input (ibert's `QuantLinear` also takes a scaling factor, and returns
  a pair), calls no module or function on the input or the output other than casts and clamps (a LoRA branch
  `self.lora_B(self.lora_A(x))`, a tensor-parallel gather), never indexes them, makes the projection
  unconditionally and once, and returns no tuple;
- the class derives from `nn.Module` or `nn.Linear` through classes of its file only, and has no `__call__`.

Such a class projects as `nn.Linear` does, so a binding to it is read as one (`reach`), with `origin` ending in
`LINEAR_FORWARD`: the sites it reaches are reported without an automatic fix, since a rewrite into plain
`nn.Linear` layers would drop what its forward does to the weight (quantisation) and change its checkpoint.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping

from adopter.analysis.canonical.spellings import PARAMETERS
from adopter.analysis.names.ast_dotted import dotted_name

LINEAR_FORWARD = "; its forward is a linear map of its input by its own weight"  # `Ctor.origin` suffix: no fix
LINEAR = "torch.nn.Linear"
MODULE = "torch.nn.Module"
_MIXINS = frozenset({"abc.ABC", "ABC", "object"})
_LINEARS = frozenset({"torch.nn.functional.linear", "torch._C._nn.linear"})
_MATMULS = frozenset({"torch.matmul", "torch.mm"})
_CLAMPS = frozenset({"torch.clamp", "torch.clip"})
_CASTS = frozenset({"to", "float", "half", "bfloat16", "double", "type", "type_as", "contiguous", "clamp", "clip",
                    "clamp_", "clip_"})
_SHAPE_ONLY = frozenset({"type_as", "expand_as", "view_as", "reshape_as"})  # methods that read their argument's shape or dtype
_META = frozenset({"dtype", "shape", "device", "ndim", "is_cuda"})
_RESHAPES = frozenset({"view", "reshape", "flatten", "permute", "transpose", "t", "T", "unsqueeze", "squeeze",
                       "expand", "repeat", "narrow", "chunk", "split", "view_as", "reshape_as", "unflatten"})
_NO_OP_DECORATORS = frozenset({"typing.override", "typing_extensions.override", "typing.final",
                               "typing_extensions.final"})
_MAX_DEPTH = 6

IN, OUT, VALUE = "input", "output", "value"  # computed from the input, from the projection, from neither
WEIGHT, SUPER, CHILD = "weight", "super", "child"  # how the forward projects: its weight, `super().forward`, a child


def linear_forward(node: ast.ClassDef, classes: Mapping[str, ast.AST], qualify: Callable[[str], str]) -> bool:
    """Whether class `node` of a file (`classes`: that file's top-level names; `qualify`: a dotted name of it
    to its qualified name) is Linear-like by the module's test."""
    order = _order(node, classes, qualify)
    if order is None:
        return False
    order_classes, layer = order
    methods = [{f.name: f for f in c.body if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)}
               for c in order_classes]
    if any("__call__" in m for m in methods):
        return False
    forward = next((m["forward"] for m in methods if "forward" in m), None)
    if not isinstance(forward, ast.FunctionDef):
        return False
    inits = [m["__init__"] for m in methods if isinstance(m.get("__init__"), ast.FunctionDef)]
    read = _Forward(forward, qualify, _linear_children(inits, qualify)).projection()  # type: ignore[arg-type]
    if read is None:
        return False
    weights, through = read
    if through == SUPER:
        return layer == LINEAR
    if through == CHILD:
        return True
    own = _weight_parameters(inits, qualify)  # type: ignore[arg-type]
    if layer == LINEAR:
        rebound = _bound_attributes(inits)  # type: ignore[arg-type]
        own |= {"weight"} if "weight" not in rebound else set()
    return bool(weights & own)


def _order(node: ast.ClassDef, classes: Mapping[str, ast.AST], qualify: Callable[[str], str],
           ) -> tuple[list[ast.ClassDef], str] | None:
    """The class and its bases of this file (breadth first), and the one torch class they derive from
    (`nn.Module` or `nn.Linear`); None for a base of another file, another torch layer, or neither."""
    order: list[ast.ClassDef] = []
    todo = [node]
    outside: set[str] = set()
    while todo:
        cls = todo.pop(0)
        if cls in order:
            continue
        order.append(cls)
        if len(order) > _MAX_DEPTH or cls.keywords:
            return None
        for base in cls.bases:
            dotted = dotted_name(base)
            if dotted is None:
                return None
            inner = classes.get(dotted)
            if isinstance(inner, ast.ClassDef) and inner is not cls:
                todo.append(inner)
                continue
            qualified = qualify(dotted)
            if qualified.startswith("torch.nn.") and qualified.rsplit(".", 1)[-1] in ("Module", "Linear"):
                outside.add(f"torch.nn.{qualified.rsplit('.', 1)[-1]}")
            elif qualified not in _MIXINS:
                return None
    if outside == {LINEAR} or outside == {LINEAR, MODULE}:
        return order, LINEAR
    return (order, MODULE) if outside == {MODULE} else None


def _weight_parameters(inits: list[ast.FunctionDef], qualify: Callable[[str], str]) -> set[str]:
    """The attributes every `__init__` of `inits` binds only to `Parameter(<a 2-D tensor>)`."""
    found: dict[str, bool] = {}
    for init in inits:
        self_name = init.args.args[0].arg if init.args.args else "self"
        for n in ast.walk(init):
            target, value = _self_assignment(n, self_name)
            if target is not None:
                found[target] = found.get(target, True) and value is not None and _two_d_parameter(value, qualify)
    return {attr for attr, ok in found.items() if ok}


def _linear_children(inits: list[ast.FunctionDef], qualify: Callable[[str], str]) -> frozenset[str]:
    """The attributes the `__init__`s bind exactly once, at their top level, to a call of `nn.Linear`."""
    found: dict[str, list[ast.expr | None]] = {}
    top: set[str] = set()
    for init in inits:
        self_name = init.args.args[0].arg if init.args.args else "self"
        for n in ast.walk(init):
            target, value = _self_assignment(n, self_name)
            if target is not None:
                found.setdefault(target, []).append(value)
                if n in init.body:
                    top.add(target)
    return frozenset(attr for attr, values in found.items() if len(values) == 1 and attr in top
                     and isinstance(call := values[0], ast.Call) and (dotted := dotted_name(call.func)) is not None
                     and qualify(dotted) == LINEAR)


def _bound_attributes(inits: list[ast.FunctionDef]) -> set[str]:
    out: set[str] = set()
    for init in inits:
        self_name = init.args.args[0].arg if init.args.args else "self"
        out.update(t for n in ast.walk(init) if (t := _self_assignment(n, self_name)[0]) is not None)
    return out


def _self_assignment(n: ast.AST, self_name: str) -> tuple[str | None, ast.expr | None]:
    targets: list[ast.expr] = []
    value: ast.expr | None = None
    if isinstance(n, ast.Assign):
        targets, value = n.targets, n.value
    elif isinstance(n, ast.AnnAssign | ast.AugAssign):
        targets, value = [n.target], n.value if isinstance(n, ast.AnnAssign) else None
    for t in targets:
        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == self_name:
            return t.attr, value if len(targets) == 1 else None
    return None, None


def _two_d_parameter(value: ast.expr, qualify: Callable[[str], str]) -> bool:
    """`Parameter(torch.empty(out, in))`, `nn.Parameter(torch.randn((out, in)), requires_grad=...)`."""
    if not (isinstance(value, ast.Call) and value.args and (dotted := dotted_name(value.func)) is not None
            and qualify(dotted) in PARAMETERS):
        return False
    tensor = value.args[0]
    if not isinstance(tensor, ast.Call) or any(isinstance(a, ast.Starred) for a in tensor.args):
        return False
    dims = tensor.args
    if len(dims) == 1 and isinstance(dims[0], ast.Tuple | ast.List):
        dims = dims[0].elts
    return len(dims) == 2 and not any(isinstance(d, ast.Starred) for d in dims)


class _Forward:
    """One pass over a forward's statements: what each name holds (`IN`, `OUT`, `VALUE`) and the projection."""

    def __init__(self, forward: ast.FunctionDef, qualify: Callable[[str], str], children: frozenset[str]) -> None:
        self.forward = forward
        self.qualify = qualify
        self.children = children  # attributes bound to one `nn.Linear`
        self.self_name = ""
        self.projections: list[tuple[ast.expr | None, str]] = []  # (the weight, `WEIGHT` / `SUPER` / `CHILD`)
        self.assigned: dict[str, list[ast.expr]] = {}  # every value a name is given (the weight's expression)

    def projection(self) -> tuple[set[str], str] | None:
        """(the attributes of `self` the weight reads, how it projects: `WEIGHT`, `SUPER`, `CHILD`), else None."""
        args = self.forward.args
        positional = args.posonlyargs + args.args
        if len(positional) != 2 or args.vararg or args.kwonlyargs or args.kwarg:
            return None
        if any(self.qualify(dotted_name(d) or "") not in _NO_OP_DECORATORS for d in self.forward.decorator_list):
            return None
        self.self_name, x = positional[0].arg, positional[1].arg
        body = [s for s in self.forward.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        if not body or not isinstance(body[-1], ast.Return) or body[-1].value is None:
            return None
        env = self._block(body[:-1], {x: IN}, top=True)
        if env is None or self._kind(body[-1].value, env) != OUT or len(self.projections) != 1:
            return None
        weight, through = self.projections[0]
        if through != WEIGHT:
            return set(), through
        attrs = self._weight_attributes(weight, 0) if weight is not None else None
        return (attrs, WEIGHT) if attrs else None

    # -- statements ---------------------------------------------------------------------------------

    def _block(self, stmts: list[ast.stmt], env: dict[str, str], *, top: bool) -> dict[str, str] | None:
        """`env` after `stmts`; None when a statement is refused. A branch that raises gives `{}`-less
        `_RAISED` (its names never reach what follows)."""
        for stmt in stmts:
            if (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)) or isinstance(stmt, ast.Pass | ast.Assert):
                continue
            if isinstance(stmt, ast.Raise) and not top:
                return _RAISED
            if isinstance(stmt, ast.Assign | ast.AnnAssign):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                if stmt.value is None or len(targets) != 1 or not isinstance(targets[0], ast.Name):
                    return None
                kind = self._kind(stmt.value, env)
                if kind is None:
                    return None
                env = {**env, targets[0].id: kind}
                self.assigned.setdefault(targets[0].id, []).append(stmt.value)
            elif isinstance(stmt, ast.AugAssign):
                if not isinstance(stmt.target, ast.Name) or stmt.target.id not in env:
                    return None
                kind = _combine(env[stmt.target.id], self._kind(stmt.value, env), stmt.op)
                if kind is None:
                    return None
                env = {**env, stmt.target.id: kind}
            elif isinstance(stmt, ast.If):
                if self._kind(stmt.test, env) != VALUE:
                    return None
                before = len(self.projections)
                branches = [self._block(stmt.body, env, top=False), self._block(stmt.orelse, env, top=False)]
                if any(b is None for b in branches) or len(self.projections) != before:
                    return None  # a refused statement, or the projection made under a condition
                live = [b for b in branches if b is not _RAISED]
                if not live:
                    return _RAISED
                merged = _merge(live)  # type: ignore[arg-type]
                if merged is None:
                    return None
                env = merged
            else:
                return None
        return env

    # -- values -------------------------------------------------------------------------------------

    def _kind(self, e: ast.expr, env: dict[str, str]) -> str | None:
        """What `e` is computed from (`IN`, `OUT`, `VALUE`); None when it does something refused."""
        if isinstance(e, ast.Constant):
            return VALUE
        if isinstance(e, ast.Name):
            return env.get(e.id, VALUE)  # a name of the module or the class: a setting, not a tensor of this call
        if isinstance(e, ast.Attribute):
            inner = self._kind(e.value, env)
            if inner == VALUE or (inner is not None and e.attr in _META):
                return VALUE
            return None
        if isinstance(e, ast.Subscript):
            return VALUE if self._kind(e.value, env) == VALUE and self._kind(e.slice, env) == VALUE else None
        if isinstance(e, ast.Slice):
            parts = [p for p in (e.lower, e.upper, e.step) if p is not None]
            return VALUE if all(self._kind(p, env) == VALUE for p in parts) else None
        if isinstance(e, ast.UnaryOp):
            return self._kind(e.operand, env)
        if isinstance(e, ast.BinOp):
            if isinstance(e.op, ast.MatMult):
                return self._project(e.left, e.right, env, transposed=True)
            return _combine(self._kind(e.left, env), self._kind(e.right, env), e.op)
        if isinstance(e, ast.IfExp):
            kinds = {self._kind(e.body, env), self._kind(e.orelse, env)}
            return kinds.pop() if self._kind(e.test, env) == VALUE and len(kinds) == 1 else None
        if isinstance(e, ast.Compare | ast.BoolOp | ast.Tuple | ast.List):
            parts = ([e.left, *e.comparators] if isinstance(e, ast.Compare)
                     else e.values if isinstance(e, ast.BoolOp) else e.elts)
            return VALUE if all(self._kind(p, env) == VALUE for p in parts) else None
        if isinstance(e, ast.Call):
            return self._call(e, env)
        return None

    def _call(self, call: ast.Call, env: dict[str, str]) -> str | None:
        func = call.func
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return None
        if isinstance(func, ast.Attribute) and func.attr == "forward" and _is_super(func.value):
            if len(call.args) != 1 or call.keywords or self._kind(call.args[0], env) != IN:
                return None
            self.projections.append((None, SUPER))
            return OUT
        if (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == self.self_name
                and func.attr in self.children):
            if len(call.args) != 1 or call.keywords or self._kind(call.args[0], env) != IN:
                return None
            self.projections.append((None, CHILD))
            return OUT
        dotted = dotted_name(func)
        qualified = self.qualify(dotted) if dotted is not None else ""
        if qualified in _LINEARS:
            given = dict(zip(("input", "weight", "bias"), call.args, strict=False))
            given.update({k.arg: k.value for k in call.keywords if k.arg is not None})
            if set(given) - {"input", "weight", "bias"} or "input" not in given or "weight" not in given:
                return None
            if self._kind(given["input"], env) != IN:
                return None
            if any(self._kind(given[k], env) != VALUE for k in ("weight", "bias") if k in given):
                return None
            self.projections.append((given["weight"], WEIGHT))
            return OUT
        if qualified in _MATMULS:
            if len(call.args) != 2 or call.keywords:
                return None
            return self._project(call.args[0], call.args[1], env, transposed=True)
        values = [*call.args, *(k.value for k in call.keywords)]
        if isinstance(func, ast.Attribute) and not (isinstance(func.value, ast.Name) and func.value.id == self.self_name):
            inner = self._kind(func.value, env)
            if inner is None:
                return None
            if func.attr in _SHAPE_ONLY:
                values = []  # `b.expand_as(out)`, `w.type_as(x)`: the argument's shape and dtype only
            if any(self._kind(v, env) != VALUE for v in values):
                return None
            if inner == VALUE or func.attr in _CASTS:
                return inner
            return None  # another method of the input or the output (a reshape, a reduction)
        kinds = [self._kind(v, env) for v in values]
        if any(k is None for k in kinds):
            return None
        if qualified in _CLAMPS and kinds and kinds[0] in (IN, OUT) and all(k == VALUE for k in kinds[1:]):
            return kinds[0]
        # a function of the module's settings alone (a quantiser of the weight); on the input or the output,
        # any other call may reshape, gather or add a branch: refused
        return VALUE if all(k == VALUE for k in kinds) else None

    def _project(self, x: ast.expr, w: ast.expr, env: dict[str, str], *, transposed: bool) -> str | None:
        """`x @ W.t()`: the projection when `x` is the input and `W.t()` a transpose of a value."""
        inner = _untransposed(w) if transposed else w
        if inner is None or self._kind(x, env) != IN or self._kind(inner, env) != VALUE:
            return None
        self.projections.append((inner, WEIGHT))
        return OUT

    def _weight_attributes(self, weight: ast.expr, depth: int) -> set[str] | None:
        """The attributes of `self` the weight's expression reads (through the names it is assigned from);
        None when it reshapes or indexes them."""
        if depth > _MAX_DEPTH:
            return None
        out: set[str] = set()
        for n in ast.walk(weight):
            if (isinstance(n, ast.Attribute) and n.attr in _RESHAPES) or isinstance(n, ast.Subscript):
                return None
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == self.self_name:
                out.add(n.attr)
            elif isinstance(n, ast.Name) and n.id in self.assigned:
                for value in self.assigned[n.id]:
                    inner = self._weight_attributes(value, depth + 1)
                    if inner is None:
                        return None
                    out |= inner
        return out


_RAISED: dict[str, str] = {"<raised>": VALUE}  # the environment after a branch that raises


def _merge(envs: list[dict[str, str]]) -> dict[str, str] | None:
    """The names of branches that each go on: a name given different kinds by two of them is refused."""
    out: dict[str, str] = {}
    for name in {n for env in envs for n in env}:
        kinds = {env.get(name) for env in envs}
        if len(kinds) != 1 or None in kinds:
            known = kinds - {None}
            if len(known) != 1:
                return None
        out[name] = next(k for k in kinds if k is not None)
    return out


def _combine(a: str | None, b: str | None, op: ast.operator) -> str | None:
    """`a op b` for elementwise `+ - * /`: the input's or the output's kind, never both (a residual)."""
    if a is None or b is None or not isinstance(op, ast.Add | ast.Sub | ast.Mult | ast.Div):
        return None
    kinds = {a, b} - {VALUE}
    if len(kinds) > 1:
        return None
    return kinds.pop() if kinds else VALUE


def _untransposed(w: ast.expr) -> ast.expr | None:
    """`W` of `W.t()`, `W.T`, `W.transpose(0, 1)` / `(-1, -2)` / `(-2, -1)` / `(1, 0)`, else None."""
    if isinstance(w, ast.Attribute) and w.attr == "T":
        return w.value
    if isinstance(w, ast.Call) and isinstance(w.func, ast.Attribute) and not w.keywords:
        if w.func.attr == "t" and not w.args:
            return w.func.value
        if w.func.attr == "transpose" and len(w.args) == 2:
            dims = [_int(a) for a in w.args]
            if dims in ([0, 1], [1, 0], [-1, -2], [-2, -1]):
                return w.func.value
    return None


def _int(node: ast.expr) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        value = node.operand.value
        return -value if isinstance(value, int) else None
    return None


def _is_super(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
