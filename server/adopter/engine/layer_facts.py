"""What a layer's constructor says about the layer, as written: its output width, the literal key it is
looked up by. Read by the matcher's `same_width` and `key_may_be` guards."""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence

from adopter.dsl.types import Ctor, Expr, Param
from adopter.engine.bindings import norm_text
from adopter.engine.default_choice import string_defaults

# Where each layer's output width is written: (positional index, keyword).
_WIDTH_ARG = {
    "torch.nn.Linear": (1, "out_features"),
    "torch.nn.Conv1d": (1, "out_channels"),
    "torch.nn.Conv2d": (1, "out_channels"),
}


def output_width(ctor: Ctor) -> str | None:
    """The output width's source text (normalised), or None when the constructor does not show it."""
    where = _WIDTH_ARG.get(ctor.callee)
    if where is None:
        return None
    index, keyword = where
    for k in ctor.kwargs:
        if k.name == keyword:
            return norm_text(k.value.text) if isinstance(k.value, Expr) else None
    if len(ctor.args) > index and isinstance(ctor.args[index], Expr):
        return norm_text(ctor.args[index].text)  # type: ignore[union-attr]
    return None


def widths_agree(widths: Sequence[str | None]) -> bool:
    """Whether output widths can be one fused projection's parts: equal as written, or products that
    share a factor (`num_heads * head_dim` and `num_key_value_heads * head_dim`: grouped-query
    attention). An unknown width agrees with anything."""
    known = [w for w in widths if w is not None]
    if len(set(known)) <= 1:
        return True
    parts = [frozenset(factors(w)) for w in known]
    if any(len(f) < 2 for f in parts):
        return False
    return bool(frozenset.intersection(*parts))


def sized(widths: Sequence[str | None], size: Callable[[str], str | None]) -> list[str | None]:
    """The widths with each one written as a local of `__init__` replaced by the arithmetic it holds
    (`dim_inner` -> `heads*dim_head`, `size`: `InitIndex.size`), a few levels deep; the others as they are."""
    out: list[str | None] = []
    for w in widths:
        for _ in range(_SIZE_DEPTH):
            held = size(w) if w is not None and w.isidentifier() else None
            if held is None:
                break
            w = norm_text(held)
        out.append(w)
    return out


_SIZE_DEPTH = 3


def factors(text: str) -> list[str]:
    """`a*b*c` -> [a, b, c] (top-level `*` only, on normalised text)."""
    out: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "*" and depth == 0:
            if text[i + 1 : i + 2] == "*" or text[i - 1 : i] == "*":
                return [text]  # a power, not a product
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return out


def key_text(ctor: Ctor) -> str | None:
    """The source text of the key a layer is looked up by: the subscript of `T[key]`, or the first argument of
    a factory that is not a torch layer (`f(key)`); None for anything else."""
    if ctor.lookup is not None:
        return ctor.lookup
    if not ctor.callee.startswith("torch.") and ctor.args and isinstance(ctor.args[0], Expr):
        return ctor.args[0].text
    return None


def literal_keys(ctor: Ctor, params: Sequence[Param] = ()) -> frozenset[str] | None:
    """The string keys a layer is looked up by when they are literals: `T["relu"]`, `f("swish")` (a
    factory from a name), `T["a" if c else "b"]`; None when the key is read from elsewhere (a config).

    A key that is an `__init__` parameter (`params`) with a string default is that default, in lower case as
    the name factories read it (`ACT2FN[activation]` with `activation="relu"`, `get_activation(act_fn)` with
    `act_fn="silu"`): the module as written and as its callers leave it looks up that name, as a layer class
    passed as a default (`act_layer=nn.GELU`) is read as that class. A parameter without a string default
    (required, None) stays unknown."""
    text = key_text(ctor)
    if text is None:
        return None
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None
    if isinstance(tree, ast.Name) and params:
        default = string_defaults(params).get(tree.id)
        return frozenset({default.lower()}) if default is not None else None
    return _literals(tree)


def _literals(node: ast.expr) -> frozenset[str] | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return frozenset({node.value})
    if isinstance(node, ast.IfExp):
        a, b = _literals(node.body), _literals(node.orelse)
        return a | b if a is not None and b is not None else None
    return None
