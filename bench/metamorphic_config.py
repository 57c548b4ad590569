"""Meaning-keeping rewrites of configuration for the metamorphic harness (issue 20, second round).

The same layers chosen another way: an activation looked up in a dict of classes, through `getattr(nn, name)`,
or given as a constructor parameter's default (`act_layer=nn.GELU`, then `act_layer()`); a norm given as a
`functools.partial` factory (`norm_layer=partial(nn.LayerNorm, eps=1e-6)`); an `__init__`'s dimensions read
off a config object (`config.dim`); literal sizes named as module constants or as keyword parameters with
those defaults. Each leaves every call of the constructor as it was (new parameters are keyword-only, with
the old value as default).
"""

from __future__ import annotations

import ast
import random

from metamorphic_names import bound_elsewhere, fresh, identifiers, module_imports, params, resolved
from metamorphic_rewrites import Variant, _classes, _import_at, _method, _name_of, _one

ACTIVATIONS = frozenset({"GELU", "ReLU", "SiLU", "Tanh", "Sigmoid", "Mish", "LeakyReLU", "ReLU6", "Hardswish", "ELU",
                         "Softplus", "GLU", "Hardsigmoid", "PReLU", "SELU", "CELU", "Softsign", "Tanhshrink"})
NORMS = frozenset({"LayerNorm", "RMSNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "GroupNorm",
                   "InstanceNorm1d", "InstanceNorm2d", "LocalResponseNorm"})
SIZED = {"Linear": 2, "Conv1d": 2, "Conv2d": 2, "Conv3d": 2, "ConvTranspose1d": 2, "ConvTranspose2d": 2,
         "Embedding": 2, "LayerNorm": 1, "RMSNorm": 1, "BatchNorm1d": 1, "BatchNorm2d": 1, "GroupNorm": 2,
         "MultiheadAttention": 2, "Bilinear": 3}


def _inits(tree: ast.Module) -> list[ast.FunctionDef]:
    out = []
    for cls in _classes(tree):
        init = _method(cls, "__init__")
        if init is not None and init.args.args and init.args.args[0].arg == "self":
            out.append(init)
    return out


def _layer_calls(tree: ast.Module, init: ast.FunctionDef, names: frozenset[str],
                 body_only: bool = False) -> list[tuple[ast.Call, str]]:
    """`nn.X(...)` calls inside `init` with X among `names`: (call, X). With `body_only`, not those of the parameters'
    defaults (`act=nn.GELU()`), which run at definition time and cannot read a parameter of the same `__init__`."""
    imports = module_imports(tree)
    out = []
    for n in (x for s in init.body for x in ast.walk(s)) if body_only else ast.walk(init):
        if isinstance(n, ast.Call):
            target = resolved(n.func, imports) or ""
            mod, _, layer = target.rpartition(".")
            if mod == "torch.nn" and layer in names:
                out.append((n, layer))
    return out


def _nn(tree: ast.Module, taken: set[str]) -> str:
    name = _name_of(module_imports(tree), "torch.nn")
    if name is None:
        name = fresh("nn", taken)
        _import_at(tree, [ast.ImportFrom("torch", [ast.alias("nn", None if name == "nn" else name)], 0)])
    return name


def _kwonly(init: ast.FunctionDef, name: str, default: ast.expr) -> None:
    init.args.kwonlyargs.append(ast.arg(name))
    init.args.kw_defaults.append(default)


def act_dict(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`nn.GELU()` in `__init__` -> `ACTIVATIONS['gelu']()` with a module-level dict of activation classes."""
    taken = identifiers(tree)
    found = [(c, layer) for init in _inits(tree) for c, layer in _layer_calls(tree, init, ACTIVATIONS)]
    if not found:
        return []
    table = fresh("ACTIVATIONS", taken)
    layers = sorted({layer for _, layer in found})
    for call, layer in found:
        call.func = ast.Subscript(ast.Name(table, ast.Load()), ast.Constant(layer.lower()), ast.Load())
    nn_name = _nn(tree, taken)
    entries = ", ".join(f"{layer.lower()!r}: {nn_name}.{layer}" for layer in layers)
    first = next((i for i, n in enumerate(tree.body) if isinstance(n, (ast.ClassDef, ast.FunctionDef))), len(tree.body))
    tree.body.insert(first, ast.parse(f"{table} = {{{entries}}}").body[0])
    return _one(tree)


def act_getattr(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`nn.GELU()` in `__init__` -> `getattr(nn, 'GELU')()`."""
    taken = identifiers(tree)
    found = [(c, layer) for init in _inits(tree) for c, layer in _layer_calls(tree, init, ACTIVATIONS)]
    if not found or bound_elsewhere(tree, "getattr"):
        return []
    nn_name = _nn(tree, taken)
    for call, layer in found:
        call.func = ast.Call(ast.Name("getattr", ast.Load()), [ast.Name(nn_name, ast.Load()), ast.Constant(layer)], [])
    return _one(tree)


def _as_parameters(tree: ast.Module, names: frozenset[str], base: str, partial_of: bool) -> list[Variant]:
    taken = identifiers(tree)
    changed = 0
    partial_name: str | None = None
    for init in _inits(tree):
        taken_here = set(params(init)) | taken
        chosen: dict[str, str] = {}
        for call, layer in _layer_calls(tree, init, names, body_only=True):
            if partial_of and not all(isinstance(k.value, ast.Constant) and k.arg for k in call.keywords):
                continue
            key = layer if not partial_of else ast.unparse(call.func) + repr([(k.arg, k.value.value) for k in call.keywords])  # type: ignore[attr-defined]
            if key not in chosen:
                chosen[key] = fresh(base if not chosen else f"{base}_{len(chosen) + 1}", taken_here)
                default: ast.expr = call.func
                if partial_of:
                    if partial_name is None:
                        imported = _name_of(module_imports(tree), "functools.partial")
                        partial_name = imported or fresh("partial", taken)
                        if imported is None:
                            _import_at(tree, [ast.ImportFrom("functools", [ast.alias(
                                "partial", None if partial_name == "partial" else partial_name)], 0)])
                    default = ast.Call(ast.Name(partial_name, ast.Load()), [call.func], list(call.keywords))
                _kwonly(init, chosen[key], default)
            call.func = ast.Name(chosen[key], ast.Load())
            if partial_of:
                call.keywords = []
            changed += 1
    return _one(tree) if changed else []


def act_layer_param(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`nn.GELU()` in `__init__` -> `act_layer()` with a keyword-only parameter `act_layer=nn.GELU` (timm's form)."""
    return _as_parameters(tree, ACTIVATIONS, "act_layer", False)


def norm_layer_partial(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`nn.LayerNorm(d, eps=1e-6)` in `__init__` -> `norm_layer(d)` with `norm_layer=partial(nn.LayerNorm, eps=1e-6)`."""
    return _as_parameters(tree, NORMS, "norm_layer", True)


def config_object(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """An `__init__`'s parameters read off a config object: `config = SimpleNamespace(dim=dim, heads=heads)` first,
    then `config.dim` for every read of `dim` (parameters never rebound in the body)."""
    taken = identifiers(tree)
    changed = 0
    ns: str | None = None
    for init in _inits(tree):
        a = init.args
        names = [x.arg for x in (*a.posonlyargs, *a.args[1:], *a.kwonlyargs)]
        rebound = {n.id for n in ast.walk(ast.Module(init.body, [])) if isinstance(n, ast.Name)
                   and not isinstance(n.ctx, ast.Load)}
        rebound |= {x.arg for n in ast.walk(ast.Module(init.body, []))
                    if isinstance(n, (ast.Lambda, ast.FunctionDef)) for x in (*n.args.args, *n.args.kwonlyargs)}
        names = [x for x in names if x not in rebound and x != "self"]
        read = [x for x in names if any(isinstance(n, ast.Name) and n.id == x for s in init.body for n in ast.walk(s))]
        if not read:
            continue
        if ns is None:
            ns = _name_of(module_imports(tree), "types.SimpleNamespace") or fresh("SimpleNamespace", taken)
            if _name_of(module_imports(tree), "types.SimpleNamespace") is None:
                _import_at(tree, [ast.ImportFrom("types", [ast.alias(
                    "SimpleNamespace", None if ns == "SimpleNamespace" else ns)], 0)])
        cfg = fresh("config", taken | set(params(init)))
        for s in init.body:
            for n in ast.walk(s):
                for field, value in ast.iter_fields(n):
                    if isinstance(value, ast.Name) and value.id in read and isinstance(value.ctx, ast.Load):
                        setattr(n, field, ast.Attribute(ast.Name(cfg, ast.Load()), value.id, ast.Load()))
                    elif isinstance(value, list):
                        for i, v in enumerate(value):
                            if isinstance(v, ast.Name) and v.id in read and isinstance(v.ctx, ast.Load):
                                value[i] = ast.Attribute(ast.Name(cfg, ast.Load()), v.id, ast.Load())
        k = 1 if init.body and isinstance(init.body[0], ast.Expr) and isinstance(
            getattr(init.body[0], "value", None), ast.Constant) else 0
        made = ast.Assign([ast.Name(cfg, ast.Store())], ast.Call(ast.Name(ns, ast.Load()), [], [
            ast.keyword(x, ast.Name(x, ast.Load())) for x in read]))
        init.body.insert(k, made)
        changed += 1
    return _one(tree) if changed else []


def _sized_literals(tree: ast.Module) -> list[tuple[list[ast.expr], int]]:
    """(argument list, index) of each integer literal ≥ 2 among a sized layer's leading size arguments in an `__init__`."""
    out = []
    for init in _inits(tree):
        for call, layer in _layer_calls(tree, init, frozenset(SIZED)):
            for i, arg in enumerate(call.args[:SIZED[layer]]):
                if isinstance(arg, ast.Constant) and type(arg.value) is int and arg.value >= 2:
                    out.append((call.args, i))
    return out


def literal_dims_to_constants(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`nn.Linear(512, 2048)` in `__init__` -> `nn.Linear(DIM_512, DIM_2048)` with module constants."""
    taken = identifiers(tree)
    found = _sized_literals(tree)
    if not found:
        return []
    names: dict[int, str] = {}
    for args, i in found:
        v = args[i].value  # type: ignore[attr-defined]
        if v not in names:
            names[v] = fresh(f"DIM_{v}", taken)
        args[i] = ast.Name(names[v], ast.Load())
    first = next((i for i, n in enumerate(tree.body) if isinstance(n, (ast.ClassDef, ast.FunctionDef))), len(tree.body))
    tree.body[first:first] = [ast.Assign([ast.Name(n, ast.Store())], ast.Constant(v)) for v, n in sorted(names.items())]
    return _one(tree)


def literal_dims_to_parameters(tree: ast.Module, rng: random.Random) -> list[Variant]:
    """`nn.Linear(512, 2048)` in `__init__` -> `nn.Linear(dim_512, dim_2048)` with keyword-only parameters
    `dim_512=512, dim_2048=2048` of that `__init__`."""
    taken = identifiers(tree)
    changed = 0
    for init in _inits(tree):
        names: dict[int, str] = {}
        for call, layer in _layer_calls(tree, init, frozenset(SIZED), body_only=True):
            for i, arg in enumerate(call.args[:SIZED[layer]]):
                if isinstance(arg, ast.Constant) and type(arg.value) is int and arg.value >= 2:
                    if arg.value not in names:
                        names[arg.value] = fresh(f"dim_{arg.value}", taken | set(params(init)))
                        _kwonly(init, names[arg.value], ast.Constant(arg.value))
                    call.args[i] = ast.Name(names[arg.value], ast.Load())
                    changed += 1
    return _one(tree) if changed else []


CONFIG = {f.__name__: f for f in (
    act_dict, act_getattr, act_layer_param, norm_layer_partial, config_object,
    literal_dims_to_constants, literal_dims_to_parameters,
)}
