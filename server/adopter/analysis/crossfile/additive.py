"""Imported helpers that return their first argument plus their second: read as `torch.add` (never run).

timm ≥ 1.0.2x adds an attention mask through a helper of another file, `attn = maybe_add_mask(attn, bias)`,
with `def maybe_add_mask(scores, attn_mask=None): return scores if attn_mask is None else scores + attn_mask`
in `timm/layers/attention.py`, re-exported by `timm/layers/__init__.py`. A same-file helper is inlined by the
flow; one of another file is an opaque call, which breaks the attention chain at its mask step. A name
imported by name (`from m import f`) and called as `x = f(x, y, ...)` is looked up in `m`'s file (following
plain `from .a import f` re-exports, a few hops); when its definition is a module-level function of at least
two positional parameters whose body (a docstring aside) is one `return` of `a + b`, `b + a`, `a if b is None
else a + b` or `a + b if b is not None else a` (`a`, `b` its first two parameters, no other parameter
without a default), the name is bound to `torch.add`: the same value for a tensor `b`, and for `b = None`
the unmasked scores, which is what `scaled_dot_product_attention(attn_mask=None)` computes. Recognised by
what its body computes, never by its name. The helper's file is a dependency of the analysis (`reads`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping, Sequence

from adopter.analysis.crossfile.ast_files import ParsedFile
from adopter.analysis.names.symbols import resolve_relative

Locate = Callable[[str, str], str | None]
MAX_HOPS = 3  # `from timm.layers import f` -> `timm/layers/__init__.py` -> `.attention`
ADD = "torch.add"
_FIRST_ARG = re.compile(rb"[ \t]*(\w+)[ \t]*,")


def additive_helpers(imports: Mapping[str, str], data: bytes, positions: Callable[[bytes], Sequence[int]], path: str,
                     locate: Locate, parse: Callable[[str], ParsedFile | None], package_of: Callable[[str], str | None],
                     ) -> dict[str, str]:
    """Local name -> `torch.add` for each name imported by name (`imports`: local name -> `m.n`) that the
    text `data` calls as `x = name(x, ...)` and whose definition returns its first argument plus its second
    (`positions(word)`: the offsets of `word` in `data`, ascending)."""
    out: dict[str, str] = {}
    for name, target in imports.items():
        if not _may_define(target) or not _updates(data, positions, name):
            continue
        module, _, leaf = target.rpartition(".")
        if _defines_addition(module, leaf, path, locate, parse, package_of, 0):
            out[name] = ADD
    return out


def _may_define(target: str) -> bool:
    """Whether an imported `m.n` may name a helper of another file: an absolute module that is not torch's."""
    module, dot, _ = target.rpartition(".")
    return bool(dot and module) and not module.startswith(".") and target.split(".")[0] != "torch"


def _updates(data: bytes, positions: Callable[[bytes], Sequence[int]], name: str) -> bool:
    """Whether some line of `data` calls `name` as `x = name(x, ...)`: the call's `(` found by `positions`, then
    `=` and blanks before the name, a word and a comma after the `(`, and that word alone before the `=`."""
    if not name.isascii():
        return False
    word = name.encode()
    for at in positions(word + b"("):
        eq = at - 1
        while eq >= 0 and data[eq] in b" \t":
            eq -= 1
        if eq < 0 or data[eq] != 61:  # `=`
            continue
        arg = _FIRST_ARG.match(data, at + len(word) + 1)
        if arg is None:
            continue
        start = data.rfind(b"\n", 0, eq) + 1
        if data[start:eq].strip() == arg.group(1):
            return True
    return False


def _defines_addition(module: str, leaf: str, path: str, locate: Locate, parse: Callable[[str], ParsedFile | None],
                      package_of: Callable[[str], str | None], hops: int) -> bool:
    located = locate(module, path)
    if located is None or locate(f"{module}.{leaf}", path) is not None:
        return False
    parsed = parse(located)
    if parsed is None or parsed.tree is None:
        return False
    node = parsed.toplevel.get(leaf)
    if isinstance(node, ast.FunctionDef):
        return returns_sum_of_first_two(node)
    if node is not None or hops >= MAX_HOPS:
        return False
    bound = parsed.imports.get(leaf)  # a re-export: `from .attention import maybe_add_mask`
    if bound is None:
        return False
    if bound.startswith("."):
        dots = len(bound) - len(bound.lstrip("."))
        bound = resolve_relative(package_of(located), dots, bound[dots:])
        if bound.startswith("."):
            return False
    inner, dot, inner_leaf = bound.rpartition(".")
    if not dot or not inner or bound.split(".")[0] == "torch":
        return False
    return _defines_addition(inner, inner_leaf, located, locate, parse, package_of, hops + 1)


def returns_sum_of_first_two(fn: ast.FunctionDef) -> bool:
    """Whether `fn`'s body is one `return` of its first parameter plus its second (the second's `None` aside)."""
    args = fn.args
    positional = args.posonlyargs + args.args
    if len(positional) < 2 or args.vararg is not None:
        return False
    required = len(positional) - len(args.defaults)
    if required > 2 or any(d is None for d in args.kw_defaults):
        return False
    a, b = positional[0].arg, positional[1].arg
    body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                       and isinstance(s.value.value, str))]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        return False
    value = body[0].value
    if _is_sum(value, a, b):
        return True
    if isinstance(value, ast.IfExp):
        test = value.test
        if (isinstance(test, ast.Compare) and len(test.ops) == 1 and _is_name(test.left, b)
                and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None):
            if isinstance(test.ops[0], ast.Is):
                return _is_name(value.body, a) and _is_sum(value.orelse, a, b)
            if isinstance(test.ops[0], ast.IsNot):
                return _is_sum(value.body, a, b) and _is_name(value.orelse, a)
    return False


def _is_sum(node: ast.expr, a: str, b: str) -> bool:
    return (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add)
            and {_name(node.left), _name(node.right)} == {a, b})


def _is_name(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _name(node: ast.expr) -> str | None:
    return node.id if isinstance(node, ast.Name) else None
