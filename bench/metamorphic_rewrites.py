"""Meaning-keeping rewrites of PyTorch model code for the metamorphic harness (`bench/metamorphic.py`).

Each rewrite takes a parsed module (its own copy, free to edit) and a seeded `random.Random`, and returns
the variants it makes: zero when its form does not occur in the file. A variant is one or more files (one
main file, checked; siblings it imports from) and the map from its class names back to the original's.
Every rewrite keeps what the program computes: the tests run original and rewritten modules side by side.
"""

from __future__ import annotations

import ast
import copy
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from metamorphic_names import (
    BUILTINS,
    NESTED_SCOPES,
    NameRenamer,
    bound_elsewhere,
    dotted,
    fresh,
    identifiers,
    loads,
    module_imports,
    own_nodes,
    params,
    rename_in,
    resolved,
    stores,
    strings,
)

MAIN = "model.py"


@dataclass(frozen=True, slots=True)
class Variant:
    """A rewritten program: files by relative path (`MAIN` is the one checked) and class renames new -> old."""

    files: dict[str, str]
    classes: dict[str, str] = field(default_factory=dict)
    methods: dict[str, str] = field(default_factory=dict)
    checked: tuple[str, ...] = (MAIN,)  # the files whose findings together stand for the original's


Rewrite = Callable[[ast.Module, random.Random], list[Variant]]


def _one(tree: ast.Module, classes: dict[str, str] | None = None, methods: dict[str, str] | None = None) -> list[Variant]:
    ast.fix_missing_locations(tree)
    return [Variant({MAIN: ast.unparse(tree)}, classes or {}, methods or {})]


def _classes(tree: ast.Module) -> list[ast.ClassDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    return next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def _import_at(tree: ast.Module, stmts: list[ast.stmt]) -> None:
    """Inserts import statements after the module docstring and `from __future__` imports."""
    i = 0
    while i < len(tree.body) and (
            (isinstance(tree.body[i], ast.ImportFrom) and getattr(tree.body[i], "module", None) == "__future__")
            or (i == 0 and isinstance(tree.body[0], ast.Expr) and isinstance(getattr(tree.body[0], "value", None), ast.Constant))):
        i += 1
    tree.body[i:i] = stmts


def _name_of(imports: dict[str, str], target: str) -> str | None:
    return next((k for k, v in imports.items() if v == target), None)


# --- 1. import spellings --------------------------------------------------------------------------------

def nn_alias(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`import torch.nn as nn` / `from torch import nn` -> `import torch.nn as tnn`, every use renamed."""
    imports = module_imports(tree)
    if imports.get("nn") != "torch.nn" or bound_elsewhere(tree, "nn"):
        return []
    new = fresh("tnn", identifiers(tree))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                if (a.asname or a.name) == "nn":
                    a.asname = new
    NameRenamer({"nn": new}).visit(tree)
    return _one(tree)


def functional_spelled_out(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`F.softmax(x)` -> `torch.nn.functional.softmax(x)`; the `F` import dropped."""
    imports = module_imports(tree)
    alias = _name_of(imports, "torch.nn.functional")
    if alias is None or bound_elsewhere(tree, alias) or bound_elsewhere(tree, "torch"):
        return []
    if imports.get("torch", "torch") != "torch":
        return []
    attr_values = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    if any(isinstance(n, ast.Name) and n.id == alias and id(n) not in attr_values for n in ast.walk(tree)):
        return []  # `F` passed around bare: keep the file as it is

    class Spell(ast.NodeTransformer):
        def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
            self.generic_visit(node)
            if isinstance(node.value, ast.Name) and node.value.id == alias:
                return ast.Attribute(ast.parse("torch.nn.functional", mode="eval").body, node.attr, node.ctx)
            return node

    Spell().visit(tree)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            node.names = [a for a in node.names if (a.asname or a.name.split(".")[0]) != alias
                          or (isinstance(node, ast.Import) and a.asname is None)]
    _drop_empty_imports(tree)
    _import_at(tree, [ast.Import([ast.alias("torch.nn.functional")])])
    return _one(tree)


def _drop_empty_imports(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        for fld in ("body", "orelse", "finalbody"):
            body = getattr(node, fld, None)
            if isinstance(body, list):
                kept = [s for s in body if not (isinstance(s, (ast.Import, ast.ImportFrom)) and not s.names)]
                setattr(node, fld, kept or [ast.Pass()])


def nn_from_imports(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`nn.Linear(...)` -> `Linear(...)` with `from torch.nn import Linear, ...` (capitalised names only)."""
    imports = module_imports(tree)
    alias = _name_of(imports, "torch.nn")
    if alias is None or bound_elsewhere(tree, alias):
        return []
    names: dict[str, None] = {}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == alias
                and node.attr[:1].isupper()):
            names[node.attr] = None
    spelled = {n for n in ast.walk(tree) if isinstance(n, ast.Name)}
    usable = [n for n in names if n not in {s.id for s in spelled} and not bound_elsewhere(tree, n)
              and n not in imports]
    if not usable:
        return []

    class Bare(ast.NodeTransformer):
        def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
            self.generic_visit(node)
            if isinstance(node.value, ast.Name) and node.value.id == alias and node.attr in usable:
                return ast.Name(node.attr, node.ctx)
            return node

    Bare().visit(tree)
    _import_at(tree, [ast.ImportFrom("torch.nn", [ast.alias(n) for n in sorted(usable)], 0)])
    return _one(tree)


# --- 2. call spellings -----------------------------------------------------------------------------------

TENSOR_METHODS = frozenset({"softmax", "log_softmax", "matmul", "bmm", "sigmoid", "tanh", "exp", "rsqrt", "sqrt",
                            "mean", "pow", "var", "transpose", "masked_fill", "baddbmm"})
FUNCTIONAL_METHODS = frozenset({"softmax", "log_softmax", "sigmoid", "tanh"})


def _module_bound(tree: ast.Module) -> set[str]:
    return set(module_imports(tree)) | {"self", "cls", "super"}


def _self_layers(tree: ast.Module) -> set[str]:
    """Attributes assigned a call (`self.softmax = nn.Softmax(-1)`): calling a method on them is no tensor."""
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call):
            out |= {t.attr for t in n.targets if isinstance(t, ast.Attribute)}
    return out


def method_to_function(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`x.softmax(-1)` -> `torch.softmax(x, -1)` (and matmul, exp, mean, pow, transpose, ...)."""
    torch_name = _name_of(module_imports(tree), "torch")
    if torch_name is None or bound_elsewhere(tree, torch_name):
        return []
    modules = _module_bound(tree)
    layers = _self_layers(tree)
    changed = 0

    class ToFunction(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            nonlocal changed
            self.generic_visit(node)
            f = node.func
            if not (isinstance(f, ast.Attribute) and f.attr in TENSOR_METHODS):
                return node
            recv = f.value
            root = recv
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if isinstance(root, ast.Name) and root.id in modules and not (
                    root is not recv and root.id == "self" and isinstance(recv, ast.Attribute) and recv.attr not in layers):
                return node
            if isinstance(recv, ast.Constant) or any(isinstance(a, ast.Starred) for a in node.args):
                return node
            changed += 1
            return ast.Call(ast.Attribute(ast.Name(torch_name, ast.Load()), f.attr, ast.Load()),
                            [recv, *node.args], node.keywords)

    ToFunction().visit(tree)
    return _one(tree) if changed else []


def function_to_method(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`torch.softmax(x, -1)` / `F.softmax(x, dim=-1)` / `torch.matmul(a, b)` -> `x.softmax(-1)`, `a.matmul(b)`."""
    imports = module_imports(tree)
    changed = 0

    class ToMethod(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            nonlocal changed
            self.generic_visit(node)
            target = resolved(node.func, imports)
            if target is None or not node.args or isinstance(node.args[0], ast.Starred):
                return node
            mod, _, op = target.rpartition(".")
            ok = (mod == "torch" and op in TENSOR_METHODS) or (mod == "torch.nn.functional" and op in FUNCTIONAL_METHODS)
            if not ok or any(k.arg in (None, "input", "_stacklevel") for k in node.keywords):
                return node
            changed += 1
            return ast.Call(ast.Attribute(node.args[0], op, ast.Load()), node.args[1:], node.keywords)

    ToMethod().visit(tree)
    return _one(tree) if changed else []


def matmul_operator_to_call(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`a @ b` -> `torch.matmul(a, b)`."""
    torch_name = _name_of(module_imports(tree), "torch")
    if torch_name is None or bound_elsewhere(tree, torch_name):
        return []
    changed = 0

    class ToCall(ast.NodeTransformer):
        def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
            nonlocal changed
            self.generic_visit(node)
            if isinstance(node.op, ast.MatMult):
                changed += 1
                return ast.Call(ast.Attribute(ast.Name(torch_name, ast.Load()), "matmul", ast.Load()),
                                [node.left, node.right], [])
            return node

    ToCall().visit(tree)
    return _one(tree) if changed else []


def matmul_call_to_operator(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`torch.matmul(a, b)` / `a.matmul(b)` -> `a @ b`."""
    imports = module_imports(tree)
    modules = _module_bound(tree)
    changed = 0

    class ToOperator(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            nonlocal changed
            self.generic_visit(node)
            if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
                return node
            if resolved(node.func, imports) == "torch.matmul" and len(node.args) == 2:
                changed += 1
                return ast.BinOp(node.args[0], ast.MatMult(), node.args[1])
            f = node.func
            if (isinstance(f, ast.Attribute) and f.attr == "matmul" and len(node.args) == 1
                    and not (isinstance(f.value, ast.Name) and f.value.id in modules)):
                changed += 1
                return ast.BinOp(f.value, ast.MatMult(), node.args[0])
            return node

    ToOperator().visit(tree)
    return _one(tree) if changed else []


SOFTMAXES = frozenset({"softmax", "log_softmax"})


def _softmax_calls(tree: ast.Module) -> list[tuple[ast.Call, int]]:
    """Softmax calls and the index of their `dim` among positional arguments."""
    imports = module_imports(tree)
    modules = _module_bound(tree)
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or any(isinstance(a, ast.Starred) for a in node.args):
            continue
        target = resolved(node.func, imports)
        if target in ("torch.softmax", "torch.log_softmax", "torch.nn.functional.softmax",
                      "torch.nn.functional.log_softmax"):
            out.append((node, 1))
        elif (isinstance(node.func, ast.Attribute) and node.func.attr in SOFTMAXES
              and not (isinstance(node.func.value, ast.Name) and node.func.value.id in modules)):
            out.append((node, 0))
    return out


def dim_keyword(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`x.softmax(-1)` / `F.softmax(x, -1)` -> `x.softmax(dim=-1)` / `F.softmax(x, dim=-1)`."""
    changed = 0
    for call, i in _softmax_calls(tree):
        if len(call.args) == i + 1:
            call.keywords.insert(0, ast.keyword("dim", call.args.pop(i)))
            changed += 1
    return _one(tree) if changed else []


def dim_positional(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`x.softmax(dim=-1)` / `F.softmax(x, dim=-1)` -> `x.softmax(-1)` / `F.softmax(x, -1)`."""
    changed = 0
    for call, i in _softmax_calls(tree):
        kw = next((k for k in call.keywords if k.arg == "dim"), None)
        if kw is not None and len(call.args) == i:
            call.keywords.remove(kw)
            call.args.append(kw.value)
            changed += 1
    return _one(tree) if changed else []


LAYER_PARAMETERS = {
    "Linear": ("in_features", "out_features", "bias"),
    "Conv1d": ("in_channels", "out_channels", "kernel_size", "stride", "padding"),
    "Conv2d": ("in_channels", "out_channels", "kernel_size", "stride", "padding"),
    "LayerNorm": ("normalized_shape", "eps", "elementwise_affine"),
    "BatchNorm2d": ("num_features", "eps", "momentum"),
    "Dropout": ("p", "inplace"),
    "Embedding": ("num_embeddings", "embedding_dim", "padding_idx"),
    "Softmax": ("dim",),
}


def layer_keywords(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`nn.Linear(a, b)` -> `nn.Linear(in_features=a, out_features=b)` (Conv, LayerNorm, Dropout, ... too)."""
    imports = module_imports(tree)
    changed = 0
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or any(isinstance(a, ast.Starred) for a in node.args) or not node.args:
            continue
        target = resolved(node.func, imports) or ""
        mod, _, cls = target.rpartition(".")
        names = LAYER_PARAMETERS.get(cls)
        if mod not in ("torch.nn", "torch.nn.modules") or names is None or len(node.args) > len(names):
            continue
        node.keywords[0:0] = [ast.keyword(k, v) for k, v in zip(names, node.args, strict=False)]
        node.args = []
        changed += 1
    return _one(tree) if changed else []


# --- 3. consistent renaming ------------------------------------------------------------------------------

MODULE_OWNED = frozenset({
    "weight", "bias", "training", "in_features", "out_features", "eps", "normalized_shape", "elementwise_affine",
    "running_mean", "running_var", "num_features", "momentum", "affine", "padding", "stride", "kernel_size",
    "dilation", "groups", "in_channels", "out_channels", "p", "inplace", "dim", "num_heads", "embed_dim",
    "batch_first", "config", "dtype", "device", "num_embeddings", "embedding_dim", "padding_idx",
})
HOOKS = frozenset({
    "forward", "extra_repr", "reset_parameters", "_init_weights", "init_weights", "train", "eval", "state_dict",
    "load_state_dict", "_load_from_state_dict", "parameters", "named_parameters", "children", "modules", "apply",
    "to", "cuda", "cpu", "half", "float", "double", "register_buffer", "register_parameter", "get_input_embeddings",
    "set_input_embeddings", "get_output_embeddings", "set_output_embeddings", "post_init", "backward", "setup",
    "step", "zero_grad", "fuse", "fuse_model", "build", "call", "from_pretrained", "save_pretrained",
})


def rename_locals(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """Every function's own locals (not parameters, globals, closures) renamed `x` -> `x_r`."""
    taken = identifiers(tree)
    changed = 0
    for fn in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
        nodes = list(own_nodes(fn.body))
        if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
               and n.func.id in ("locals", "vars", "eval", "exec") for n in nodes):
            continue
        declared = {name for n in nodes if isinstance(n, (ast.Global, ast.Nonlocal)) for name in n.names}
        comp_targets = {t for n in nodes if isinstance(n, ast.comprehension) for t in stores(ast.walk(n.target))}
        handlers = {n.name for n in nodes if isinstance(n, ast.ExceptHandler) and n.name}
        nested = {x for n in ast.walk(fn) if isinstance(n, NESTED_SCOPES) and n is not fn
                  for x in loads(ast.walk(n)) + stores(ast.walk(n))}
        local = set(stores(nodes)) - set(params(fn)) - declared - comp_targets - handlers - nested
        if not local:
            continue
        mapping = {x: fresh(f"{x}_r", taken) for x in sorted(local)}
        rename_in(nodes, mapping)
        changed += 1
    return _one(tree) if changed else []


def _attribute_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """Attribute names read or written only on `self`, and those read on anything else."""
    on_self, elsewhere = set(), set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute):
            (on_self if isinstance(n.value, ast.Name) and n.value.id == "self" else elsewhere).add(n.attr)
    return on_self - elsewhere, elsewhere


def rename_attributes(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """Attributes a class stores on `self` and reads only through `self` renamed `self.qkv` -> `self.qkv_r`."""
    only_self, _ = _attribute_names(tree)
    stored = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)}
    methods = {f.name for c in _classes(tree) for f in c.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
    names = (only_self & stored) - strings(tree) - MODULE_OWNED - methods
    names = {n for n in names if not n.startswith("__") and n not in identifiers_of_names(tree)}
    if not names:
        return []
    taken = identifiers(tree)
    mapping = {n: fresh(f"{n}_r", taken) for n in sorted(names)}
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute) and n.attr in mapping:
            n.attr = mapping[n.attr]
    return _one(tree)


def identifiers_of_names(tree: ast.Module) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        k.arg for n in ast.walk(tree) if isinstance(n, ast.Call) for k in n.keywords if k.arg}


def rename_methods(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """Helper methods called through `self` renamed `self._attn(...)` -> `self._attn_r(...)`."""
    only_self, _ = _attribute_names(tree)
    called = {n.func.attr for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
              and isinstance(n.func.value, ast.Name) and n.func.value.id == "self"}
    defined = {f.name for c in _classes(tree) for f in c.body if isinstance(f, ast.FunctionDef) and not f.decorator_list}
    names = (defined & called & only_self) - HOOKS - strings(tree) - identifiers_of_names(tree)
    names = {n for n in names if not n.startswith("__")}
    if not names:
        return []
    taken = identifiers(tree)
    mapping = {n: fresh(f"{n}_r", taken) for n in sorted(names)}
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute) and n.attr in mapping:
            n.attr = mapping[n.attr]
        elif isinstance(n, ast.FunctionDef) and n.name in mapping:
            n.name = mapping[n.name]
    return _one(tree, methods={v: k for k, v in mapping.items()})


def rename_classes(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """Every top-level class renamed `Attention` -> `AttentionR`, with its uses and `__all__` strings."""
    top = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    names = {c.name for c in top if not any(isinstance(n, ast.arg) and n.arg == c.name for n in ast.walk(tree))}
    attrs = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    names -= attrs
    if not names:
        return []
    taken = identifiers(tree)
    mapping = {n: fresh(f"{n}R", taken) for n in sorted(names)}
    for c in top:
        if c.name in mapping:
            c.name = mapping[c.name]
    NameRenamer(mapping, strings=True).visit(tree)
    return _one(tree, classes={v: k for k, v in mapping.items()})


# --- 4. temporaries --------------------------------------------------------------------------------------

def _blocks(tree: ast.AST) -> list[list[ast.stmt]]:
    out = []
    for node in ast.walk(tree):
        for fld in ("body", "orelse", "finalbody"):
            body = getattr(node, fld, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                out.append(body)
    return out


def _functions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def inline_temporaries(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`t = f(x); y = g(t)` -> `y = g(f(x))` and `y = f(x); return y` -> `return f(x)`, for single-use temporaries."""
    changed = 0
    for fn in _functions(tree):
        nodes = list(own_nodes(fn.body))
        count: dict[str, int] = {}
        for n in ast.walk(fn):
            if isinstance(n, ast.Name):
                count[n.id] = count.get(n.id, 0) + 1
        for body in _blocks(fn):
            i = 0
            while i + 1 < len(body):
                a, b = body[i], body[i + 1]
                if (isinstance(a, ast.Assign) and len(a.targets) == 1 and isinstance(a.targets[0], ast.Name)
                        and count.get(a.targets[0].id) == 2 and a.targets[0].id not in params(fn)
                        and not isinstance(b, (ast.For, ast.While, ast.If, ast.With, ast.Try, ast.FunctionDef,
                                               ast.ClassDef, ast.AsyncFunctionDef))
                        and any(a2 is a for a2 in nodes)):
                    name = a.targets[0].id
                    uses = [n for n in ast.walk(b) if isinstance(n, ast.Name) and n.id == name
                            and isinstance(n.ctx, ast.Load)]
                    lambdas = [n for n in ast.walk(b) if isinstance(n, (ast.Lambda, ast.comprehension))]
                    if len(uses) == 1 and not lambdas:
                        _replace(b, uses[0], a.value)
                        del body[i]
                        changed += 1
                        continue
                i += 1
    return _one(tree) if changed else []


def _replace(root: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for node in ast.walk(root):
        for fld, value in ast.iter_fields(node):
            if value is old:
                setattr(node, fld, new)
                return
            if isinstance(value, list):
                for k, item in enumerate(value):
                    if item is old:
                        value[k] = new
                        return


def split_nested_calls(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`y = f(g(x))` / `return f(g(x))` -> `t = g(x); y = f(t)`: the inner call of a statement named first."""
    changed = 0
    taken = identifiers(tree)
    for fn in _functions(tree):
        for body in _blocks(fn):
            i = 0
            while i < len(body):
                s = body[i]
                value = s.value if isinstance(s, (ast.Assign, ast.Return)) else None
                if (isinstance(value, ast.Call) and value.args and isinstance(value.args[0], ast.Call)
                        and any(s is x for x in own_nodes(fn.body))):
                    name = fresh("hidden", taken)
                    body.insert(i, ast.Assign([ast.Name(name, ast.Store())], value.args[0]))
                    value.args[0] = ast.Name(name, ast.Load())
                    changed += 1
                    i += 1
                i += 1
    return _one(tree) if changed else []


def name_returned_values(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`return f(x)` -> `out = f(x); return out` in every `forward`."""
    changed = 0
    taken = identifiers(tree)
    for cls in _classes(tree):
        fn = _method(cls, "forward")
        if fn is None:
            continue
        for body in _blocks(fn):
            for s in list(body):
                if isinstance(s, ast.Return) and isinstance(s.value, (ast.Call, ast.BinOp)) and any(
                        s is x for x in own_nodes(fn.body)):
                    name = fresh("out", taken)
                    k = body.index(s)
                    body[k:k + 1] = [ast.Assign([ast.Name(name, ast.Store())], s.value),
                                     ast.Return(ast.Name(name, ast.Load()))]
                    changed += 1
    return _one(tree) if changed else []


# --- 5. extraction ---------------------------------------------------------------------------------------

SIMPLE = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr)


def _extractable(s: ast.stmt) -> bool:
    if not isinstance(s, SIMPLE) or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)):
        return False
    for n in ast.walk(s):
        if isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr, ast.Global, ast.Nonlocal)):
            return False
        if isinstance(n, ast.Name) and n.id in ("super", "__class__", "locals", "vars"):
            return False
    return True


def _longest_run(body: list[ast.stmt]) -> tuple[int, int] | None:
    best: tuple[int, int] | None = None
    i = 0
    while i < len(body):
        if _extractable(body[i]):
            j = i
            while j < len(body) and _extractable(body[j]):
                j += 1
            if j - i >= 2 and (best is None or j - i > best[1] - best[0]):
                best = (i, j)
            i = j
        else:
            i += 1
    return best


def _extract(fn: ast.FunctionDef, run: tuple[int, int]) -> tuple[list[str], list[str], list[ast.stmt]]:
    """(inputs, outputs, statements) of a run of `fn`'s body."""
    i, j = run
    before = set(params(fn)) | set(stores(own_nodes(fn.body[:i])))
    inside = fn.body[i:j]
    after = set(loads(ast.walk(ast.Module(fn.body[j:], []))))
    inputs = [x for x in loads(ast.walk(ast.Module(inside, []))) if x in before and x != "self"]
    outputs = [x for x in stores(own_nodes(inside)) if x in after]
    return inputs, outputs, inside


def _call_statement(call: ast.expr, outputs: list[str]) -> ast.stmt:
    if not outputs:
        return ast.Expr(call)
    target: ast.expr = (ast.Name(outputs[0], ast.Store()) if len(outputs) == 1
                        else ast.Tuple([ast.Name(x, ast.Store()) for x in outputs], ast.Store()))
    return ast.Assign([target], call)


def _returned(outputs: list[str]) -> list[ast.stmt]:
    if not outputs:
        return []
    value: ast.expr = (ast.Name(outputs[0], ast.Load()) if len(outputs) == 1
                       else ast.Tuple([ast.Name(x, ast.Load()) for x in outputs], ast.Load()))
    return [ast.Return(value)]


def _args(names: list[str]) -> ast.arguments:
    return ast.arguments([], [ast.arg(x) for x in names], None, [], [], None, [])


def extract_method(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """The longest run of simple statements of each `forward` moved into a new method called in its place."""
    taken = identifiers(tree)
    changed = 0
    for cls in _classes(tree):
        fn = _method(cls, "forward")
        run = _longest_run(fn.body) if fn is not None else None
        if fn is None or run is None:
            continue
        inputs, outputs, inside = _extract(fn, run)
        name = fresh("_forward_part", taken)
        method = ast.FunctionDef(name, _args(["self", *inputs]), [*inside, *_returned(outputs)], [], None)
        call = ast.Call(ast.Attribute(ast.Name("self", ast.Load()), name, ast.Load()),
                        [ast.Name(x, ast.Load()) for x in inputs], [])
        fn.body[run[0]:run[1]] = [_call_statement(call, outputs)]
        cls.body.insert(cls.body.index(fn) + 1, method)
        changed += 1
    return _one(tree) if changed else []


def extract_function(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """The longest run of simple statements of each `forward` moved into a module-level function `f(module, ...)`."""
    taken = identifiers(tree)
    changed = 0
    for cls in [c for c in tree.body if isinstance(c, ast.ClassDef)]:
        fn = _method(cls, "forward")
        run = _longest_run(fn.body) if fn is not None else None
        if fn is None or run is None:
            continue
        inputs, outputs, inside = _extract(fn, run)
        owner = fresh("module", taken)
        rename_in(ast.walk(ast.Module(inside, [])), {"self": owner})
        name = fresh(f"{cls.name.lower()}_forward_part", taken)
        func = ast.FunctionDef(name, _args([owner, *inputs]), [*inside, *_returned(outputs)], [], None)
        call = ast.Call(ast.Name(name, ast.Load()), [ast.Name(x, ast.Load()) for x in ["self", *inputs]], [])
        fn.body[run[0]:run[1]] = [_call_statement(call, outputs)]
        tree.body.insert(tree.body.index(cls), func)
        changed += 1
    return _one(tree) if changed else []


# --- 6. layer construction -------------------------------------------------------------------------------

def _constructions(tree: ast.Module, cls: ast.ClassDef) -> list[tuple[ast.Assign, str, str]]:
    """`self.name = nn.X(...)` statements at the top of `__init__`: (statement, attribute, layer class)."""
    imports = module_imports(tree)
    init = _method(cls, "__init__")
    out = []
    for s in init.body if init else ():
        if (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Attribute)
                and isinstance(s.targets[0].value, ast.Name) and s.targets[0].value.id == "self"
                and isinstance(s.value, ast.Call)):
            target = resolved(s.value.func, imports) or ""
            if target.startswith("torch.nn.") and target.count(".") == 2 and target.rpartition(".")[2][:1].isupper():
                out.append((s, s.targets[0].attr, target.rpartition(".")[2]))
    return out


def builder_method(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`self.proj = nn.Linear(d, d)` -> `self.proj = self._make_proj(d)` with `def _make_proj(self, d): return nn.Linear(d, d)`."""
    taken = identifiers(tree)
    changed = 0
    for cls in _classes(tree):
        init = _method(cls, "__init__")
        made = []
        for s, attr, _ in _constructions(tree, cls):
            assert init is not None
            k = init.body.index(s)
            before = set(params(init)) | set(stores(own_nodes(init.body[:k])))
            free = [x for x in loads(ast.walk(s.value)) if x in before and x != "self"]
            name = fresh(f"_make_{attr}", taken)
            made.append(ast.FunctionDef(name, _args(["self", *free]), [ast.Return(s.value)], [], None))
            s.value = ast.Call(ast.Attribute(ast.Name("self", ast.Load()), name, ast.Load()),
                               [ast.Name(x, ast.Load()) for x in free], [])
        if made and init is not None:
            k = cls.body.index(init) + 1
            cls.body[k:k] = made
            changed += 1
    return _one(tree) if changed else []


def builder_function(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`nn.Linear(a, b)` in `__init__` -> `make_linear(a, b)` with `def make_linear(*args, **kwargs): return nn.Linear(*args, **kwargs)`."""
    taken = identifiers(tree)
    builders: dict[str, str] = {}
    funcs = []
    for cls in _classes(tree):
        for s, _, layer in _constructions(tree, cls):
            assert isinstance(s.value, ast.Call)
            if layer not in builders:
                builders[layer] = fresh(f"make_{layer.lower()}", taken)
                body = ast.parse(f"def {builders[layer]}(*args, **kwargs):\n    return "
                                 f"{ast.unparse(s.value.func)}(*args, **kwargs)").body[0]
                funcs.append(body)
            s.value.func = ast.Name(builders[layer], ast.Load())
    if not funcs:
        return []
    first_class = next((i for i, n in enumerate(tree.body) if isinstance(n, (ast.ClassDef, ast.FunctionDef))),
                       len(tree.body))
    tree.body[first_class:first_class] = funcs
    return _one(tree)


def _sequential_calls(tree: ast.Module) -> list[ast.Call]:
    imports = module_imports(tree)
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and resolved(n.func, imports) == "torch.nn.Sequential"
            and n.args and not n.keywords and all(_layer_like(a) for a in n.args)
            and not (len(n.args) == 1 and not isinstance(n.args[0], ast.Call))]  # a lone name may hold a dict


def _layer_like(arg: ast.expr) -> bool:
    """An argument that is a module, not the one mapping a `Sequential(OrderedDict(...))` takes."""
    if isinstance(arg, (ast.Starred, ast.Dict, ast.DictComp, ast.List, ast.Tuple, ast.Constant)):
        return False
    if isinstance(arg, ast.Call):
        name = dotted(arg.func) or ""
        return name.rpartition(".")[2] not in ("OrderedDict", "dict")
    return True


def sequential_ordereddict(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`nn.Sequential(a, b)` -> `nn.Sequential(collections.OrderedDict([("0", a), ("1", b)]))`."""
    calls = _sequential_calls(tree)
    if not calls:
        return []
    name = fresh("collections", identifiers(tree)) if "collections" in identifiers(tree) else "collections"
    for call in calls:
        pairs = [ast.Tuple([ast.Constant(str(i)), a], ast.Load()) for i, a in enumerate(call.args)]
        call.args = [ast.Call(ast.Attribute(ast.Name(name, ast.Load()), "OrderedDict", ast.Load()),
                              [ast.List(pairs, ast.Load())], [])]
    _import_at(tree, [ast.Import([ast.alias("collections", None if name == "collections" else name)])])
    return _one(tree)


def sequential_modulelist(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`self.mlp = nn.Sequential(a, b)` -> `nn.ModuleList([a, b])`, and `y = self.mlp(x)` -> a loop over it."""
    imports = module_imports(tree)
    seq = {id(c) for c in _sequential_calls(tree)}
    _, elsewhere = _attribute_names(tree)
    taken = identifiers(tree)
    changed = 0
    for cls in _classes(tree):
        init = _method(cls, "__init__")
        for s in list(init.body) if init else ():
            if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Attribute)
                    and isinstance(s.targets[0].value, ast.Name) and s.targets[0].value.id == "self"
                    and id(s.value) in seq):
                continue
            attr = s.targets[0].attr
            if attr in elsewhere:
                continue
            uses = [n for n in ast.walk(cls) if isinstance(n, ast.Attribute) and n.attr == attr]
            sites = []
            for fn in _functions(cls):
                for body in _blocks(fn):
                    for st in body:
                        v = st.value if isinstance(st, (ast.Assign, ast.Return)) else None
                        if (isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr == attr
                                and isinstance(v.func.value, ast.Name) and v.func.value.id == "self"
                                and len(v.args) == 1 and not v.keywords and not isinstance(v.args[0], ast.Starred)):
                            sites.append((body, st, v))
            if not sites or len(uses) != len(sites) + 1:
                continue
            assert isinstance(s.value, ast.Call)
            s.value = ast.Call(ast.Attribute(ast.Name(_name_of(imports, "torch.nn") or "torch", ast.Load()), "ModuleList",
                                             ast.Load()) if _name_of(imports, "torch.nn") else
                               ast.parse("torch.nn.ModuleList", mode="eval").body,
                               [ast.List(s.value.args, ast.Load())], [])
            for body, st, v in sites:
                h, layer = fresh("hidden", taken), fresh("layer", taken)
                loop = ast.parse(f"for {layer} in self.{attr}:\n    {h} = {layer}({h})").body[0]
                tail: ast.stmt
                if isinstance(st, ast.Return):
                    tail = ast.Return(ast.Name(h, ast.Load()))
                else:
                    tail = ast.Assign(st.targets, ast.Name(h, ast.Load()))
                k = body.index(st)
                body[k:k + 1] = [ast.Assign([ast.Name(h, ast.Store())], v.args[0]), loop, tail]
            changed += 1
    return _one(tree) if changed else []


# --- 7. across files -------------------------------------------------------------------------------------

def split_base_class(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """A class split over two files: `base.py` keeps `__init__` and helpers as `CBase`, `model.py` has `class C(CBase)` with `forward`.

    One variant per class (at most three, drawn by the seed).
    """
    eligible = [c.name for c in tree.body if isinstance(c, ast.ClassDef) and _method(c, "__init__")
                and _method(c, "forward") and c.bases]
    rng.shuffle(eligible)
    out = []
    for name in sorted(eligible[:3]):
        base_tree, model_tree = copy.deepcopy(tree), copy.deepcopy(tree)
        base_name = fresh(f"{name}Base", identifiers(tree))
        for c in base_tree.body:
            if isinstance(c, ast.ClassDef) and c.name == name:
                c.name = base_name
                c.body = [s for s in c.body if not (isinstance(s, ast.FunctionDef) and s.name == "forward")] or [ast.Pass()]
        NameRenamer({name: base_name}).visit(base_tree)
        for c in model_tree.body:
            if isinstance(c, ast.ClassDef) and c.name == name:
                c.bases = [ast.Name(base_name, ast.Load())]
                c.keywords = []
                c.body = [s for s in c.body if isinstance(s, ast.FunctionDef) and s.name == "forward"]
        _import_at(model_tree, [ast.ImportFrom("base", [ast.alias(base_name)], 1)])
        ast.fix_missing_locations(base_tree)
        ast.fix_missing_locations(model_tree)
        out.append(Variant({MAIN: ast.unparse(model_tree), "base.py": ast.unparse(base_tree), "__init__.py": ""}))
    return out


def helpers_to_sibling(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """Module-level functions that need only imports and each other moved to `helpers.py`, imported back."""
    imports = module_imports(tree)
    funcs = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    moved = set(funcs)
    changed = True
    while changed:
        changed = False
        for name in sorted(moved):
            free = set(loads(ast.walk(funcs[name]))) - set(stores(ast.walk(funcs[name]))) - {
                a.arg for n in ast.walk(funcs[name]) if isinstance(n, ast.arg) for a in [n]}
            if not free <= set(imports) | BUILTINS | moved:
                moved.discard(name)
                changed = True
    if not moved:
        return []
    header = [s for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))]
    helpers = ast.Module([*copy.deepcopy(header), *[funcs[n] for n in funcs if n in moved]], [])
    tree.body = [s for s in tree.body if not (isinstance(s, ast.FunctionDef) and s.name in moved)]
    _import_at(tree, [ast.ImportFrom("helpers", [ast.alias(n) for n in sorted(moved)], 1)])
    ast.fix_missing_locations(helpers)
    ast.fix_missing_locations(tree)
    return [Variant({MAIN: ast.unparse(tree), "helpers.py": ast.unparse(helpers), "__init__.py": ""},
                    checked=(MAIN, "helpers.py"))]


# --- 8. neutral noise ------------------------------------------------------------------------------------

def docstrings(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """A docstring added to every class and function that has none."""
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            first = n.body[0]
            if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                n.body.insert(0, ast.Expr(ast.Constant(f"What {n.name} does.")))
    return _one(tree)


def annotations(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """String annotations on every unannotated parameter of `forward` (`"torch.Tensor"`) and its return."""
    changed = 0
    for cls in _classes(tree):
        fn = _method(cls, "forward")
        if fn is None:
            continue
        for a in (*fn.args.args[1:], *fn.args.kwonlyargs):
            if a.annotation is None:
                a.annotation = ast.Constant("torch.Tensor")
                changed += 1
        if fn.returns is None:
            fn.returns = ast.Constant("torch.Tensor")
            changed += 1
    return _one(tree) if changed else []


def reorder_methods(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """The methods of each class in reverse order (classes whose body holds only plain methods)."""
    changed = 0
    for cls in _classes(tree):
        head = 1 if cls.body and isinstance(cls.body[0], ast.Expr) else 0
        rest = cls.body[head:]
        if len(rest) < 2 or not all(isinstance(s, ast.FunctionDef) for s in rest):
            continue
        if any(dotted(d) is None or "." in (dotted(d) or "") or dotted(d) == "overload"
               for s in rest for d in s.decorator_list if isinstance(s, ast.FunctionDef)):
            continue
        names = [s.name for s in rest if isinstance(s, ast.FunctionDef)]
        if len(set(names)) != len(names):
            continue
        cls.body[head:] = rest[::-1]
        changed += 1
    return _one(tree) if changed else []


def reorder_classes(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """Each run of adjacent top-level classes reversed, as far as their definition-time dependencies allow."""
    changed = 0
    i = 0
    body = tree.body
    while i < len(body):
        if not isinstance(body[i], ast.ClassDef):
            i += 1
            continue
        j = i
        while j < len(body) and isinstance(body[j], ast.ClassDef):
            j += 1
        run = body[i:j]
        if len(run) >= 2:
            order = _reversed_topo(run)
            if [c.name for c in order] != [c.name for c in run]:  # type: ignore[attr-defined]
                body[i:j] = order
                changed += 1
        i = j
    return _one(tree) if changed else []


def _definition_time(cls: ast.ClassDef) -> set[str]:
    """Names a class statement reads when it runs: bases, keywords, decorators, class-level statements."""
    nodes: list[ast.AST] = [*cls.bases, *cls.keywords, *cls.decorator_list]
    for s in cls.body:
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            nodes += [*s.decorator_list, *s.args.defaults, *[d for d in s.args.kw_defaults if d is not None]]
        else:
            nodes.append(s)
    return {x for n in nodes for x in loads(ast.walk(n))}


def _reversed_topo(run: list[ast.stmt]) -> list[ast.stmt]:
    classes = [c for c in run if isinstance(c, ast.ClassDef)]
    names = {c.name for c in classes}
    deps = {c.name: _definition_time(c) & names - {c.name} for c in classes}
    placed: list[ast.ClassDef] = []
    left = classes[::-1]
    while left:
        done = {c.name for c in placed}
        nxt = next((c for c in left if deps[c.name] <= done), left[0])
        placed.append(nxt)
        left.remove(nxt)
    return list(placed)


def normalise(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """The module printed back by `ast.unparse`: comments dropped, layout normalised (every rewrite's baseline)."""
    return _one(tree)


REWRITES: dict[str, Rewrite] = {f.__name__: f for f in (
    normalise, nn_alias, functional_spelled_out, nn_from_imports,
    method_to_function, function_to_method, matmul_operator_to_call, matmul_call_to_operator, dim_keyword,
    dim_positional, layer_keywords,
    rename_locals, rename_attributes, rename_methods, rename_classes,
    inline_temporaries, split_nested_calls, name_returned_values,
    extract_method, extract_function,
    builder_method, builder_function, sequential_ordereddict, sequential_modulelist,
    split_base_class, helpers_to_sibling,
    docstrings, annotations, reorder_methods, reorder_classes,
)}

GROUPS = {
    "normalise": 0, "nn_alias": 1, "functional_spelled_out": 1, "nn_from_imports": 1,
    "method_to_function": 2, "function_to_method": 2, "matmul_operator_to_call": 2, "matmul_call_to_operator": 2,
    "dim_keyword": 2, "dim_positional": 2, "layer_keywords": 2,
    "rename_locals": 3, "rename_attributes": 3, "rename_methods": 3, "rename_classes": 3,
    "inline_temporaries": 4, "split_nested_calls": 4, "name_returned_values": 4,
    "extract_method": 5, "extract_function": 5,
    "builder_method": 6, "builder_function": 6, "sequential_ordereddict": 6, "sequential_modulelist": 6,
    "split_base_class": 7, "helpers_to_sibling": 7,
    "docstrings": 8, "annotations": 8, "reorder_methods": 8, "reorder_classes": 8,
}


def apply(name: str, text: str, rng: random.Random) -> list[Variant]:
    """The variants of rewrite `name` on `text` (parsed afresh), each checked to parse; [] when it does not apply."""
    tree = ast.parse(text)
    variants = REWRITES[name](tree, rng)
    for v in variants:
        for path, body in v.files.items():
            if path.endswith(".py"):
                ast.parse(body, path)
    return variants
