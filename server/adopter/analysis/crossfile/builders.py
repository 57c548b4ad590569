"""What an imported builder function returns for one call: the torch layer, when every path left open builds it.

`self.conv = create_conv2d(in_chs, out_chs, 3, stride=stride, padding=pad_type)` (timm, effdet, geffnet's
`select_conv2d`): the function's `return` statements are read (Python's `ast`, never executed), following
a local (`m = ...; return m`) and the builders it calls in turn (`create_conv2d_pad`, in the same file or
imported, a few levels deep). A branch is dropped only when the call decides its test:

- `'num_experts' in kwargs` (with `kwargs` the function's `**` parameter): whether the call passes that
  keyword; `kwargs['num_experts'] > 0`: when the call passes it as a number;
- `isinstance(kernel_size, list)` (or `tuple`): false when the call passes an int literal, or a parameter of
  the caller whose default is one; decided by a list or tuple display passed (by position or keyword).

Every other test leaves both branches open. The call builds a torch layer (`built_layer`) only when every
open return constructs that layer or a class of the builder's files that subclasses it (`class
Conv2dSame(nn.Conv2d)`, `Conv2dSameExport`). When the other open returns build classes of the package's own
(a `MixedConv2d(nn.ModuleDict)` for a list of kernel sizes, a `CondConv2d(nn.Module)` with experts), the
call *may* build the layer (`possible_layer`): the reach binds the attribute to it under one condition and
to the call as written under the other, as a conditional expression written in the file would.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from adopter.analysis.crossfile.ast_files import ParsedFile, bound_names, qualify
from adopter.analysis.crossfile.evaluator import UNKNOWN, literal
from adopter.analysis.crossfile.factories import is_function_test, returned_lambda
from adopter.analysis.crossfile.norm_act import BATCH_NORMS, norm_then_act
from adopter.analysis.names.ast_dotted import dotted_name

MAX_DEPTH = 3  # builders followed through builders
MAX_RETURNS = 8  # open returns read per builder


# (name, file it is named in) -> the string literal that module-level name is bound to, else None
StringConstant = Callable[[str, str], str | None]


@dataclass(frozen=True)
class Call:
    """What the caller passes: positional argument texts (None past a `*` splat) and keyword names."""

    args: tuple[str, ...]
    keywords: frozenset[str]
    open_keywords: bool  # a `**` splat: any keyword may be passed
    int_names: frozenset[str]  # the caller's names known to hold an int (parameters with an int default)
    named: tuple[tuple[str, str], ...] = ()  # keyword arguments' texts, by name
    defaults: tuple[tuple[str, str], ...] = ()  # the caller's parameters with a default: its text
    caller: ParsedFile | None = None  # the caller's file (its imports qualify the argument texts)
    caller_path: str = ""
    # The string a module-level name holds, as named in a file (`NORM_BATCH`, defined there or imported):
    # a name assigned once to a string literal (`StringConstant`); None where there is no such reader.
    constant: StringConstant | None = None
    # the caller's own names (parameters, locals): an argument naming one is not a module-level name
    local_names: frozenset[str] = frozenset()


# (qualified name, file it is named in) -> (parsed file, node) of its definition, or None
Lookup = Callable[[str, str], tuple[ParsedFile, ast.FunctionDef | ast.ClassDef, str] | None]
TorchLayer = Callable[[str], str | None]


def _open_paths(fn: ast.FunctionDef, call: Call, lookup: Lookup, path: str = "", chosen: set[str] | None = None,
                norm_act: set[str] | None = None) -> tuple[_Values, list[ast.expr], frozenset[str]] | None:
    """What `fn` called as `call` can return: the call's values, the returned expressions of its open paths
    (None when there are none or more than MAX_RETURNS) and the `**kwargs` keys it pops."""
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    kwargs_name = fn.args.kwarg.arg if fn.args.kwarg is not None else None
    values = _Values(params, kwargs_name, call, frozenset(_stored(fn.body)))
    values.strings = _strings(fn, call, values, path)
    if chosen is not None:
        values.chosen = chosen
    if norm_act is not None:
        values.norm_act = norm_act
    values.lambdas = {p: body for p, text in values.args.items()
                      if (body := _lambda_of(text, call, lookup)) is not None}
    returns = list(_returns(fn.body, values, {}))
    if not returns or len(returns) > MAX_RETURNS:
        return None
    return values, returns, frozenset(_popped(fn, kwargs_name))


def built_layer(fn: ast.FunctionDef, parsed: ParsedFile, path: str, call: Call, lookup: Lookup,
                torch_layer: TorchLayer, depth: int = 0, chosen: set[str] | None = None,
                norm_act: set[str] | None = None) -> str | None:
    """The torch layer (`torch.nn.Conv2d`) every open path of `fn` called as `call` returns, else None.
    `chosen` collects the parameters whose string decided a test on the way (`if norm == "bn":`): the call's
    arguments then select the layer rather than being its arguments. `norm_act` collects the classes built
    on the way that are a BatchNorm whose forward activates after the norm (`norm_act.norm_then_act`: timm's
    `BatchNormAct2d`): the layer is then that BatchNorm, with no automatic fix."""
    if depth > MAX_DEPTH:
        return None
    paths = _open_paths(fn, call, lookup, path, chosen, norm_act)
    if paths is None:
        return None
    values, returns, popped = paths
    found: set[str] = set()
    for value in returns:
        layer = _layer_of(value, parsed, path, values, popped, lookup, torch_layer, depth)
        if layer is None:
            return None
        found.add(layer)
    layer = found.pop() if len(found) == 1 else None
    return None if layer in _CONTAINERS else layer  # a container's items are read by `returned_sequential`


_CONTAINERS = frozenset({"torch.nn.Sequential", "torch.nn.ModuleList", "torch.nn.ModuleDict"})


def possible_layer(fn: ast.FunctionDef, parsed: ParsedFile, path: str, call: Call, lookup: Lookup,
                   torch_layer: TorchLayer, norm_act: set[str] | None = None) -> str | None:
    """The torch layer some open paths of `fn` build for `call`, when every other open path builds a class
    that is no torch layer (`MixedConv2d` for a list of kernel sizes, `CondConv2d` with experts): which one
    runs depends on a value the call leaves open (the caller's own parameter, a `**kwargs` it passes on),
    as with a conditional binding `self.conv = Mixed(...) if c else nn.Conv2d(...)` written in the file.
    None when a path builds something unknown or another torch layer, or when no path builds one; the
    paths are those `built_layer` reads (the tests the call decides are decided)."""
    paths = _open_paths(fn, call, lookup, path, norm_act=norm_act)
    if paths is None:
        return None
    values, returns, popped = paths
    layers: set[str] = set()
    classes = 0
    for value in returns:
        layer = _layer_of(value, parsed, path, values, popped, lookup, torch_layer, 0)
        if layer is not None and layer not in _CONTAINERS:
            layers.add(layer)
        elif _builds_class(value, parsed, path, lookup):  # a container subclass (`MixedConv2d(nn.ModuleDict)`) too
            classes += 1
        else:
            return None
    return layers.pop() if len(layers) == 1 and classes else None


def _builds_class(value: ast.expr, parsed: ParsedFile, path: str, lookup: Lookup) -> bool:
    """`value` constructs a class the lookup finds (defined in the builder's package, not torch's)."""
    dotted = dotted_name(value.func) if isinstance(value, ast.Call) else None
    found = lookup(qualify(dotted, parsed.imports), path) if dotted is not None else None
    return found is not None and isinstance(found[1], ast.ClassDef) and not any(
        isinstance(s, ast.FunctionDef) and s.name == "__new__" for s in found[1].body)


class _Values:
    """Three-valued tests the call decides (True / False / None: not decided)."""

    def __init__(self, params: list[str], kwargs_name: str | None, call: Call, rebound: frozenset[str]) -> None:
        self.kwargs_name = kwargs_name
        self.call = call
        self.rebound = rebound
        # a parameter the builder rebinds (`kernel_size = [kernel_size]`) is not the call's value in its tests
        self.args = {p: call.args[i] for i, p in enumerate(params) if i < len(call.args) and p not in rebound}
        self.args.update((k, text) for k, text in call.named if k in params and k not in rebound)
        # parameters the call gives a lambda that builds a layer: the lambda's body, in its own file
        self.lambdas: dict[str, tuple[ast.expr, ParsedFile, str]] = {}
        # parameters whose string the call leaves evident (`_strings`), and the builder file's string names
        self.strings: dict[str, str] = {}
        self.named_string: Callable[[str], str | None] = lambda name: None
        self.chosen: set[str] = set()  # the parameters whose string decided a test
        self.norm_act: set[str] = set()  # the BatchNorm-then-activation classes built (`built_layer`)
        self.local_names: frozenset[str] = frozenset()  # the builder's parameters and locals

    def test(self, node: ast.expr) -> bool | None:
        if (tested := is_function_test(node)) is not None:
            return True if tested in self.lambdas else None
        if isinstance(node, ast.BoolOp):
            parts = [self.test(v) for v in node.values]
            if isinstance(node.op, ast.And):
                return False if False in parts else (True if all(p is True for p in parts) else None)
            return True if True in parts else (False if all(p is False for p in parts) else None)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = self.test(node.operand)
            return None if inner is None else not inner
        if (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.In | ast.NotIn)
                and isinstance(node.left, ast.Constant) and isinstance(node.left.value, str)
                and isinstance(node.comparators[0], ast.Name) and node.comparators[0].id == self.kwargs_name):
            if self.call.open_keywords and node.left.value not in self.call.keywords:
                return None
            passed = node.left.value in self.call.keywords
            return passed if isinstance(node.ops[0], ast.In) else not passed
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            decided = self._compare_strings(node)
            return decided if decided is not None else self._compare(node)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance"
                and len(node.args) == 2 and isinstance(node.args[0], ast.Name) and _sequence_types(node.args[1])):
            text = self.args.get(node.args[0].id)
            if text is not None and (isinstance(literal(text), int) or text in self.call.int_names):
                return False
            display = _display(text) if text is not None else None
            if display is not None:  # `[3, 5]` or `(3, 3)` written in the call: its type is evident
                names = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
                return any(isinstance(n, ast.Name) and n.id == display for n in names)
        return None


    def _compare_strings(self, node: ast.Compare) -> bool | None:
        """`norm == "bn"`, `kind == NORM_BATCH`, `act.lower() in ("gelu", "gelu_new")`, `"bn" != norm`: decided
        when one side is a parameter whose string the call leaves evident and the other a string literal, a
        module-level name bound to one, or a tuple, list or set of those."""
        op = node.ops[0]
        if not isinstance(op, ast.Eq | ast.NotEq | ast.In | ast.NotIn):
            return None
        left, right = node.left, node.comparators[0]
        value = self._argument_string(left)
        if value is None and isinstance(op, ast.Eq | ast.NotEq):
            left, right = right, left
            value = self._argument_string(left)
        if value is None:
            return None
        if isinstance(op, ast.In | ast.NotIn):
            if not isinstance(right, ast.Tuple | ast.List | ast.Set):
                return None
            options = [self._fixed_string(e) for e in right.elts]
        else:
            options = [self._fixed_string(right)]
        if any(o is None for o in options):
            return None
        found = value in options
        self.chosen.add(ast.unparse(left))
        return found if isinstance(op, ast.Eq | ast.In) else not found

    def _argument_string(self, node: ast.expr) -> str | None:
        """The string a parameter holds for the call (`norm`, or `norm.lower()` / `.upper()` of it)."""
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.args
                and not node.keywords and node.func.attr in ("lower", "upper", "casefold")):
            inner = self._argument_string(node.func.value)
            return None if inner is None else inner.upper() if node.func.attr == "upper" else inner.lower()
        return self.strings.get(node.id) if isinstance(node, ast.Name) else None

    def _fixed_string(self, node: ast.expr) -> str | None:
        """A string literal, or a module-level name of the builder's file bound to one."""
        if isinstance(node, ast.Constant):
            return node.value if isinstance(node.value, str) else None
        return self.named_string(node.id) if isinstance(node, ast.Name) and node.id not in self.local_names else None

    def _compare(self, node: ast.Compare) -> bool | None:
        """`kwargs['num_experts'] > 0` with the keyword passed as a literal number: decided."""
        left, right, op = node.left, node.comparators[0], node.ops[0]
        if not (isinstance(left, ast.Subscript) and isinstance(left.value, ast.Name) and left.value.id == self.kwargs_name
                and isinstance(left.slice, ast.Constant) and isinstance(right, ast.Constant)):
            return None
        text = dict(self.call.named).get(str(left.slice.value))
        value, bound = literal(text) if text is not None else UNKNOWN, right.value
        if not isinstance(value, int | float) or not isinstance(bound, int | float):
            return None
        compare = {ast.Gt: value > bound, ast.GtE: value >= bound, ast.Lt: value < bound, ast.LtE: value <= bound,
                   ast.Eq: value == bound, ast.NotEq: value != bound}
        return compare.get(type(op))


def _strings(fn: ast.FunctionDef, call: Call, values: _Values, path: str) -> dict[str, str]:
    """The builder's parameters whose string the call leaves evident: a string literal passed, a parameter of
    the caller whose literal default is one (the caller's defaults, as elsewhere), a module-level name bound
    to one (`NORM_BATCH`); for a parameter the call does not pass (and no `**` splat may pass it), the
    builder's own string default. A parameter the builder rebinds is not the call's value: left out."""
    defaults = dict(call.defaults)
    values.local_names = bound_names(fn)
    out: dict[str, str] = {}
    for param, text in values.args.items():
        value = literal(text)
        local = text in call.local_names  # a name of the caller's own scope, not of its module
        if value is UNKNOWN and text in defaults:  # the caller's parameter: its default (`norm=NORM_BATCH` too),
            text, local = defaults[text] or "", False  # evaluated in the caller's module
            value = literal(text)
        if value is UNKNOWN and not local and text.isidentifier() and call.constant is not None and call.caller_path:
            value = call.constant(text, call.caller_path)
        if isinstance(value, str):
            out[param] = value
    if call.constant is not None and path:
        constant, where = call.constant, path
        values.named_string = lambda name: constant(name, where)
    if call.open_keywords:
        return out
    rebound = values.rebound
    positional = fn.args.posonlyargs + fn.args.args
    passed = len(call.args)
    pairs = list(zip(positional[len(positional) - len(fn.args.defaults):], fn.args.defaults))
    pairs += [(a, d) for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults) if d is not None]
    for a, default in pairs:
        index = positional.index(a) if a in positional else len(positional)
        if (a.arg in rebound or a.arg in values.args or index < passed or a.arg in call.keywords
                or not isinstance(default, ast.Constant) or not isinstance(default.value, str)):
            continue
        out[a.arg] = default.value
    return out


def _display(text: str) -> str | None:
    """"list" or "tuple" when `text` is a list or tuple display, else None."""
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return None
    return "list" if isinstance(node, ast.List) else "tuple" if isinstance(node, ast.Tuple) else None


def _sequence_types(node: ast.expr) -> bool:
    names = node.elts if isinstance(node, ast.Tuple) else [node]
    return bool(names) and all(isinstance(n, ast.Name) and n.id in ("list", "tuple") for n in names)


def _returns(stmts: list[ast.stmt], values: _Values, env: dict[str, list[ast.expr]]) -> Iterator[ast.expr]:
    """The expressions the open paths of `stmts` return (a returned local: what it was last assigned on
    each path). `env` maps locals to the values they may hold here."""
    for stmt in stmts:
        if isinstance(stmt, ast.Return):
            if stmt.value is None:
                yield ast.Constant(None)
            elif isinstance(stmt.value, ast.Name) and stmt.value.id in env:
                yield from env[stmt.value.id]
            else:
                yield stmt.value
            return
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            env[stmt.targets[0].id] = [stmt.value]
        elif isinstance(stmt, ast.If):
            decided = values.test(stmt.test)
            branches = [stmt.body] if decided is True else [stmt.orelse] if decided is False else [stmt.body, stmt.orelse]
            merged: dict[str, list[ast.expr]] = {}
            falling: list[dict[str, list[ast.expr]]] = []  # the locals of each branch that falls through
            for branch in branches:
                local = {k: list(v) for k, v in env.items()}
                yield from _returns(branch, values, local)
                if not _ends(branch):
                    falling.append(local)
                    for k, v in local.items():
                        merged.setdefault(k, []).extend(x for x in v if x not in merged.get(k, []))
            if not falling:
                return
            env.clear()  # a local some path leaves unset here is not evident
            env.update({k: v for k, v in merged.items() if all(k in local for local in falling)})
        elif isinstance(stmt, ast.For | ast.While | ast.With | ast.Try | ast.FunctionDef | ast.ClassDef):
            if any(isinstance(n, ast.Return) for n in ast.walk(stmt)):
                yield ast.Constant(None)  # a return this does not follow: the result is not evident
                return
            for name in _stored([stmt]):  # a local set in a loop or block: what it holds is not evident
                env.pop(name, None)
        else:
            for name in _stored([stmt]):  # `a, m = ...`, `m += ...`: no longer the value read before
                env.pop(name, None)


def _stored(stmts: list[ast.stmt]) -> set[str]:
    """The names the statements assign (at any depth)."""
    return {n.id for s in stmts for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _ends(stmts: list[ast.stmt]) -> bool:
    return bool(stmts) and isinstance(stmts[-1], ast.Return | ast.Raise)


def _popped(fn: ast.FunctionDef, kwargs_name: str | None) -> Iterator[str]:
    """The keywords `fn` removes from its `**` parameter (`kwargs.pop('padding', '')`)."""
    for n in ast.walk(fn):
        if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "pop"
                and isinstance(n.func.value, ast.Name) and n.func.value.id == kwargs_name and n.args
                and isinstance(n.args[0], ast.Constant) and isinstance(n.args[0].value, str)):
            yield n.args[0].value


def _lambda_of(text: str, call: Call, lookup: Lookup) -> tuple[ast.expr, ParsedFile, str] | None:
    """The body of the lambda an argument's value is (a call of the package's `lambda_batchnorm2d()`, or a
    caller's parameter with that default), with the file it is written in; None for anything else."""
    if call.caller is None:
        return None
    text = dict(call.defaults).get(text, text)
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return None
    dotted = dotted_name(node.func) if isinstance(node, ast.Call) else None
    found = lookup(qualify(dotted, call.caller.imports), call.caller_path) if dotted is not None else None
    if found is None or not isinstance(found[1], ast.FunctionDef):
        return None
    body = returned_lambda(found[1])
    return (body, found[0], found[2]) if body is not None else None


def _layer_of(value: ast.expr, parsed: ParsedFile, path: str, values: _Values, popped: frozenset[str],
              lookup: Lookup, torch_layer: TorchLayer, depth: int) -> str | None:
    if not isinstance(value, ast.Call):
        return None
    if isinstance(value.func, ast.Name) and value.func.id in values.lambdas:  # `normalization(**kwargs)`
        body, where, where_path = values.lambdas[value.func.id]
        no_call = Call((), frozenset(), True, frozenset())
        inner_values = _Values([], None, no_call, frozenset())
        inner_values.norm_act = values.norm_act
        return _layer_of(body, where, where_path, inner_values, frozenset(), lookup, torch_layer, depth + 1)
    dotted = dotted_name(value.func)
    if dotted is None:
        return None
    qualified = qualify(dotted, parsed.imports)
    layer = torch_layer(qualified)
    if layer is not None:
        return layer
    found = lookup(qualified, path)
    if found is None:
        return None
    inner_parsed, node, inner_path = found
    if isinstance(node, ast.ClassDef):
        if any(isinstance(s, ast.FunctionDef) and s.name == "__new__" for s in node.body):
            return None
        for base in node.bases:  # a subclass of the torch layer (`class Conv2dSame(nn.Conv2d)`)
            base_name = dotted_name(base)
            if base_name is not None and (base_layer := torch_layer(qualify(base_name, inner_parsed.imports))):
                if norm_then_act(node, base_layer, lambda n: qualify(n, inner_parsed.imports)):
                    values.norm_act.add(qualified)  # `BatchNormAct2d`: that BatchNorm, whose fold never folds
                return base_layer
        return None
    if any(isinstance(a, ast.Starred) for a in value.args):
        return None
    call, kwargs_name = values.call, values.kwargs_name
    passes = _passes(value, kwargs_name)
    # a name of this builder holding an int for the call: a parameter the call gives an int
    ints = frozenset(p for p, text in values.args.items()
                     if isinstance(literal(text), int) or text in call.int_names)
    def passed(node: ast.expr) -> str:  # a parameter whose string the call left evident: that string
        known = values.strings.get(node.id) if isinstance(node, ast.Name) else None
        return repr(known) if known is not None else _text(node)

    inner = Call(tuple(passed(a) for a in value.args),
                 frozenset(k.arg for k in value.keywords if k.arg is not None)
                 | (call.keywords - popped if passes else frozenset()),
                 any(k.arg is None and not (isinstance(k.value, ast.Name) and k.value.id == kwargs_name)
                     for k in value.keywords) or (call.open_keywords and passes),
                 ints, tuple((k.arg, passed(k.value)) for k in value.keywords if k.arg is not None),
                 constant=call.constant, caller_path=path, local_names=values.local_names)
    return built_layer(node, inner_parsed, inner_path, inner, lookup, torch_layer, depth + 1, values.chosen,
                       values.norm_act) if isinstance(node, ast.FunctionDef) else None


def _passes(call: ast.Call, kwargs_name: str | None) -> bool:
    """`f(..., **kwargs)` passes on the builder's own keywords."""
    return kwargs_name is not None and any(
        k.arg is None and isinstance(k.value, ast.Name) and k.value.id == kwargs_name for k in call.keywords)


def _text(node: ast.expr) -> str:
    value = literal(ast.unparse(node))
    return ast.unparse(node) if value is UNKNOWN or not isinstance(value, int) else str(value)


# -- Sequential subclasses ---------------------------------------------------------------------------

# A parameter's value for one construction: the expression and the file whose imports qualify it.
Bound = tuple[ast.expr, ParsedFile]
# A value the construction passes that is not known here (a parameter of the caller with no default).
UNKNOWN_VALUE: ast.expr = ast.Name(id="?")


Passed = tuple[list[Bound], dict[str, Bound]]  # a construction's positional and keyword values


def sequential_items(cls: ast.ClassDef, parsed: ParsedFile, path: str, call: Passed,
                     lookup: Lookup, torch_layer: TorchLayer, depth: int = 0) -> tuple[str, ...] | None:
    """The torch layers a subclass of `nn.Sequential` holds when built with the parameters `bound`
    `call` passes, from what its `__init__` hands to `super().__init__`:
    `super().__init__(conv, bn, act)`, or `super().__init__(*layers)` of a list built by
    `layers = [...]`, `layers.append(...)` and `layers.extend([...])`, under tests of a parameter
    against None (`if norm_layer is not None:`) that the construction decides. A subclass whose
    `__init__` only hands its parameters on (torchvision's `Conv2dNormActivation`) is read through its
    base. None when an item is not evident (a parameter with no value, a layer that is not torch's, a
    loop or an undecided test that touches the list, a `forward` of its own)."""
    if depth > MAX_DEPTH:
        return None
    methods = {f.name: f for f in cls.body if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)}
    base_name = _sequential_base(cls)
    if base_name is None:
        return None
    base = qualify(base_name, parsed.imports)
    init = methods.get("__init__")
    env: dict[str, Bound] | None = None
    if isinstance(init, ast.FunctionDef):
        bound = call_bound(init, call)
        env = _bind_params(init, parsed, bound) if bound is not None else None
        if env is None:
            return None
    if torch_layer(base) == "torch.nn.Sequential":
        return _own_items(init, parsed, env, lookup, torch_layer) \
            if isinstance(init, ast.FunctionDef) and env is not None else None
    found = lookup(base, path)
    if found is None or not isinstance(found[1], ast.ClassDef):
        return None
    base_parsed, base_cls, base_path = found[0], found[1], found[2]
    if isinstance(init, ast.FunctionDef) and env is not None:  # an `__init__` that only hands its parameters on
        handed = _handed_on(init, parsed, env)
        if handed is None:
            return None
        call = handed
    return sequential_items(base_cls, base_parsed, base_path, call, lookup, torch_layer, depth + 1)


def may_hold_sequential(node: ast.FunctionDef | ast.ClassDef, parsed: ParsedFile, torch_layer: TorchLayer) -> bool:
    """Whether `sequential_items` (a class) or `returned_sequential` (a function) can find the items of `node`
    for some call, judged from `node` alone: both return None whatever a call passes otherwise, so a caller
    need not read the call's values (its file, parsed whole) first."""
    if isinstance(node, ast.FunctionDef):
        return _returned_sequential(node, parsed, torch_layer) is not None
    return _sequential_base(node) is not None


def _sequential_base(cls: ast.ClassDef) -> str | None:
    """The dotted name of the one base of class `cls` when it defines no `forward` nor `__call__`, else None."""
    if len(cls.bases) != 1 or any(isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
                                  and f.name in ("forward", "__call__") for f in cls.body):
        return None
    return dotted_name(cls.bases[0])


def _bind_params(init: ast.FunctionDef, parsed: ParsedFile, bound: dict[str, Bound]) -> dict[str, Bound] | None:
    """Each parameter of `init` (not `self`) with its value: what the construction passes, else its default."""
    args = init.args.posonlyargs + init.args.args
    params = [a.arg for a in args][1:]
    defaults = dict(zip([a.arg for a in args][len(args) - len(init.args.defaults):], init.args.defaults))
    defaults.update({a.arg: d for a, d in zip(init.args.kwonlyargs, init.args.kw_defaults) if d is not None})
    env: dict[str, Bound] = {}
    for name in params + [a.arg for a in init.args.kwonlyargs]:
        if name in bound:
            env[name] = bound[name]
        elif name in defaults:
            env[name] = (defaults[name], parsed)
    if set(bound) - set(env):
        return None  # a keyword this `__init__` does not name (or a `**kwargs` it takes)
    return env


def call_bound(init: ast.FunctionDef, call: Passed) -> dict[str, Bound] | None:
    """`call`'s positional and keyword values named by the parameters of `init` (an `__init__`)."""
    names = [a.arg for a in init.args.posonlyargs + init.args.args][1:]
    positional, keywords = call
    if len(positional) > len(names):
        return None
    out = dict(zip(names, positional))
    out.update(keywords)
    return out


def _handed_on(init: ast.FunctionDef, parsed: ParsedFile, env: dict[str, Bound],
               ) -> Passed | None:
    """The values an `__init__` whose one statement (a docstring aside) is `super().__init__(...)` passes."""
    body = [s for s in init.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if not body or not isinstance(body[0], ast.Expr) or not _super_init(body[0].value):
        return None
    if not all(_leaves_children(s) for s in body[1:]):
        return None
    call = body[0].value
    assert isinstance(call, ast.Call)
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    params = {a.arg for a in init.args.posonlyargs + init.args.args + init.args.kwonlyargs}
    values = [_value(a, env, params, parsed) for a in call.args]
    keywords = {k.arg: _value(k.value, env, params, parsed) for k in call.keywords if k.arg is not None}
    if any(v is None for v in values) or any(v is None for v in keywords.values()):
        return None
    return [v for v in values if v is not None], {k: v for k, v in keywords.items() if v is not None}


_CHILD_METHODS = frozenset({"add_module", "register_module", "append", "extend", "insert", "__setitem__",
                            "__delitem__", "pop"})


def _leaves_children(stmt: ast.stmt) -> bool:
    """A statement after `super().__init__(...)` that does not change the children: it assigns nothing on
    `self`, deletes nothing and calls no container method of `self` (torchvision's `MLPBlock` initialises
    the weights of `self.modules()`)."""
    for n in ast.walk(stmt):
        if isinstance(n, ast.Delete):
            return False
        targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(
            n, ast.AugAssign | ast.AnnAssign) else []
        if any(isinstance(m, ast.Name) and m.id == "self" for t in targets for m in ast.walk(t)):
            return False
        if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _CHILD_METHODS
                and isinstance(n.func.value, ast.Name) and n.func.value.id == "self"):
            return False
    return True


def _value(node: ast.expr, env: dict[str, Bound], params: set[str], parsed: ParsedFile) -> Bound | None:
    """A parameter's value where `node` names one (None when it has none); anything else as written, read
    with this file's imports (`torch.nn.Conv2d`)."""
    if isinstance(node, ast.Name) and node.id in params:
        return env.get(node.id)
    return node, parsed


def _super_init(node: ast.expr) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__init__"
            and isinstance(node.func.value, ast.Call) and isinstance(node.func.value.func, ast.Name)
            and node.func.value.func.id == "super")


def _own_items(init: ast.FunctionDef, parsed: ParsedFile, env: dict[str, Bound], lookup: Lookup,
               torch_layer: TorchLayer) -> tuple[str, ...] | None:
    try:
        items = _walk_items(init.body, dict(env), {})
    except _NotEvident:
        return None
    if not items:
        return None
    out: list[str] = []
    for item in items:
        layer = _item_layer(item, parsed, env, lookup, torch_layer)
        if layer is None:
            return None
        out.append(layer)
    return tuple(out)


class _NotEvident(Exception):
    """The items are not evident (raised out of `_walk_items`)."""


def _walk_items(stmts: list[ast.stmt], env: dict[str, Bound], lists: dict[str, list[ast.expr]],
                ) -> list[ast.expr] | None:
    """The item expressions `super().__init__` receives on the path the construction takes (None: these
    statements do not call it); raises `_NotEvident`."""
    for stmt in stmts:
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if isinstance(call, ast.Call) and _super_init(call):
            if call.keywords:
                raise _NotEvident
            if len(call.args) == 1 and isinstance(call.args[0], ast.Starred):
                star = call.args[0].value
                if isinstance(star, ast.Name) and star.id in lists:
                    return list(lists[star.id])
                raise _NotEvident
            if any(isinstance(a, ast.Starred) for a in call.args):
                raise _NotEvident
            return list(call.args)
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and isinstance(stmt.value, ast.List):
            if any(isinstance(e, ast.Starred) for e in stmt.value.elts):
                raise _NotEvident
            lists[stmt.targets[0].id] = list(stmt.value.elts)
            continue
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) \
                and isinstance(call.func.value, ast.Name) and call.func.value.id in lists:
            target = lists[call.func.value.id]
            if call.func.attr == "append" and len(call.args) == 1:
                target.append(call.args[0])
            elif call.func.attr == "extend" and len(call.args) == 1 and isinstance(call.args[0], ast.List):
                target.extend(call.args[0].elts)
            else:
                raise _NotEvident
            continue
        touches = any(isinstance(n, ast.Name) and n.id in lists for n in ast.walk(stmt)) or any(
            isinstance(n, ast.Call) and _super_init(n) for n in ast.walk(stmt))
        if isinstance(stmt, ast.For) and touches:
            for _ in range(_trips(stmt, env)):  # the loop unrolled: its count is evident from the call
                if _walk_items(stmt.body, env, lists) is not None:
                    raise _NotEvident
            continue
        if isinstance(stmt, ast.If):
            decided = _none_test(stmt.test, env)
            if decided is None:
                if touches:
                    raise _NotEvident
                continue
            found = _walk_items(stmt.body if decided else stmt.orelse, env, lists)
            if found is not None:
                return found
            continue
        if touches:
            raise _NotEvident  # a loop, an augmented assignment, a rebinding of the list: not followed
        if isinstance(stmt, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets: list[ast.expr] = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for bound_to in targets:  # a parameter rebound here (`padding = ...`): its value is not known
                for n in ast.walk(bound_to):
                    if isinstance(n, ast.Name):
                        env.pop(n.id, None)
    return None


MAX_TRIPS = 8


def _trips(loop: ast.For, env: dict[str, Bound]) -> int:
    """How many times `for v in seq` runs when `seq` is a parameter given a list or tuple display, or a
    constant slice of one (`hidden_channels[:-1]`: torchvision's `MLP`), or `range(<int>)`; the body must
    be plain (no `break`, `continue`, `return`, `else`, and the loop variable a name); raises `_NotEvident`."""
    if loop.orelse or not isinstance(loop.target, ast.Name) or any(
            isinstance(n, ast.Break | ast.Continue | ast.Return) for n in ast.walk(loop)):
        raise _NotEvident
    env.pop(loop.target.id, None)
    count = _length(loop.iter, env)
    if count is None or count > MAX_TRIPS:
        raise _NotEvident
    return count


def _length(node: ast.expr, env: dict[str, Bound]) -> int | None:
    if isinstance(node, ast.Name) and node.id in env:
        value = env[node.id][0]
        return len(value.elts) if isinstance(value, ast.List | ast.Tuple) and not any(
            isinstance(e, ast.Starred) for e in value.elts) else None
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice) and node.slice.step is None:
        whole = _length(node.value, env)
        bounds = [_int(b) if b is not None else None for b in (node.slice.lower, node.slice.upper)]
        if whole is None or any(b is False for b in bounds):
            return None
        return len(range(whole)[slice(*bounds)])
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range"
            and len(node.args) == 1 and not node.keywords):
        n = _int(node.args[0])
        return n if isinstance(n, int) and not isinstance(n, bool) and n >= 0 else None
    return None


def _int(node: ast.expr) -> int | bool:
    """An integer literal (`-1` included), else False."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return value if isinstance(value, int) and not isinstance(value, bool) else False


def _none_test(test: ast.expr, env: dict[str, Bound]) -> bool | None:
    """`p is None` / `p is not None` for a parameter whose value is known."""
    if (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is | ast.IsNot)
            and isinstance(test.left, ast.Name) and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value is None and test.left.id in env):
        value = env[test.left.id][0]
        if value is UNKNOWN_VALUE:
            return None
        is_none = isinstance(value, ast.Constant) and value.value is None
        if not is_none and not isinstance(value, ast.Name | ast.Attribute):
            return None
        return is_none if isinstance(test.ops[0], ast.Is) else not is_none
    return None


def _item_layer(item: ast.expr, parsed: ParsedFile, env: dict[str, Bound], lookup: Lookup,
                torch_layer: TorchLayer) -> str | None:
    """The torch layer an item constructs: `nn.Conv2d(...)`, `norm_layer(out_channels)` of a parameter
    naming a torch layer class, or a class subclassing one."""
    if not isinstance(item, ast.Call):
        return None
    func: ast.expr = item.func
    where = parsed
    if isinstance(func, ast.Name) and func.id in env:
        func, where = env[func.id]
    dotted = dotted_name(func)
    if dotted is None:
        return None
    qualified = qualify(dotted, where.imports)
    return torch_layer(qualified)


def returned_sequential(fn: ast.FunctionDef, parsed: ParsedFile, call: Passed, lookup: Lookup,
                        torch_layer: TorchLayer) -> tuple[str, ...] | None:
    """The torch layers of the `nn.Sequential` a builder function returns
    (`def conv_bn(inp, oup, stride): return nn.Sequential(nn.Conv2d(...), nn.BatchNorm2d(oup), nn.ReLU())`,
    imported from a sibling module), with its parameters bound as `call` passes them.

    The return may follow locals each assigned once (`bn = nn.BatchNorm2d(c)`, `act = make_act(name)`)
    and list its items in an `OrderedDict` of `(name, layer)` pairs (`nn.Sequential(OrderedDict([("bn", bn),
    (activation, act)]))`, pytorch-toolbelt's `ABN`). An item that is no torch layer is read as an opaque
    module (its builder's name) only after a BatchNorm: the norm-then-activation of `ABN`, whose activation
    comes from a registry; anywhere else it leaves the Sequential unread (None)."""
    args = _returned_sequential(fn, parsed, torch_layer)
    if args is None:
        return None
    names = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    positional, keywords = call
    if len(positional) > len(names):
        return None
    bound = dict(zip(names, positional))
    bound.update(keywords)
    defaults = dict(zip(names[len(names) - len(fn.args.defaults):], fn.args.defaults))
    env = {n: bound[n] if n in bound else (defaults[n], parsed) for n in names if n in bound or n in defaults}
    if set(bound) - set(names):
        return None
    out: list[str] = []
    for item in args:
        layer = _item_layer(item, parsed, env, lookup, torch_layer)
        if layer is None:
            opaque = dotted_name(item.func) if isinstance(item, ast.Call) else None
            if opaque is None or opaque in env or not any(o in BATCH_NORMS for o in out):
                return None
            layer = opaque if "." in opaque else f"{fn.name}.{opaque}"  # never a name of the caller's file
        out.append(layer)
    return tuple(out)


def _returned_sequential(fn: ast.FunctionDef, parsed: ParsedFile, torch_layer: TorchLayer) -> list[ast.expr] | None:
    """The items of the `nn.Sequential(...)` call (no keywords) function `fn` returns as its last statement,
    after locals each assigned once (a docstring aside): positional, or the values of an `OrderedDict` of
    `(name, layer)` pairs, a local's name replaced by its value; None when there is none or one is starred.
    Judged from `fn` alone: what `returned_sequential` needs of `fn` before any call's values are read."""
    body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if not body or not isinstance(body[-1], ast.Return) or not isinstance(body[-1].value, ast.Call):
        return None
    value = body[-1].value
    dotted = dotted_name(value.func)
    if dotted is None or torch_layer(qualify(dotted, parsed.imports)) != "torch.nn.Sequential" or value.keywords:
        return None
    locals_ = _once_assigned(body[:-1], {a.arg for a in fn.args.posonlyargs + fn.args.args})
    if locals_ is None:
        return None
    args: list[ast.expr] = list(value.args)
    if len(args) == 1 and isinstance(args[0], ast.Call) and not args[0].keywords and len(args[0].args) == 1 and (
            (dotted_name(args[0].func) or "").rsplit(".", 1)[-1] == "OrderedDict"):
        pairs = args[0].args[0]
        if not isinstance(pairs, ast.List | ast.Tuple) or not all(
                isinstance(p, ast.Tuple) and len(p.elts) == 2 for p in pairs.elts):
            return None
        args = [p.elts[1] for p in pairs.elts if isinstance(p, ast.Tuple)]
    args = [locals_.get(a.id, a) if isinstance(a, ast.Name) else a for a in args]
    if not args or any(isinstance(a, ast.Starred) for a in args):
        return None
    return args


def _once_assigned(stmts: list[ast.stmt], params: set[str]) -> dict[str, ast.expr] | None:
    """The locals of straight-line statements before a `return`, each a name assigned a call once (not a
    parameter), else None (any other statement: a branch, a loop, an item added to a container)."""
    out: dict[str, ast.expr] = {}
    for stmt in stmts:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                and isinstance(stmt.value, ast.Call)):
            return None
        name = stmt.targets[0].id
        if name in out or name in params:
            return None
        out[name] = stmt.value
    return out
