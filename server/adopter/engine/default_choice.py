"""Whether a conditional `__init__` binding is a layer chosen by name that the parameter's default does not choose.

A module that picks its layer by a string parameter (`normalization: str = "layer_norm"`, then `if
normalization == "batch_norm": self.norm = nn.BatchNorm1d(c)` / `elif normalization == "layer_norm":
self.norm = nn.LayerNorm(c)`) builds, as written and as its callers leave it, the layer its default names.
The layer another name selects is read as family 6 reads an activation chosen by name (`named_activation`,
`key_may_be`: a literal key or the parameter's literal default names the layer): not the module's. Such a
binding is skipped when its condition is false at the defaults and another binding of the same attribute
has a condition that is true there (the default evidently takes another path), or a conjunction whose test of
the name holds and whose other terms are not read (`elif norm == "rms": if hasattr(nn, "RMSNorm"): ...`). Only `==`, `!=`, `in` and
`not in` of a parameter against string literals are decided; a boolean flag (`if use_bn:`) is a switch for
an optional layer, not a choice by name, and stays undecided, as does anything else (a config attribute, a
call). A default equal to the literal up to case is undecided: `__init__` may case-fold the parameter first.
A `None` default is undecided too: `__init__` often rebinds it before the choice (`if norm_type is None:
norm_type = "batch"`, `norm_type = norm_type or cfg.norm`), which the bindings do not show.

One boolean choice is decided: between activations (`self.activation = nn.ReLU() if not gelu else nn.GELU()`,
`gelu=False`; or the same written as `if`/`else`). Every binding of the attribute is a torch activation under a
test of flags with literal `True`/`False` defaults, so the flag picks which activation the module computes, as
a string picks one by name; the GELU it does not pick by default is not the module's (family 6 counts an
activation chosen by a parameter when its default is GELU). A flag that switches a layer on or off (a norm
or an `nn.Identity()` on the other path) stays undecided.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache

from adopter.dsl.types import VAR_KEYWORD, VAR_POSITIONAL, Binding, Ctor, Expr, Param


def unchosen_by_default(binding: Binding, params: Sequence[Param], siblings: Sequence[Binding]) -> bool:
    """Whether `binding` (one of `siblings`, the bindings of its attribute) is a choice by name that the
    string defaults of `params` rule out while they take another sibling's path."""
    if binding.condition is None or len(siblings) < 2:
        return False
    defaults = string_defaults(params)
    if defaults and decide(binding.condition, defaults) is False and any(
            s is not binding and s.condition is not None and _taken(s.condition, defaults) for s in siblings):
        return True
    return _unchosen_activation(binding, params, siblings)


# torch's activation layers and functions (`torch.nn.<Name>` / `torch.nn.functional.<name>`): what a boolean
# flag chooses between when it picks the activation
_ACTIVATIONS = frozenset({"GELU", "ReLU", "ReLU6", "LeakyReLU", "SiLU", "Mish", "Tanh", "Sigmoid", "ELU", "SELU",
                          "CELU", "Softplus", "Hardswish", "Hardsigmoid", "Hardtanh", "PReLU", "Tanhshrink"})
_FUNCTIONS = frozenset({"gelu", "relu", "relu6", "leaky_relu", "silu", "mish", "tanh", "sigmoid", "elu", "selu",
                        "celu", "softplus", "hardswish", "hardsigmoid", "hardtanh", "torch.tanh", "torch.sigmoid",
                        "torch.relu"})


def _activation(binding: Binding) -> bool:
    """Whether the binding holds a torch activation (a layer built, or a function stored)."""
    value = binding.value
    if isinstance(value, Ctor):
        return value.callee.startswith("torch.nn.") and value.callee[len("torch.nn."):] in _ACTIVATIONS
    if isinstance(value, Expr):
        text = value.text.strip()
        short = text[len("torch.nn.functional."):] if text.startswith("torch.nn.functional.") else text
        return short in _FUNCTIONS and (short != text or text.startswith("torch."))
    return False


def _unchosen_activation(binding: Binding, params: Sequence[Param], siblings: Sequence[Binding]) -> bool:
    """Whether every binding of the attribute is an activation under a condition of boolean flags, and the
    flags' defaults make `binding`'s false and another's true (see the module doc)."""
    if not all(s.condition is not None and _activation(s) for s in siblings):
        return False
    flags = flag_defaults(params)
    if not flags or _decide_flags(binding.condition, flags) is not False:
        return False
    return any(s is not binding and _decide_flags(s.condition, flags) is True for s in siblings)


def flag_defaults(params: Sequence[Param]) -> dict[str, bool]:
    """The parameters whose default is the literal `True` or `False`, with that value."""
    return {p.name: p.default.strip() == "True" for p in params
            if p.kind not in (VAR_POSITIONAL, VAR_KEYWORD)
            and p.default is not None and p.default.strip() in ("True", "False")}


def _decide_flags(condition: str | None, flags: Mapping[str, bool]) -> bool | None:
    tree = _parsed(condition) if condition is not None else None
    return _flag_truth(tree, flags) if tree is not None else None


def _flag_truth(node: ast.expr, flags: Mapping[str, bool]) -> bool | None:
    """The truth of a test of flags (`gelu`, `not gelu and bias`) at their defaults, None when not evident."""
    return truth(node, lambda leaf: flags.get(leaf.id) if isinstance(leaf, ast.Name) else None)


def _taken(condition: str, defaults: Mapping[str, str]) -> bool:
    """Whether the defaults evidently take the path of `condition`: it is true there, or it is a conjunction
    none of whose terms is false and one of whose tests of a string parameter is true (`not (norm ==
    "layer_norm") and norm == "rms" and hasattr(nn, "RMSNorm")`: the name's branch, split further by a test
    not read here, `elif norm == "rms": if hasattr(nn, "RMSNorm"): ...`)."""
    tree = _parsed(condition)
    if tree is None:
        return False
    truth = _truth(tree, defaults)
    if truth is not None or not isinstance(tree, ast.BoolOp) or not isinstance(tree.op, ast.And):
        return truth is True
    terms = [_truth(v, defaults) for v in tree.values]
    return False not in terms and True in terms


def string_defaults(params: Sequence[Param]) -> dict[str, str]:
    """The parameters whose default is a string literal, with that string."""
    out: dict[str, str] = {}
    for p in params:
        if p.kind in (VAR_POSITIONAL, VAR_KEYWORD) or p.default is None:
            continue
        value = _literal(p.default)
        if isinstance(value, str):
            out[p.name] = value
    return out


def decide(condition: str, defaults: Mapping[str, str]) -> bool | None:
    """The truth of a binding's condition at these defaults: True, False, or None when it is not evident."""
    tree = _parsed(condition)
    return _truth(tree, defaults) if tree is not None else None


@lru_cache(maxsize=4096)
def _parsed(condition: str) -> ast.expr | None:
    try:
        return ast.parse(condition.strip(), mode="eval").body
    except (SyntaxError, ValueError):
        return None


def _literal(text: str) -> object:
    try:
        return ast.literal_eval(text)
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return None


def _truth(node: ast.expr, defaults: Mapping[str, str]) -> bool | None:
    if isinstance(node, ast.BoolOp):
        parts = [_truth(v, defaults) for v in node.values]
        if isinstance(node.op, ast.And):
            return False if False in parts else (True if all(p is True for p in parts) else None)
        return True if True in parts else (False if all(p is False for p in parts) else None)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _truth(node.operand, defaults)
        return None if inner is None else not inner
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        return _compare(node.left, node.ops[0], node.comparators[0], defaults)
    return None


def _compare(left: ast.expr, op: ast.cmpop, right: ast.expr, defaults: Mapping[str, str]) -> bool | None:
    if isinstance(right, ast.Name) and isinstance(op, (ast.Eq, ast.NotEq)):
        left, right = right, left
    if not isinstance(left, ast.Name) or left.id not in defaults:
        return None
    value = defaults[left.id]
    if isinstance(op, (ast.Eq, ast.NotEq)):
        options = _strings(right, single=True)
    elif isinstance(op, (ast.In, ast.NotIn)):
        options = _strings(right, single=False)
    else:
        return None
    if options is None:
        return None
    if value in options:
        found: bool | None = True
    elif value.casefold() in {o.casefold() for o in options}:
        return None
    else:
        found = False
    return found if isinstance(op, (ast.Eq, ast.In)) else not found


def _strings(node: ast.expr, single: bool) -> tuple[str, ...] | None:
    """The string literal (`single`) or the literal tuple/list/set of strings `node` is, else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return (node.value,) if single else None
    if single or not isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return None
    items = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return tuple(items) if len(items) == len(node.elts) else None


def truth(node: ast.expr, leaf: Callable[[ast.expr], bool | None]) -> bool | None:
    """The truth of `node` from the truth `leaf` gives its operands, through `not`, `and` and `or`: True, False,
    or None when it is not evident."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = truth(node.operand, leaf)
        return None if inner is None else not inner
    if isinstance(node, ast.BoolOp):
        parts = [truth(v, leaf) for v in node.values]
        if isinstance(node.op, ast.And):
            return False if False in parts else (True if all(p is True for p in parts) else None)
        return True if True in parts else (False if all(p is False for p in parts) else None)
    return leaf(node)
