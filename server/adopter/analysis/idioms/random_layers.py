"""Layers built as `X(...) if c else nn.Identity()` whose forward draws random numbers (issue 20, prec10).

The canonical pass reads such a conditional layer as a branch whose other path is the identity
(`normalise.identity_or_layer`, built for LayerScale-or-Identity), so a match through the identity holds on
its path. A stochastic-depth layer (`DropPath(rate) if rate > 0 else nn.Identity()`) is not a layer a match
may pass through that way: where it is built it zeroes the whole branch of some samples in training with a
mask of its own, which no rewrite of the path without it computes (the family-5 kernel draws one dropout
mask), and it is built wherever a training recipe sets a rate. `random_layers` reads the layer itself, never
its name: its class's `forward` (the analysed file's class, or another file's read with `ast` through
cross-file reach) and the module-level functions of that file it calls, for a call that draws random numbers
(`torch.rand`, `bernoulli_`, ...; a dropout is the pattern's own). Such an attribute's call stays one module call: no match runs
through it. A layer that is not read (no reach, an unreadable file) keeps the identity reading, as before.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from adopter.analysis.names.symbols import import_from_names
from adopter.dsl.types import Binding, Ctor

if TYPE_CHECKING:
    from adopter.analysis.parse.source import SourceText
    from adopter.analysis.scope.classes import ClassTable

IDENTITY = "torch.nn.Identity"
# Calls that draw random numbers, by the callee's last name (a tensor method or a torch function). Dropout is
# not among them: a dropout built only for a positive rate (`nn.Dropout(p) if p > 0 else nn.Identity()`, a module
# whose forward is `F.dropout`) is the pattern's own dropout, read through its identity path as before.
RANDOM = frozenset({
    "rand", "rand_like", "randn", "randn_like", "randint", "randint_like", "bernoulli", "bernoulli_",
    "multinomial", "uniform_", "normal_", "exponential_", "geometric_",
})
_CALL = re.compile(r"(\.?)\s*\b([A-Za-z_]\w*)\s*\(")  # a call's last name, and whether a `.` precedes it
_DEPTH = 2  # module-level functions followed from the forward, one calling the next
# Another file's class read by cross-file reach, with the module-level functions of its file by name.
Imported = tuple[ast.ClassDef, dict[str, ast.FunctionDef]]


def random_layers(bindings: Sequence[Binding], table: ClassTable, src: SourceText,
                  imported: Callable[[str], Imported | None] | None, name: str) -> frozenset[str]:
    """The attributes bound to a layer under one condition and to `nn.Identity()` under the other whose layer's
    forward draws random numbers (read as above), in class `name`'s `__init__`. `imported`: the class of another
    file a qualified name names, read by cross-file reach (None: not read)."""
    by_attr: dict[str, list[Binding]] = {}
    for b in bindings:
        by_attr.setdefault(b.attr, []).append(b)
    out: set[str] = set()
    for attr, bs in by_attr.items():
        if len(bs) != 2 or not all(isinstance(b.value, Ctor) and b.condition for b in bs):
            continue
        ctors = [b.value for b in bs if isinstance(b.value, Ctor)]
        layers = [c for c in ctors if c.callee != IDENTITY]
        if len(layers) != 1 or len(ctors) - len(layers) != 1:
            continue
        callee = layers[0].callee
        if "." not in callee and not table.symbols.has_class(callee):
            callee = _local_import(callee, name, table, src) or callee
        if _draws(callee, table, src, imported):
            out.add(attr)
    return frozenset(out)


def _draws(callee: str, table: ClassTable, src: SourceText,
           imported: Callable[[str], Imported | None] | None) -> bool:
    if callee.startswith("torch."):
        return False  # torch's layers: none between a dropout and an add draws but the dropout itself
    if table.symbols.has_class(callee):
        method = table.find_method(callee, "forward")
        if method is None:
            return False
        return _text_draws(src.text(method[1]), lambda name: _function_text(name, table, src), _DEPTH)
    if imported is None or "." not in callee:
        return False
    found = imported(callee)
    if found is None:
        return False
    forward = next((n for n in found[0].body if isinstance(n, ast.FunctionDef) and n.name == "forward"), None)
    return forward is not None and _node_draws(forward, found[1], _DEPTH)


def _local_import(local: str, name: str, table: ClassTable, src: SourceText) -> str | None:
    """What a `from m import X` inside class `name`'s `__init__` binds `local` to, qualified (funasr imports its
    `DropPath` there); None when there is none."""
    found = table.find_method(name, "__init__")
    body = found[1].child_by_field_name("body") if found is not None else None
    stack = list(body.named_children) if body is not None else []
    while stack:
        node = stack.pop()
        if node.type == "import_from_statement":
            qualified = import_from_names(node, src, table.symbols.package).get(local)
            if qualified is not None:
                return qualified
        elif node.type not in ("function_definition", "class_definition", "decorated_definition"):
            stack.extend(node.named_children)
    return None


def _function_text(name: str, table: ClassTable, src: SourceText) -> str | None:
    node = table.symbols.function_node(name)
    return src.text(node) if node is not None else None


def _text_draws(text: str, function: Callable[[str], str | None], depth: int) -> bool:
    """Whether a function's text calls a random draw, or (`depth` levels) a module-level function that does."""
    calls = _CALL.findall(text)
    if any(callee in RANDOM for _, callee in calls):
        return True
    if depth <= 0:
        return False
    for callee in dict.fromkeys(callee for dot, callee in calls if not dot):
        body = function(callee)
        if body is not None and _text_draws(body, function, depth - 1):
            return True
    return False


def _node_draws(fn: ast.FunctionDef, functions: dict[str, ast.FunctionDef], depth: int) -> bool:
    names: list[str] = []
    for node in ast.walk(fn):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        last = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
        if last in RANDOM:
            return True
        if isinstance(f, ast.Name):
            names.append(f.id)
    if depth <= 0:
        return False
    return any(_node_draws(functions[n], functions, depth - 1) for n in dict.fromkeys(names) if n in functions)


def reading_of(lookup: Callable[[str], Any]) -> Callable[[str], Imported | None]:
    """`imported` for `random_layers` from cross-file reach's lookup of a qualified name (`(ParsedFile, node,
    path)` or None): the class and the module-level functions of its file."""
    def imported(qualified: str) -> Imported | None:
        try:
            found = lookup(qualified)
        except (RecursionError, ValueError, OSError, SyntaxError):
            return None
        if found is None or not isinstance(found[1], ast.ClassDef):
            return None
        tree = getattr(found[0], "tree", None)
        functions = {n.name: n for n in (tree.body if tree is not None else ()) if isinstance(n, ast.FunctionDef)}
        return found[1], functions
    return imported
