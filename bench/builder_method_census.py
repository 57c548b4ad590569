"""Census of layers built by a method of the class (mech119), by syntax, stdlib `ast` only.

A site is `self.a = self.m(...)` in a class's `__init__` where the most-derived same-file definition of `m`
(the class, then its same-file bases) ends in its one kind of `return Class(...)`: every `return` builds
the same capitalised class, under no decorator but `staticmethod` / `classmethod`, the class imported or
of the file. Containers (`Sequential`, `ModuleList`, ...) are left out: the chains' reading of methods
reads them. Run: `python bench/builder_method_census.py [ROOT]` (default `.cache/devsrc/src`, one folder per
distribution); prints sites and packages, then every site by package.
"""

from __future__ import annotations

import ast
import collections
import os
import sys

CONTAINERS = {"Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"}


def _dotted(n: ast.AST) -> str | None:
    if isinstance(n, ast.Name):
        return n.id
    if isinstance(n, ast.Attribute):
        d = _dotted(n.value)
        return d and d + "." + n.attr
    return None


def _returns(fn: ast.FunctionDef) -> list[ast.Return]:
    out: list[ast.Return] = []
    stack: list[ast.AST] = list(fn.body)
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Return):
            out.append(n)
        elif not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(n))
    return out


def _built(fn: ast.FunctionDef) -> str | None:
    if any(_dotted(d) not in ("staticmethod", "classmethod") for d in fn.decorator_list):
        return None
    if not fn.body or not isinstance(fn.body[-1], ast.Return):
        return None
    classes = set()
    for r in _returns(fn):
        d = _dotted(r.value.func) if isinstance(r.value, ast.Call) else None
        if d is None or not d.rsplit(".", 1)[-1][:1].isupper() or d.split(".")[0] in ("self", "cls"):
            return None
        classes.add(d)
    return classes.pop() if len(classes) == 1 else None


def _sites(path: str, tree: ast.Module) -> list[tuple[int, str, str, str]]:
    imported: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            imported |= {(a.asname or a.name).split(".")[0] for a in n.names}
        if isinstance(n, ast.ImportFrom):
            imported |= {a.asname or a.name for a in n.names}
    classes = {c.name: c for c in tree.body if isinstance(c, ast.ClassDef)}

    def mro(name: str, seen: tuple[str, ...] = ()) -> list[str]:
        c = classes.get(name)
        if c is None or name in seen:
            return []
        out = [name]
        for b in c.bases:
            d = _dotted(b)
            out += [x for x in (mro(d, (*seen, name)) if d else []) if x not in out]
        return out

    out = []
    for cname, c in classes.items():
        init = next((m for m in c.body if isinstance(m, ast.FunctionDef) and m.name == "__init__"), None)
        for n in ast.walk(init) if init is not None else ():
            if not (isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.value, ast.Call)):
                continue
            target, func = _dotted(n.targets[0]), _dotted(n.value.func)
            if not (target and target.startswith("self.") and func and func.startswith("self.") and func.count(".") == 1):
                continue
            method = None
            for k in mro(cname):
                method = next((m for m in classes[k].body if isinstance(m, ast.FunctionDef) and m.name == func[5:]), None)
                if method is not None:
                    break
            built = _built(method) if method is not None else None
            if built is None or built.rsplit(".", 1)[-1] in CONTAINERS:
                continue
            if built in classes or built.split(".")[0] in imported:
                out.append((n.lineno, target, func, built))
    return out


def main() -> None:
    root = sys.argv[1] if len(sys.argv) > 1 else ".cache/devsrc/src"
    hits: dict[str, list[str]] = collections.defaultdict(list)
    for dirpath, _, files in os.walk(root):
        for f in files:
            path = os.path.join(dirpath, f)
            if not f.endswith(".py"):
                continue
            with open(path, encoding="utf-8", errors="replace") as handle:
                src = handle.read()
            if "= self." not in src:
                continue
            try:
                tree = ast.parse(src)
            except (SyntaxError, ValueError, RecursionError):
                continue
            rel = os.path.relpath(path, root)
            for line, target, func, built in _sites(path, tree):
                hits[rel.split(os.sep)[0]].append(f"{rel}:{line} {target} = {func}() -> {built}")
    print("sites", sum(len(v) for v in hits.values()), "packages", len(hits))
    for k in sorted(hits):
        print(k, len(hits[k]))
        for h in hits[k]:
            print("   ", h)


if __name__ == "__main__":
    main()
