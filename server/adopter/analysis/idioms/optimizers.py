"""Optimizers built where the class is chosen indirectly, and the methods that build them.

Training code rarely writes `torch.optim.AdamW(...)` only at the top of a script. It builds optimizers

- in methods: `configure_optimizers(self)` (Lightning), `Trainer.__init__`, `build_optimizer(self, cfg)`:
  `optimizer_methods` reads the methods of every class of the file that mention an optimizer like
  module-level functions (`FlowAnalysis`), named `Class.method`;
- through a class that is a parameter: `def make_optimizer(model, optimizer_class=torch.optim.Adam)`,
  then `optimizer_class(model.parameters(), lr=lr)`;
- through a name: `opt_cls = getattr(torch.optim, name)` with `name="AdamW"` (a parameter's default or
  a string literal).

`resolve_optimizer_classes` turns such a call into the op of the class it builds by default
(`function torch.optim.AdamW(params, lr=lr)`) with the call as written as its `origin`. The caller may
pass another class, so adding `fused=True` there is not certainly right: `chosen_class_reason` gives the
engine the reason these sites have no automatic fix.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from tree_sitter import Node

from adopter.analysis.canonical.normalise import normalise
from adopter.dsl.types import CALL_OP, FUNCTION_OP, Block, Branch, Expr, Forward, Loop, Op, Ref, Stmt

# Whole words of a method's text that say it may build an optimizer (a cheap filter before reading it):
# `torch.optim` / `optim.`, the class names, a class held in a name (`optimizer_class`, `opt_cls`). Not
# `self.optimizer.step()`: a training step that uses an optimizer is not read as a function.
_HINT = re.compile(rb"\b(?:optim|AdamW?|optim\w*_(?:class|cls|factory|fn)|opt_(?:class|cls))\b")
OPTIMIZER_MODULE = "torch.optim"
CHOSEN = "chosen class"  # `Op.origin.target` prefix of a call whose class is resolved here


def file_mentions_optimizer(occurs: Callable[[bytes], bool]) -> bool:
    """A cheap test before looking at methods: whether the file mentions an optimizer at all
    (`occurs(word)`: whether the file holds `word`, `SourceText.occurs`)."""
    return occurs(b"optim") or occurs(b"Adam")


def mentions_optimizer(text: bytes) -> bool:
    """Whether a method's source may build an optimizer (`torch.optim`, `Adam`, `optimizer_class`, ...)."""
    return _HINT.search(text) is not None


def optimizer_methods(classes: dict[str, dict[str, Node]], skip: Callable[[str, str], bool],
                      raw: Callable[[Node], bytes], contains: Callable[[Node, bytes], bool]) -> list[tuple[str, Node]]:
    """(`Class.method`, node) of each method that mentions an optimizer, unless `skip(class, method)`.
    `raw`: a node's source; `contains(node, word)`: whether it holds `word` (`SourceText.contains`)."""
    out: list[tuple[str, Node]] = []
    for cls, methods in classes.items():
        for method, node in methods.items():
            if not skip(cls, method) and _may_mention(node, contains) and mentions_optimizer(raw(node)):
                out.append((f"{cls}.{method}", node))
    return out


def _may_mention(node: Node, contains: Callable[[Node, bytes], bool]) -> bool:
    """Whether `mentions_optimizer` may hold for `node`: every match of `_HINT` holds one of these words,
    and word look-ups rule most methods out without copying and scanning each (this runs on most methods
    of the file at every keystroke)."""
    return contains(node, b"optim") or contains(node, b"Adam") or contains(node, b"opt_")


def resolve_optimizer_classes(forward: Forward, qualify: Callable[[str], str]) -> Forward:
    """`forward` with calls of a class chosen by a parameter default or `getattr(torch.optim, name)`
    respelled as that class's op (see the module doc); unchanged when there is none."""
    defaults = {p.name: p.default for p in forward.params if p.default is not None}
    classes: dict[str, tuple[str, str]] = {}  # name -> (qualified class, how it was chosen)
    for name, default in defaults.items():
        qualified = qualify(default) if _DOTTED.fullmatch(default) else ""
        if qualified.startswith(OPTIMIZER_MODULE + "."):
            classes[name] = (qualified, f"the parameter `{name}` (default `{default}`)")
    body = _block(forward.body, classes, defaults, qualify)
    return forward if body == forward.body else replace(forward, body=body)


_DOTTED = re.compile(r"[A-Za-z_][\w.]*")


def _block(block: Block, classes: dict[str, tuple[str, str]], defaults: dict[str, str],
           qualify: Callable[[str], str]) -> Block:
    out: list[Stmt] = []
    for stmt in block:
        if isinstance(stmt, Branch):
            paths = tuple(_block(p, dict(classes), defaults, qualify) for p in stmt.paths)
            out.append(stmt if paths == stmt.paths else replace(stmt, paths=paths))
        elif isinstance(stmt, Loop):
            body = _block(stmt.body, dict(classes), defaults, qualify)
            out.append(stmt if body == stmt.body else replace(stmt, body=body))
        elif isinstance(stmt, Op):
            chosen = _getattr_class(stmt, defaults, qualify)
            for name in stmt.outputs:  # a rebinding ends what the name meant
                classes.pop(name, None)
            if chosen is not None and len(stmt.outputs) == 1:
                classes[stmt.outputs[0]] = chosen
            found = classes.get(stmt.target) if stmt.kind is CALL_OP else None
            if found is not None:
                origin = replace(stmt, target=f"{CHOSEN}: {found[1]}")
                # The class's own signature now applies (`params=` is its first argument), as the canonical
                # pass applies it where the class is written out.
                args, kwargs = normalise((FUNCTION_OP.value, found[0]), stmt.args, stmt.kwargs, {})
                stmt = replace(stmt, kind=FUNCTION_OP, target=found[0], origin=origin, args=args, kwargs=kwargs)
            out.append(stmt)
        else:
            out.append(stmt)
    return tuple(out)


def _getattr_class(op: Op, defaults: dict[str, str], qualify: Callable[[str], str]) -> tuple[str, str] | None:
    """`getattr(torch.optim, name)` with a known string name -> (the class, how it was chosen)."""
    if op.kind is not FUNCTION_OP or op.target != "getattr" or len(op.args) != 2 or op.kwargs:
        return None
    module, name = op.args
    if not isinstance(module, Expr) or qualify(module.text) != OPTIMIZER_MODULE:
        return None
    if isinstance(name, Ref) and name.name in defaults:
        text, how = defaults[name.name], f"`getattr({module.text}, {name.name})` (default {defaults[name.name]})"
    elif isinstance(name, Expr):
        text, how = name.text, f"`getattr({module.text}, {name.text})`"
    else:
        return None
    literal = re.fullmatch(r"""(['"])(\w+)\1""", text)
    if literal is None:
        return None
    return f"{OPTIMIZER_MODULE}.{literal.group(2)}", how


def chosen_class_reason(ops: tuple[Op, ...]) -> str | None:
    """Why a match on an optimizer whose class is chosen indirectly has no automatic fix, else None."""
    for op in ops:
        if op.origin is not None and op.origin.target.startswith(CHOSEN + ": "):
            how = op.origin.target[len(CHOSEN) + 2:]
            return (f"the optimizer class comes from {how}; a caller may choose another class, so pass "
                    f"`fused=True` by hand where the class supports it")
    return None
