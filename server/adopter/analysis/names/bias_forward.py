"""Submodules whose forward returns its input plus a term not computed from it: a call of one adds that term.

dalle2-pytorch 1.15 `vqgan_vae.py` 185-220 (and nuwa-pytorch's copy) holds `ContinuousPositionBias`, whose
forward builds a bias from its own buffer and MLP and ends `return x + bias`; the attention calls it on the
scores, `sim = self.cpb(sim)`, between the product and the softmax. timm's `RelPosBias` / `RelPosMlp`
(`timm/layers/pos_embed_rel.py`, forward `return attn + self.get_bias()`) is called so in `gcvit.py` 200 through
an import of `timm.layers`. A module call is opaque to the flow, so the chain stopped there. For such a
submodule, `s = self.m(s, ...)` is `s + t` with `t` a value the caller cannot name (the flow emits the add with
an opaque term named by the call, `bias_term`, which no rewrite can hand on: the fix is declined).

The forward is read with `ast` (its own text for a same-file class, the definition cross-file reach finds for
one imported by name) and accepted only when, its docstring aside:
- its first parameter after `self` (`x`) is never rebound, and is read elsewhere only for its shape, device or
  dtype (`x.shape`, `x.size(-1)`, `x.device`: the term may be shaped like it), so no value of the body, the
  term included, is computed from its values;
- its one `return` is its last statement, of `x + t`, `t + x`, `x.add(t)` or `torch.add(x, t)`;
- the body has no `yield`, `global`, `nonlocal`, lambda or nested definition, and the method no decorator;
- the class defines no `__call__`.

Recognised by what the forward computes, never by a class or attribute name.
"""

from __future__ import annotations

import ast
import textwrap

# Reads of the input that are not its values: its shape, its rank, where and how it is stored.
_SHAPE_ATTRS = frozenset({"shape", "device", "dtype", "ndim", "is_cuda"})
_SHAPE_METHODS = frozenset({"size", "dim"})
_ADD_FUNCTIONS = frozenset({"torch.add"})
_TERM_SUFFIX = ".bias_term()"  # never a value of the caller: no rewrite can pass it on


def bias_term(attr: str) -> str:
    """The opaque term a call of bias submodule `attr` adds, as the flow names it."""
    return f"self.{attr}{_TERM_SUFFIX}"


def is_bias_term(text: str) -> bool:
    """Whether `text` is the opaque term of a bias submodule's call (`bias_term`)."""
    return text.startswith("self.") and text.endswith(_TERM_SUFFIX)


def forward_adds_term(cls: ast.ClassDef) -> bool:
    """Whether class `cls` defines a forward that returns its input plus a term not computed from it (and no
    `__call__`)."""
    methods = {s.name: s for s in cls.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)}
    forward = methods.get("forward")
    if "__call__" in methods or not isinstance(forward, ast.FunctionDef):
        return False
    return adds_term(forward)


def forward_text_adds_term(text: str) -> bool:
    """`adds_term` of a method given as its source text (a same-file class's forward, indented as written)."""
    try:
        module = ast.parse(textwrap.dedent(text))
    except (SyntaxError, ValueError):
        return False
    return bool(module.body) and isinstance(module.body[0], ast.FunctionDef) and adds_term(module.body[0])


def adds_term(fn: ast.FunctionDef) -> bool:
    """Whether method `fn` returns its first input plus a term computed without that input's values."""
    positional = fn.args.posonlyargs + fn.args.args
    if len(positional) < 2 or fn.decorator_list:
        return False
    x = positional[1].arg
    body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                       and isinstance(s.value.value, str))]
    if not body or not isinstance(body[-1], ast.Return) or body[-1].value is None:
        return False
    term = _added_term(body[-1].value, x)
    if term is None:
        return False
    for node in ast.walk(fn):
        if isinstance(node, ast.Yield | ast.YieldFrom | ast.Global | ast.Nonlocal | ast.Lambda):
            return False
        if isinstance(node, ast.Return) and node is not body[-1]:
            return False
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node is not fn:
            return False
    # `x` read only for its shape, never bound: no value of the body, the term's included, is computed from it.
    return not any(_value_reads(s, x) for s in body[:-1]) and not _value_reads(term, x)


def _added_term(value: ast.expr, x: str) -> ast.expr | None:
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
        if _is_name(value.left, x):
            return value.right
        if _is_name(value.right, x):
            return value.left
    if isinstance(value, ast.Call) and not value.keywords:
        func = value.func
        if (isinstance(func, ast.Attribute) and func.attr == "add" and _is_name(func.value, x)
                and len(value.args) == 1):
            return value.args[0]
        if ast.unparse(func) in _ADD_FUNCTIONS and len(value.args) == 2 and _is_name(value.args[0], x):
            return value.args[1]
    return None


def _value_reads(node: ast.AST, x: str) -> bool:
    """Whether `node` reads or binds the name `x` other than for its shape, device or dtype."""
    stack: list[ast.AST] = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Attribute) and n.attr in _SHAPE_ATTRS and _is_name(n.value, x):
            continue
        if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _SHAPE_METHODS
                and _is_name(n.func.value, x)):
            stack.extend(n.args)
            stack.extend(k.value for k in n.keywords)
            continue
        if isinstance(n, ast.Name) and n.id == x:
            return True
        stack.extend(ast.iter_child_nodes(n))
    return False


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name

