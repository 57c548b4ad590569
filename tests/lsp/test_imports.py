"""The server package's import graph: no cycle inside `adopter.lsp` (counting every import: module
level, `TYPE_CHECKING` blocks and function bodies), and features (modules with a `register`) that
import neither each other nor are imported by the server core."""

from __future__ import annotations

import ast
from pathlib import Path

LSP = Path(__file__).resolve().parents[2] / "server" / "adopter" / "lsp"


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The `adopter.lsp` modules `path` imports anywhere in its body."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module == "adopter.lsp":
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("adopter.lsp."):
            found.add(node.module.split(".")[2])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[2] for a in node.names if a.name.startswith("adopter.lsp."))
    return (found & modules) - {path.stem}


def graph() -> dict[str, set[str]]:
    modules = {p.stem for p in LSP.glob("*.py")}
    return {p.stem: imports_of(p, modules) for p in LSP.glob("*.py")}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def features() -> set[str]:
    return {p.stem for p in LSP.glob("*.py")
            if any(isinstance(n, ast.FunctionDef) and n.name == "register"
                   for n in ast.parse(p.read_text(encoding="utf-8")).body)}


def test_no_import_cycle_inside_lsp() -> None:
    assert cycles(graph()) == []


def test_features_do_not_import_each_other_and_the_core_imports_none() -> None:
    edges, feats = graph(), features()
    assert {"diagnostics", "code_actions", "hover", "configuration"} <= feats
    assert {(f, g) for f in feats for g in edges[f] & feats} == set()
    registrar = {m for m in edges if edges[m] >= feats}  # the one module that registers them all
    assert registrar == {"app"}
    core = {m for m in edges if m not in feats | registrar}
    assert {(m, g) for m in core for g in edges[m] & feats} == set()


def test_the_cycle_finder_finds_cycles() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
