"""Linears a class inherits from a base class defined in another file (issue 20, mech65).

A subclass that writes its own `forward` and keeps the projections its base builds is a common way to vary
attention: min-dalle's `DecoderSelfAttention(AttentionBase)` (the base in the encoder's file), faesm's
`FAEsmSelfAttention(EsmSelfAttention)` and the `adapters` package's `BertSelfAttentionWithAdapters` (bases from
transformers), transformers' own `modular_*.py` files, labml_nn's ALiBi attention. The forward calls
`self.q_proj(x)`, `self.k_proj(x)`, `self.v_proj(x)`, but nothing in the file binds them: the class's
`__init__` (when it has one) only calls `super().__init__(...)`, and a base of the same file is read by the
analysis already (`InitAnalysis` follows `super()`), a base of another file was not.

`inherited_linears` reads that base (never imports it): the definition cross-file reach finds
(`CrossFileReach.definition`, the workspace and the installed packages), parsed with `ast`, its `__init__`'s
unconditional top-level statements `self.<attr> = nn.Linear(...)` (the callee qualified through that file's
imports), then its own bases the same way, a few levels deep, the first base in the MRO winning. Only the
attributes the class calls and binds nowhere itself are taken, only `torch.nn.Linear` constructions (what
family 9 reads; other layers a base builds are left for their own families' review), and each carries
`INHERITED` in its `origin`: the rewrite would edit another file (or an installed package), so the fused-QKV
fix declines such a site (`adopter.synth.strategies.qkv_fuse`).
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterable

from adopter.analysis.crossfile.ast_files import dotted_name, node_at, qualify
from adopter.analysis.crossfile.reach import CrossFileReach, torch_layer

INHERITED = "inherited from "  # the start of `Ctor.origin` for a layer a base of another file builds
_DEPTH = 3  # bases followed, one inside another
# No `\b` before `self`: the literal start lets the search skip ahead (8x faster on a model file), and a name
# ending in `self` (`myself.x(`) only adds an attribute that no base binds.
_CALLED = re.compile(rb"self\.(\w+)\s*(?:\.\s*forward\s*)?\(")
_LINEAR = "torch.nn.Linear"


def called_attrs(data: bytes) -> frozenset[str]:
    """The attributes a class's source bytes call as modules: `self.x(...)` or `self.x.forward(...)`."""
    return frozenset(m.decode() for m in _CALLED.findall(data))


def inherited_linears(reach: CrossFileReach, bases: Iterable[str], path: str,
                      wanted: frozenset[str]) -> list[tuple[str, str, tuple[str, ...], tuple[tuple[str, str], ...], str]]:
    """The `nn.Linear`s the bases of another file bind to the attributes `wanted`: (attr, callee, positional
    argument texts, keyword (name, text) pairs, origin), the first base in the MRO winning. Never raises."""
    out: dict[str, tuple[str, str, tuple[str, ...], tuple[tuple[str, str], ...], str]] = {}
    try:
        for qualified in bases:
            _read_base(reach, qualified, os.path.abspath(path), wanted, out, 0)
    except (RecursionError, ValueError, OSError, SyntaxError):
        return []
    return list(out.values())


def _read_base(reach: CrossFileReach, qualified: str, from_path: str, wanted: frozenset[str],
               out: dict[str, tuple[str, str, tuple[str, ...], tuple[tuple[str, str], ...], str]], depth: int) -> None:
    if depth >= _DEPTH or not wanted - out.keys() or qualified.startswith(("torch.", "typing.", "builtins.")):
        return
    d = reach.definition(qualified, from_path)
    if d is None:
        return
    parsed = reach.parsed(d.path)
    if parsed is None or parsed.tree is None:
        return
    node = node_at(parsed.tree, d.name, d.line)
    if isinstance(node, ast.ClassDef):
        _read_class(reach, node, d.path, parsed.imports, parsed.toplevel, wanted, out, depth)


def _read_class(reach: CrossFileReach, node: ast.ClassDef, path: str, imports: dict[str, str],
                toplevel: dict[str, ast.AST], wanted: frozenset[str],
                out: dict[str, tuple[str, str, tuple[str, ...], tuple[tuple[str, str], ...], str]], depth: int) -> None:
    init = next((f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
    if init is not None and init.args.args:
        me = init.args.args[0].arg
        for stmt in init.body:  # unconditional statements only: a binding under a test holds on some paths
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.value, ast.Call)):
                continue
            target = stmt.targets[0]
            if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == me):
                continue
            if target.attr not in wanted or target.attr in out:
                continue
            callee = dotted_name(stmt.value.func)
            if callee is None or torch_layer(qualify(callee, imports)) != _LINEAR:
                continue
            if any(isinstance(a, ast.Starred) for a in stmt.value.args) or any(k.arg is None for k in stmt.value.keywords):
                continue
            args = tuple(ast.unparse(a) for a in stmt.value.args)
            kwargs = tuple((str(k.arg), ast.unparse(k.value)) for k in stmt.value.keywords)
            out[target.attr] = (target.attr, _LINEAR, args, kwargs,
                                f"{INHERITED}{node.name} ({path}:{stmt.lineno})")
    for base in node.bases:  # then the bases, the first one's first (the MRO, close enough for bindings)
        dotted = dotted_name(base)
        if dotted is None:
            continue
        same_file = toplevel.get(dotted)
        if isinstance(same_file, ast.ClassDef):
            if depth + 1 < _DEPTH:
                _read_class(reach, same_file, path, imports, toplevel, wanted, out, depth + 1)
            continue
        _read_base(reach, qualify(dotted, imports), path, wanted, out, depth + 1)
