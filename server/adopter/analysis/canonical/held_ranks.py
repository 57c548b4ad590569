"""The ranks of the tensors a module holds: parameters built in `__init__` from sizes written at the call.

`self.w = nn.Parameter(torch.ones(n))` is 1-D wherever a forward reads `self.w`: the creation functions
(`torch.zeros`, `ones`, `rand`, `randn`, `empty`, and `full` for its first argument) make one axis per size
passed one by one, or per item of one list or tuple literal. A single size is one axis only where it is an
integer by its form: a literal, `len(...)`, `int(...)`, or a sum or difference with an integer literal
(`self.layers + 1`; a shape tuple plus a number raises). A name (`torch.zeros(shape)`) may hold a whole shape,
so it says nothing. An attribute also bound to `None` on another path (effdet's `edge_weights`: a parameter
for the attention-weighted fusion, None otherwise) can only be read as the parameter by a tensor op (a
`None` raises there); any other second binding, or two parameters of different ranks, and nothing is known.

The canonical pass starts each forward knowing these ranks (`canonical_forward`), so `self.w.softmax(0)` of a
1-D parameter and `self.mask.softmax(3)` of a 4-D one are softmaxes over the last axis. torch lets a parameter's
slot take only a parameter or None (`self.w = self.w.view(...)` raises), so a forward that builds a parameter
(`builds_parameters`) is read knowing none of these ranks; one built in another method than `__init__` (a lazy
build) is not seen.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping, Sequence

from adopter.dsl.types import FUNCTION_OP, MODULE_OP, Binding, Ctor, Expr, Op, Ref

# torch's creation functions taking sizes one per argument (or one sequence of them).
_BY_SIZES = frozenset({"torch.zeros", "torch.ones", "torch.rand", "torch.randn", "torch.empty"})
_PARAMETER = "torch.nn.Parameter"
_PARAMETER_TARGETS = frozenset({_PARAMETER, "torch.nn.parameter.Parameter"})  # its spellings as a call
_NONE = Expr("None")


def held_ranks(by_attr: Mapping[str, Sequence[Binding]]) -> dict[str, int]:
    """`self.<attr>` -> its rank, for each attribute `__init__` binds to a parameter of evident rank (see the
    module docstring)."""
    out: dict[str, int] = {}
    for attr, bindings in by_attr.items():
        ranks = {_parameter_rank(b.value) for b in bindings if b.value != _NONE}
        if len(ranks) == 1 and (rank := ranks.pop()) is not None:
            out[f"self.{attr}"] = rank
    return out


def _parameter_rank(value: Ctor | Expr) -> int | None:
    """The rank of `nn.Parameter(<creation call>)`, or None."""
    if not isinstance(value, Ctor) or value.callee != _PARAMETER or not value.args:
        return None
    data = value.args[0]
    if not isinstance(data, Expr):
        return None
    try:
        node = ast.parse(data.text.strip(), mode="eval").body
    except (SyntaxError, ValueError):
        return None
    return created_rank(node)


def created_rank(node: ast.expr) -> int | None:
    """The rank of the tensor a creation call written in source makes (`torch.rand(1, c, n, 2)`: 4), or None."""
    if not isinstance(node, ast.Call) or _dotted(node.func) not in (_BY_SIZES | {"torch.full"}):
        return None
    if any(k.arg in ("size", None) for k in node.keywords):
        return None  # `torch.zeros(size=s)`, `**kw`: the sizes are held elsewhere
    sizes = node.args[:1] if _dotted(node.func) == "torch.full" else node.args
    if not sizes or any(isinstance(s, ast.Starred) for s in sizes):
        return None
    if len(sizes) > 1:
        return len(sizes)
    size = sizes[0]
    if isinstance(size, ast.Tuple | ast.List):
        return None if any(isinstance(e, ast.Starred) for e in size.elts) else len(size.elts)
    return 1 if _integer(size) else None


def _integer(node: ast.expr) -> bool:
    """An expression that is an integer by its form (a shape tuple cannot be one)."""
    if isinstance(node, ast.Constant):
        return type(node.value) is int
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("len", "int"):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
        return any(isinstance(side, ast.Constant) and type(side.value) is int for side in (node.left, node.right))
    return False


def _dotted(node: ast.expr) -> str:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ""
    parts.append(node.id)
    return ".".join(reversed(parts))


# Methods whose result has the rank of the tensor they are called on: casts, copies, elementwise maths.
_SAME_RANK_METHODS = frozenset({"to", "float", "double", "half", "bfloat16", "type", "type_as", "detach", "clone",
                                "contiguous", "cpu", "cuda", "sigmoid", "tanh", "relu", "exp", "abs", "neg"})


def held_key(value: object) -> str | None:
    """The key `ranks` holds a value's rank under: a name, or the text of a held attribute (`self.w`). `object`,
    not `Value`: a rule's pattern reaches `normalise_values` too, with pattern variables among its arguments
    (compiled by mypyc, a `Value` parameter would raise on those)."""
    if isinstance(value, Ref):
        return value.name
    text = value.text.strip() if isinstance(value, Expr) else ""
    return text if text.startswith("self.") and text[5:].isidentifier() else None


def held_method_rank(op: Op, ranks: Mapping[str, int]) -> int | None:
    """The rank of `self.w.to(dtype)` (the flow's call of a method of an attribute) for a held `self.w` of
    known rank; None otherwise."""
    if op.kind != MODULE_OP or len(op.outputs) != 1 or op.target.count(".") != 2:
        return None
    holder, method = op.target.rsplit(".", 1)
    return ranks.get(holder) if method in _SAME_RANK_METHODS else None


def builds_parameters(ops: Iterable[Op]) -> bool:
    """Whether a forward (`ops`: all of its ops, nested ones included, `block_ops`) builds a parameter
    (`self.w = nn.Parameter(x.new_zeros(...))`, a lazy build): the flow keeps no op for the store, so which
    attribute it replaces, and with what rank, is not known there."""
    return any(op.target in _PARAMETER_TARGETS and op.kind == FUNCTION_OP for op in ops)
