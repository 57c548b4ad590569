"""Names a file takes from `from m import *`: read from the star-imported module's own file (never run).

geffnet's `efficientnet_builder.py` has only `from .conv2d_layers import *`: `nn`, `select_conv2d` and
`Conv2dSame` all come from that module. Python binds every public name of the module (those in its
`__all__` when it has one): here, the module-level imports (`import torch.nn as nn` gives `nn` ->
`torch.nn`) and the classes, functions and assigned names it defines (`select_conv2d` ->
`geffnet.conv2d_layers.select_conv2d`). A name the file binds itself, or imports by name, is its own;
a later star import wins over an earlier one; star imports inside the star-imported module are not
followed. The module's file is a dependency of the analysis (`reads`).

`torch_reexports` reads the same way a name imported by name from a package that itself imports it from
torch: xuance's `from xuance.torch import nn, Module` with `xuance/torch/__init__.py` holding
`import torch.nn as nn` binds `nn` to `torch.nn`, so `nn.Softmax(dim=-1)` is torch's.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Mapping

from adopter.analysis.crossfile.ast_files import ParsedFile
from adopter.analysis.names.symbols import resolve_relative

Locate = Callable[[str, str], str | None]


def star_names(stars: Iterable[tuple[int, str]], path: str, package: str | None, locate: Locate,
               parse: Callable[[str], ParsedFile | None], package_of: Callable[[str], str | None],
               ) -> dict[str, str]:
    """Local name -> qualified name for the star imports `(level, module)` of the file at `path`."""
    out: dict[str, str] = {}
    for level, module in stars:
        absolute = resolve_relative(package, level, module) if level else module
        if absolute.startswith("."):
            continue
        located = locate(absolute, path)
        if located is None:
            continue
        parsed = parse(located)
        if parsed is None or parsed.tree is None:
            continue
        public = _dunder_all(parsed.tree)
        own_package = package_of(located)
        names: dict[str, str] = {}
        for name, target in _module_imports(parsed.tree.body).items():
            if target.startswith("."):
                dots = len(target) - len(target.lstrip("."))
                target = resolve_relative(own_package, dots, target[dots:])
                if target.startswith("."):
                    continue
            names[name] = target
        for name in parsed.toplevel:
            names[name] = f"{absolute}.{name}"
        for name, target in names.items():
            if (name in public) if public is not None else not name.startswith("_"):
                out[name] = target
    return out


def torch_reexports(imports: Mapping[str, str], used: Callable[[str], bool], path: str, locate: Locate,
                    parse: Callable[[str], ParsedFile | None]) -> dict[str, str]:
    """Local name -> torch name for each `from m import n` (`imports`: local name -> `m.n`) whose module
    `m` binds `n` at module level by importing a torch name (`import torch.nn as nn`), `m.n` being no module
    of its own. Only names the file reads an attribute of (`used`: `nn.Softmax`) are looked up."""
    out: dict[str, str] = {}
    for name, target in imports.items():
        module, dot, leaf = target.rpartition(".")
        if not dot or not module or module.startswith(".") or target.split(".")[0] == "torch" or not used(name):
            continue
        located = locate(module, path)
        if located is None or locate(target, path) is not None:
            continue
        parsed = parse(located)
        if parsed is None or leaf in parsed.toplevel:
            continue
        bound = parsed.imports.get(leaf)
        if bound is not None and (bound == "torch" or bound.startswith("torch.")):
            out[name] = bound
    return out


def _module_imports(stmts: list[ast.stmt]) -> dict[str, str]:
    """Local name -> imported name for the imports run at module level (inside top-level `if`/`try`
    too, not in functions or classes); a later import of a name wins. Relative modules keep their dots."""
    out: dict[str, str] = {}
    for stmt in stmts:
        if isinstance(stmt, ast.Import):
            for a in stmt.names:
                out[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(stmt, ast.ImportFrom):
            module = "." * stmt.level + (stmt.module or "")
            sep = "" if module.endswith(".") else "."
            for a in stmt.names:
                if a.name != "*":
                    out[a.asname or a.name] = f"{module}{sep}{a.name}"
        elif isinstance(stmt, ast.If | ast.Try):
            inner = [*stmt.body, *stmt.orelse]
            if isinstance(stmt, ast.Try):
                inner += [s for h in stmt.handlers for s in h.body] + stmt.finalbody
            out.update(_module_imports(inner))
    return out


def _dunder_all(tree: ast.Module) -> frozenset[str] | None:
    """The names of a literal `__all__ = [...]` (None when there is none, or it is not literal)."""
    for stmt in tree.body:
        if (isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in stmt.targets)
                and isinstance(stmt.value, ast.List | ast.Tuple)):
            return frozenset(e.value for e in stmt.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str))
    return None
