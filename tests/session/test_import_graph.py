"""The whole server package's import graph has no cycle, counting every import: module level,
`TYPE_CHECKING` blocks and function bodies (an import inside a function still makes the two modules
depend on each other; it only hides the cycle from Python's import machinery).

A module is a node; `from adopter.a import b` is an edge to `adopter.a.b` when that is a module, else to
`adopter.a` (its `__init__`). Importing a submodule runs its package's `__init__` too, but that implicit
edge is left out: a package that imports its own submodules is not a cycle.

`KNOWN` lists the cycles that were there when this test was written and are not removed yet, each with
what would break it; it may only shrink (it is empty now). Any other cycle fails the test.

No import goes up a layer either: `LAYERS` orders the package's parts, lowest first, from what the code
does (issue 21's must-hold); a module may import its own layer and those below, never one above. Inside
the analysis core, `ANALYSIS_STAGES` orders its sub-packages the same way.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

SERVER = Path(__file__).resolve().parents[2] / "server"
PACKAGE = SERVER / "adopter"

# Cycles still to break. Remove an entry when its cycle is gone; never add one.
KNOWN: list[frozenset[str]] = []

# The package's layers, lowest first. A module of one layer imports modules of its own layer and of the
# layers below only. `adopter` is the package's own `__init__` (the version, the native loader).
LAYERS: tuple[tuple[str, ...], ...] = (
    # what everything may use: the version, the native loader, data files, the corpus reader, executors
    ("adopter", "adopter._native", "adopter.resources", "adopter.corpus", "adopter.executors",
     "adopter.construction"),
    ("adopter.dsl", "adopter.positions"),  # the rule language and its types; positions in a text
    ("adopter.analysis",),  # the analysis core: source text -> ModuleFile (never pygls or torch)
    ("adopter.engine", "adopter.parsed"),  # rule matching; one shared parse of a text
    ("adopter.synth",),  # rewrites: a leaf that is handed what it verifies with
    ("adopter.session",),  # the one owner of analysis -> matching -> fix decisions
    ("adopter.verify", "adopter.wham"),  # features beside the pipeline: verification runs, accelerator search
    ("adopter.cli", "adopter.commands", "adopter.lsp", "adopter.__main__"),  # the front ends
)

# The analysis core's sub-packages (its stages), lowest first, by the same rule.
ANALYSIS_STAGES: tuple[tuple[str, ...], ...] = (
    ("canonical", "parse"),  # the table of spellings and the canonical pass; the parser and salvage
    ("names",),  # one file's symbol table, signatures, assignment targets
    ("crossfile",),  # reading other files: base classes, imported layers, importers
    ("scope",),  # nn.Module classes and `__init__` bindings
    ("flow",),  # the data and control flow of a forward
    ("chains", "idioms"),  # Sequentials built outside a forward; layer subclasses, loss methods, ...
    ("analyser",),  # one file's analysis, driving every stage
    ("incremental", ""),  # an open document's analysis; the package's face (`analyse`)
)


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


def layer_of(module: str, layers: tuple[tuple[str, ...], ...], prefix: str = "") -> int | None:
    """The index in `layers` of the longest entry that is `module` or a package holding it."""
    best: tuple[int, int] | None = None
    for rank, names in enumerate(layers):
        for entry in names:
            full = f"{prefix}{entry}" if entry else prefix.rstrip(".")
            if (module == full or module.startswith(full + ".")) and (best is None or len(full) > best[1]):
                best = (rank, len(full))
    return None if best is None else best[0]


def upward_imports(edges: dict[str, set[str]], layers: tuple[tuple[str, ...], ...],
                   prefix: str = "") -> list[str]:
    """Every import from a module to one of a higher layer, as `a -> b`."""
    out = []
    for a in sorted(edges):
        la = layer_of(a, layers, prefix)
        if la is None:
            continue
        for b in sorted(edges[a]):
            lb = layer_of(b, layers, prefix)
            if lb is not None and lb > la:
                out.append(f"{a} -> {b}")
    return out


def test_every_module_has_a_layer() -> None:
    assert [m for m in graph() if layer_of(m, LAYERS) is None] == []
    analysis = [m for m in graph() if m.startswith("adopter.analysis")]
    assert [m for m in analysis if layer_of(m, ANALYSIS_STAGES, "adopter.analysis.") is None] == []


def test_no_import_goes_up_a_layer() -> None:
    assert upward_imports(graph(), LAYERS) == []


def test_no_import_goes_up_a_stage_of_the_analysis() -> None:
    edges = {a: {b for b in bs if b.startswith("adopter.analysis")}
             for a, bs in graph().items() if a.startswith("adopter.analysis")}
    assert upward_imports(edges, ANALYSIS_STAGES, "adopter.analysis.") == []


def test_the_layer_check_finds_upward_imports() -> None:
    layers = (("low",), ("mid", "mid2"), ("high",))
    edges = {"low.a": {"mid.b"}, "mid.b": {"low.a", "mid2"}, "high": {"mid.b"}, "mid2": {"high.x"}}
    assert upward_imports(edges, layers) == ["low.a -> mid.b", "mid2 -> high.x"]
    assert layer_of("mid2.sub", layers) == 1 and layer_of("elsewhere", layers) is None


def test_the_analysis_core_never_imports_pygls_or_torch() -> None:
    """Anywhere in its modules, function bodies included (`tests/dsl/test_pure_layers.py` checks only
    what importing the packages loads)."""
    heavy = {"pygls", "lsprotocol", "torch"}
    found = []
    for name, path in modules().items():
        if not name.startswith(("adopter.analysis", "adopter.dsl", "adopter.engine", "adopter.positions")):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = ([a.name for a in node.names] if isinstance(node, ast.Import)
                       else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            found += [f"{name}: {t}" for t in targets if t.split(".")[0] in heavy]
    assert found == []


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
