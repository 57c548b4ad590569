"""The whole server package's import graph has no cycle, counting every import: module level,
`TYPE_CHECKING` blocks and function bodies (an import inside a function still makes the two modules
depend on each other; it only hides the cycle from Python's import machinery).

A module is a node; `from adopter.a import b` is an edge to `adopter.a.b` when that is a module, else to
`adopter.a` (its `__init__`). Importing a submodule runs its package's `__init__` too, but that implicit
edge is left out: a package that imports its own submodules is not a cycle.

`KNOWN` lists the cycles that were there when this test was written and are not removed yet, each with
what would break it; it may only shrink. Any other cycle fails the test.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

SERVER = Path(__file__).resolve().parents[2] / "server"
PACKAGE = SERVER / "adopter"

# Cycles still to break. Remove an entry when its cycle is gone; never add one.
KNOWN: list[frozenset[str]] = [
    # The flow modules import each other and are wired after construction; issue 21 item 2 gives them an
    # explicit shared interface (analysis/ in sub-packages), which removes this cycle.
    frozenset({"adopter.analysis.flow.calls", "adopter.analysis.flow.control", "adopter.analysis.flow.statements",
               "adopter.analysis.flow.values"}),
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SERVER).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that `path` (module `name`) imports anywhere in its body."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()

    def add(target: str) -> None:
        while target and target not in known:  # `adopter.a.b.function` -> the module that defines it
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "adopter":
                    add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            if module.split(".")[0] != "adopter":
                continue
            for alias in node.names:
                add(f"{module}.{alias.name}" if f"{module}.{alias.name}" in known else module)
    return found


@functools.cache
def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: imports_of(name, path, known) for name, path in found.items()}


def cycles(edges: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[frozenset[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, todo = work[-1]
            if todo:
                w = todo.pop(0)
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, sorted(edges.get(w, ()))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.add(w)
                    if w == v:
                        break
                if len(component) > 1:
                    out.append(frozenset(component))
    return out


def test_no_new_import_cycle_in_the_server_package() -> None:
    found = cycles(graph())
    new = [sorted(c) for c in found if c not in KNOWN]
    assert new == [], f"import cycles (counting TYPE_CHECKING and in-function imports): {new}"


def test_the_known_cycles_are_still_there() -> None:
    """A cycle that is gone must leave `KNOWN` (the list only shrinks)."""
    found = cycles(graph())
    assert [sorted(c) for c in KNOWN if c not in found] == []


def test_the_graph_sees_every_kind_of_import() -> None:
    edges = graph()
    assert "adopter.engine.types" in edges["adopter.session"]  # module level
    assert "adopter.engine.environment" in edges["adopter.session"]  # TYPE_CHECKING
    assert {"adopter.analysis", "adopter.synth.rewrite"} <= edges["adopter.session"]  # in function bodies
    assert "adopter.synth.apply" in edges["adopter.synth.rewrite"]  # `from module import name`
    assert "adopter.synth.strategies.fusions_chain" in edges["adopter.synth.strategies.fusions_bn"]


def test_the_cycle_finder_finds_cycles() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [frozenset("abc")]
    assert cycles({"a": {"b"}, "b": set()}) == []
    assert sorted(map(sorted, cycles({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c", "a"}}))) == [["a", "b"], ["c", "d"]]
