"""Where an imported name is defined, read straight from the file when nothing leaves a doubt.

`from .configuration_bert import BertConfig`: when the module is a plain source file that Python's import
system (which jedi follows) certainly finds at the file the resolver located, and that file binds the
name exactly once at module level, with a `class`, a `def` or a plain `NAME = ...`, then that binding is
the definition jedi's `goto` reports (a plain `from .hub import NAME`, alone or under `if TYPE_CHECKING:`,
there also alone in the `else:` of a `try`, is followed the same way), and the one `CrossFileReach._follow`
reads when jedi gives up: the look-up costs one `ast` read of a file the summary reads anyway, instead of
jedi's inference (10 % of `check` over the transformers modeling files). Anything else (a name bound twice
or under a condition, a star import, `from . import NAME`, a module that a stub, an extension module, a
same-named folder or a namespace package could shadow) is left to jedi.
"""

from __future__ import annotations

import ast
import os
import sys
from collections.abc import Callable
from functools import cache

from adopter.analysis.crossfile.ast_files import ParsedFile, statements_in
from adopter.analysis.crossfile.summary import Definition

MAX_HOPS = 6  # re-exports followed (as `CrossFileReach._follow`)
_SHADOWING_SUFFIXES = (".pyi", ".so", ".pyd", ".pyc")  # files beside `x.py` that could be found instead


def sole_definition(tree: ast.Module, name: str, *, has_global: bool = True,
                    ) -> ast.ClassDef | ast.FunctionDef | ast.Assign | ast.ImportFrom | None:
    """The one module-level statement of `tree` binding `name`, when it is a class, a function, a plain
    assignment to the bare name, or a plain `from m import name` (at the top, or alone under
    `if TYPE_CHECKING:`, there directly or in the `else:` of a `try` binding it nowhere else); None when the
    name is bound anywhere else at module level too (in another `if`, a `try`, a loop, a star import) or in
    another way. `has_global=False`: the text holds no
    `global` statement (the bodies of classes and functions need not be walked for one)."""
    found: list[ast.stmt] = []
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            if stmt.name == name or (has_global and _declares_global(stmt, name)):
                found.append(stmt)
        elif _binds(stmt, name):
            found.append(stmt)
        if len(found) > 1:
            return None
    if len(found) != 1:
        return None
    node = found[0]
    if isinstance(node, ast.If) and _type_checking(node.test) and not any(_binds(s, name) for s in node.orelse):
        inner = [s for s in node.body if _binds(s, name)]
        if len(inner) == 1 and isinstance(inner[0], ast.Try):
            inner = _bound_in_else(inner[0], name)
        if len(inner) != 1 or not isinstance(inner[0], ast.ImportFrom):
            return None  # a class or assignment under the test: `_follow` would not find it if jedi gave up
        node = inner[0]
    if isinstance(node, ast.ClassDef | ast.FunctionDef):
        return node
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node
    if isinstance(node, ast.ImportFrom) and _imported_name(node, name) is not None:
        return node
    return None


def _bound_in_else(node: ast.Try, name: str) -> list[ast.stmt]:
    """The statements of a `try`'s `else:` that bind `name`, when neither its body, its handlers nor its
    `finally:` binds it (transformers' `try: ... except OptionalDependencyNotAvailable: pass else: from .utils
    import GenerationMixin` under `if TYPE_CHECKING:`); [] where one of them does. jedi reads every arm of a
    `try` as maybe run (no branch of it is ruled out), so the one binding is the name's only definition, and
    `CrossFileReach._follow` meets the same import (`imports_of` keeps the first a file has)."""
    if any(_binds(s, name) for s in (*node.body, *node.finalbody)) or any(_binds(h, name) for h in node.handlers):
        return []
    return [s for s in node.orelse if _binds(s, name)]


def _type_checking(test: ast.expr) -> bool:
    """`TYPE_CHECKING` or `typing.TYPE_CHECKING` (what jedi reads as an `if` both ways)."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING" and isinstance(test.value, ast.Name)
        and test.value.id == "typing")


def _imported_name(node: ast.ImportFrom, name: str) -> str | None:
    """The name in the other module that `from m import ...` binds to `name` (once, and no star); None for
    `from . import name` (a submodule, or the package's own binding: left to jedi)."""
    if not node.module:
        return None
    bound = [a for a in node.names if a.name == "*" or (a.asname or a.name) == name]
    if len(bound) != 1 or bound[0].name == "*":
        return None
    return bound[0].name


def _declares_global(stmt: ast.stmt, name: str) -> bool:
    """Whether a `global name` anywhere inside `stmt` (a class or function) may bind it at module level."""
    return any(isinstance(node, ast.Global) and name in node.names for node in statements_in(stmt))


def _binds(stmt: ast.stmt | ast.excepthandler, name: str) -> bool:
    """Whether `stmt` may bind `name` in the module's namespace (over-approximated: any store of the name
    anywhere inside it, nested scopes included, counts)."""
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name):
            if node.id == name and not isinstance(node.ctx, ast.Load):
                return True
        elif isinstance(node, ast.alias):
            if node.name == "*" or (node.asname or node.name.split(".")[0]) == name or node.name == name:
                return True
        elif isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            if node.name == name:
                return True
        elif isinstance(node, ast.Global | ast.Nonlocal):
            if name in node.names:
                return True
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar):
            if node.name == name:
                return True
        elif isinstance(node, ast.MatchMapping):
            if node.rest == name:
                return True
    return False


def certain_module(module: str, from_path: str, located: str, root: str) -> bool:
    """Whether importing `module` (absolute, or relative to the file `from_path`) certainly finds the
    file `located`: every package on the way is a regular one (an `__init__.py`), and nothing beside the
    module's file (a same-named folder, a stub, an extension or bytecode module) could be found first.
    An absolute module must lie under `root`, the first entry of jedi's search path (the project);
    the standard library's, the interpreter's built-in ones and those jedi has bundled stubs for are
    never certain."""
    if module.startswith("."):
        level = len(module) - len(module.lstrip("."))
        base = os.path.dirname(from_path)
        for _ in range(level - 1):
            base = os.path.dirname(base)
        parts = [p for p in module.lstrip(".").split(".") if p]
    else:
        parts = module.split(".")
        base = root
        first = parts[0]
        if (not first or first in sys.builtin_module_names or first in sys.stdlib_module_names
                or first in _bundled_stubs()):
            return False
    directory = base
    for part in parts[:-1]:
        directory = os.path.join(directory, part)
        if not os.path.isfile(os.path.join(directory, "__init__.py")):
            return False
    if not parts:
        return located == os.path.join(base, "__init__.py") and not os.path.exists(located + "i")
    last = os.path.join(directory, parts[-1])
    if located == last + ".py":
        return not os.path.isdir(last) and not _shadowed(directory, parts[-1])
    if located == os.path.join(last, "__init__.py"):
        return not os.path.exists(located + "i") and not _shadowed(directory, parts[-1])
    return False


def _shadowed(directory: str, stem: str) -> bool:
    """Whether `directory` holds another file Python or jedi could take for module `stem`."""
    try:
        names = os.listdir(directory)
    except OSError:
        return True
    prefix = stem + "."
    return any(n.startswith(prefix) and n.endswith(_SHADOWING_SUFFIXES) for n in names) or (stem + "-stubs") in names


@cache
def _bundled_stubs() -> frozenset[str]:
    """Top-level module names jedi has bundled typeshed stubs for (found without importing jedi)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("jedi")
    except (ImportError, ValueError):
        return frozenset()
    if spec is None or not spec.submodule_search_locations:
        return frozenset()
    typeshed = os.path.join(next(iter(spec.submodule_search_locations)), "third_party", "typeshed")
    names: set[str] = set()
    for folder in (os.path.join(typeshed, "stdlib"), *_subfolders(os.path.join(typeshed, "stubs"))):
        for entry in _listing(folder):
            names.add(entry.split(".")[0])
    return frozenset(names)


def _subfolders(path: str) -> list[str]:
    return [os.path.join(path, n) for n in _listing(path) if os.path.isdir(os.path.join(path, n))]


def _listing(path: str) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def direct_definition(module: str, name: str, from_path: str, located: str, root: str,
                      locate: Callable[[str, str], str | None], read: Callable[[str], ParsedFile | None],
                      hops: int = 0) -> Definition | None:
    """The definition of `name` imported from `module` (found at the file `located`) in the file
    `from_path`, when both the module and the name's binding leave no doubt (see the module's doc),
    following plain re-exports (`from .hub import PushToHubMixin`) as jedi does; None: ask jedi.
    `locate(module, from_path)`: the resolver's file of a module; `read(path)`: the file read with `ast`."""
    if hops > MAX_HOPS or not located.endswith(".py") or not certain_module(module, from_path, located, root):
        return None
    parsed = read(located)
    node = None
    if parsed is not None and parsed.tree is not None:
        node = sole_definition(parsed.tree, name, has_global=parsed.has_global)
    if node is None:
        return None
    if not isinstance(node, ast.ImportFrom):
        return Definition(located, node.lineno, name)
    inner = _imported_name(node, name)
    target = "." * node.level + (node.module or "")
    found = locate(target, located) if inner is not None else None
    if inner is None or found is None:
        return None
    return direct_definition(target, inner, located, found, root, locate, read, hops + 1)
