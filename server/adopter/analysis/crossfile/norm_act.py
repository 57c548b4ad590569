"""BatchNorm subclasses whose `forward` normalises its input, then activates: a BatchNorm for family 7.

Libraries fuse the activation into the norm's module (timm's `BatchNormAct2d` / `SyncBatchNormAct`, the
`ABN` of in-place-ABN and its copies), so a convolution followed by one is a convolution followed by a
BatchNorm:

    class ABN(nn.BatchNorm2d):
        def forward(self, x):
            y = F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                             self.training, self.momentum, self.eps)
            return F.leaky_relu_(y, self.slope)

`norm_then_act` reads such a `forward` (Python's `ast`, for this file's classes and other files' alike):
the norm of the input as it came in (`F.batch_norm(x, self.running_mean, self.running_var, self.weight,
self.bias, ...)`, `super().forward(x)`, `nn.BatchNorm2d.forward(self, x)`), after statements that only
keep BatchNorm's own bookkeeping (locals, `self.num_batches_tracked.add_(1)`, asserts), then a chain of
steps each of which takes the running value alone: an activation function (`F.relu`, `F.leaky_relu_`,
...) or a child module of the class (`self.drop(x)`, `self.act(x)`). Anything else is refused: a step
before the norm (a dropout, a residual, a transpose: the norm over another axis), a second tensor read
after it (a residual), a method of the value (`y.transpose(1, 2)`), two norms, an early return.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from adopter.analysis.canonical.spellings import FUNCTION_VALUES
from adopter.analysis.names.ast_dotted import dotted_name

BATCH_NORMS = frozenset({"torch.nn.BatchNorm1d", "torch.nn.BatchNorm2d", "torch.nn.BatchNorm3d",
                         "torch.nn.SyncBatchNorm"})
NORM_ACT = "; its forward activates after the norm"  # suffix of `Ctor.origin`: the site has no automatic fix
_NORM_FUNCTIONS = frozenset({"torch.nn.functional.batch_norm", "torch.batch_norm"})
_BUFFERS = ("running_mean", "running_var", "weight", "bias")


def norm_then_act(cls: ast.ClassDef, layer: str, qualify: Callable[[str], str]) -> bool:
    """Whether the `forward` of `cls`, a subclass of the BatchNorm `layer`, is that norm of its input then
    activations (see the module's doc).

    `qualify` turns a dotted name of the class's file into its qualified name (imports followed)."""
    if layer not in BATCH_NORMS:
        return False
    methods = {f.name: f for f in cls.body if isinstance(f, ast.FunctionDef)}
    forward = methods.get("forward")
    if forward is None or not _children_apply_pointwise(forward, methods.get("__init__"), qualify):
        return False
    params = [a.arg for a in forward.args.posonlyargs + forward.args.args]
    if len(params) != 2 or forward.args.vararg or forward.args.kwonlyargs or forward.args.kwarg:
        return False
    self_name, x = params
    body = [s for s in forward.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    at = next((i for i, s in enumerate(body) if _norm_of(s, x, self_name, layer, qualify) is not None), None)
    if at is None or not all(_bookkeeping(s, x) for s in body[:at]):
        return False
    value = _norm_of(body[at], x, self_name, layer, qualify)
    if value is None:
        return False
    steps = 0
    for stmt in body[at + 1:]:
        if isinstance(stmt, ast.Return):
            if stmt is not body[-1] or stmt.value is None:
                return False
            count = _steps_over(stmt.value, value, self_name, qualify)
            return count is not None and steps + count > 0
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
            return False
        count = _steps_over(stmt.value, value, self_name, qualify)
        if not count:
            return False
        steps += count
        value = stmt.targets[0].id
    return False  # no `return` at the end


def _steps_over(expr: ast.expr, value: str, self_name: str, qualify: Callable[[str], str]) -> int | None:
    """How many steps (`_step`) `expr` applies to the name `value`, nested (`act(drop(y))`), else None."""
    count = 0
    while isinstance(expr, ast.Call):
        if not _step(expr, value, self_name, qualify):
            return None
        count += 1
        expr = expr.args[0]
    return count if isinstance(expr, ast.Name) and expr.id == value else None


# torch layers a child the forward applies after the norm may be: activations, dropouts, the identity
_POINTWISE = frozenset({
    "ReLU", "ReLU6", "LeakyReLU", "PReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish", "Hardswish",
    "Hardsigmoid", "Sigmoid", "Tanh", "Softplus", "Identity", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d",
    "AlphaDropout",
})


def _children_apply_pointwise(forward: ast.FunctionDef, init: ast.FunctionDef | None,
                              qualify: Callable[[str], str]) -> bool:
    """Every `self.<child>` the forward calls is set by `__init__`, and never to a torch layer other than an
    activation, a dropout or the identity (another file's builder, `_create_act(act_layer)`, may be either)."""
    params = [a.arg for a in forward.args.posonlyargs + forward.args.args]
    self_name = params[0] if params else "self"
    called = {n.func.attr for n in ast.walk(forward) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
              and _is_name(n.func.value, self_name)} - {"forward"}
    if not called:
        return True
    if init is None:
        return False
    init_self = init.args.args[0].arg if init.args.args else "self"
    set_to: dict[str, list[ast.expr]] = {}
    for node in ast.walk(init):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Attribute) and _is_name(t.value, init_self):
                    set_to.setdefault(t.attr, []).append(node.value)
    for attr in called:
        values = set_to.get(attr)
        if not values:
            return False  # a method of the class, or a child set elsewhere
        for value in values:
            for n in ast.walk(value):
                if isinstance(n, ast.Call) and (dotted := dotted_name(n.func)) is not None:
                    qualified = qualify(dotted)
                    if qualified.startswith("torch.nn.") and qualified.count(".") == 2 and (
                            qualified.rsplit(".", 1)[-1] not in _POINTWISE):
                        return False
    return True


def _norm_of(stmt: ast.stmt, x: str, self_name: str, layer: str, qualify: Callable[[str], str]) -> str | None:
    """The name `stmt` binds to the BatchNorm of input `x` (`y = F.batch_norm(x, self.running_mean, ...)`)."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
        return None
    call = stmt.value
    if not isinstance(call, ast.Call) or not all(k.arg for k in call.keywords):
        return None
    func = call.func
    args = call.args
    dotted = dotted_name(func)
    qualified = qualify(dotted) if dotted is not None else ""
    if qualified in _NORM_FUNCTIONS:
        if len(args) < 5 or not _is_name(args[0], x):
            return None
        training = args[5] if len(args) > 5 else next((k.value for k in call.keywords if k.arg == "training"), None)
        if isinstance(training, ast.Constant) and training.value is True:
            return None  # batch statistics in eval mode too (V-Net's `ContBatchNorm3d`): not BatchNorm's eval norm
        # running statistics, weight and bias are the module's own (an expression choosing them, as
        # BatchNorm's own forward does for `track_running_stats`, reads them)
        for arg, buffer in zip(args[1:5], _BUFFERS, strict=True):
            if not any(isinstance(n, ast.Attribute) and n.attr == buffer and _is_name(n.value, self_name)
                       for n in ast.walk(arg)):
                return None
    elif isinstance(func, ast.Attribute) and func.attr == "forward":
        owner = func.value
        if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super":
            if len(args) != 1 or not _is_name(args[0], x):
                return None  # `super().forward(x)`, `super(Cls, self).forward(x)`
        elif qualify(dotted_name(owner) or "") == layer:
            if len(args) != 2 or not _is_name(args[0], self_name) or not _is_name(args[1], x):
                return None  # `nn.BatchNorm2d.forward(self, x)`
        else:
            return None
    else:
        return None
    return stmt.targets[0].id


def _bookkeeping(stmt: ast.stmt, x: str) -> bool:
    """A statement before the norm that leaves the input as it came: locals other than `x`, asserts, calls
    (`self.num_batches_tracked.add_(1)`), and `if`s of those."""
    if isinstance(stmt, ast.Assert | ast.Pass):
        return True
    if isinstance(stmt, ast.Expr):
        call = stmt.value
        if not isinstance(call, ast.Call) or any(_is_name(a, x) for a in (*call.args, *(k.value for k in call.keywords))):
            return False  # the input handed to a call may be changed in place
        return not (isinstance(call.func, ast.Attribute) and _is_name(call.func.value, x))  # `x.add_(...)`
    if isinstance(stmt, ast.Assign | ast.AugAssign | ast.AnnAssign):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        return all(isinstance(t, ast.Name) and t.id != x for t in targets)
    if isinstance(stmt, ast.If):
        return all(_bookkeeping(s, x) for s in (*stmt.body, *stmt.orelse))
    return False


def _step(call: ast.Call, value: str, self_name: str, qualify: Callable[[str], str]) -> bool:
    """One step after the norm: an activation function or a child module applied to the running value alone
    (its only positional argument; keywords only as literals: `inplace=True`, `negative_slope=0.1`)."""
    if len(call.args) < 1 or not all(k.arg is not None and _fixed(k.value, self_name) for k in call.keywords):
        return False
    extra = call.args[1:]
    func = call.func
    if isinstance(func, ast.Attribute) and _is_name(func.value, self_name):
        return not extra  # `self.act(x)`: a child module, nothing else read
    dotted = dotted_name(func)
    if dotted is None:
        return False
    qualified = qualify(dotted)
    if qualified.endswith("_") and not qualified.endswith("__"):
        qualified = qualified[:-1]  # the in-place variant (`F.leaky_relu_`, `torch.relu_`)
    if qualified not in FUNCTION_VALUES:
        return False
    return all(_fixed(a, self_name) for a in extra)


def _fixed(node: ast.expr, self_name: str) -> bool:
    """A literal or a setting the module keeps (`F.leaky_relu_(y, self.slope)`), never another tensor."""
    return isinstance(node, ast.Constant) or (isinstance(node, ast.Attribute) and _is_name(node.value, self_name))


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name
