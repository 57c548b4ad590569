"""Census of gated MLPs by how their gate and up projections are built (mech102): every method with a product
`act(a) * b` (either order, `act` a SiLU/GELU-like call by name, as `bench/gated_rope_census.py` reads it) where
`a` and `b` come, through the method's own names, from calls `self.p(x)` and `self.q(x)` of two attributes on the
same argument; each attribute's `__init__` binding (in the class or a base of the file) is classed by its callee:

- `linear`: `nn.Linear` / `torch.nn.Linear` (or a name imported from `torch.nn`);
- `conv`: an `nn.Conv*` layer (not family 14: a GLU over channels);
- `same-file`: a class of the file; `imported`: a name imported from elsewhere (the package, another library);
- `partial`: a name the `__init__` binds to `functools.partial(C, ...)` (the class `C` is printed too);
- `other`: anything else (a factory call, `getattr`, a conditional, several bindings).

Run: `.venv/bin/python bench/gated_projection_census.py ROOT... > OUT.json` (dev sources only: `.cache/devsrc/src`,
fresh6's site-packages; never a held-out set), then `adopter check --format json --select 14` on the files listed
and compare each method's line range with the findings. Prints JSON rows
`[path, class, method, first line, last line, line of the product, gate attr, gate class, up attr, up class]`.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gated_rope_census import _ACT, _callee, _is_act  # one reading of an activation call for both censuses


def _self_calls(e: ast.AST, names: dict[str, list[ast.expr]], self_name: str, depth: int = 0) -> set[tuple[str, str]]:
    """(attribute, argument text) of every `self.attr(arg)` `e` reads, through the method's names."""
    out: set[tuple[str, str]] = set()
    if depth > 6:
        return out
    for n in ast.walk(e):
        if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
                and n.func.value.id == self_name and n.args):
            out.add((n.func.attr, ast.unparse(n.args[0])))
        elif isinstance(n, ast.Name) and n.id in names:
            for v in names[n.id]:
                out |= _self_calls(v, {k: vs for k, vs in names.items() if k != n.id}, self_name, depth + 1)
    return out


def _assigned(fn: ast.FunctionDef) -> dict[str, list[ast.expr]]:
    out: dict[str, list[ast.expr]] = {}
    for n in ast.walk(fn):
        if isinstance(n, ast.Assign):
            for t in n.targets:
                if isinstance(t, ast.Name):
                    out.setdefault(t.id, []).append(n.value)
                elif isinstance(t, ast.Tuple) and isinstance(n.value, ast.Tuple) and len(t.elts) == len(n.value.elts):
                    for a, b in zip(t.elts, n.value.elts, strict=True):
                        if isinstance(a, ast.Name):
                            out.setdefault(a.id, []).append(b)
    return out


def _bindings(cls: ast.ClassDef, classes: dict[str, ast.ClassDef]) -> dict[str, list[ast.expr]]:
    """`self.attr = value` of the class's and its same-file bases' `__init__`s, and the `__init__` locals."""
    out: dict[str, list[ast.expr]] = {}
    todo, seen = [cls], set()
    while todo:
        c = todo.pop(0)
        if c.name in seen:
            continue
        seen.add(c.name)
        for f in c.body:
            if isinstance(f, ast.FunctionDef) and f.name == "__init__":
                for n in ast.walk(f):
                    if isinstance(n, ast.Assign) and len(n.targets) == 1:
                        t = n.targets[0]
                        key = (t.attr if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                               and t.value.id == "self" else f"local:{t.id}" if isinstance(t, ast.Name) else None)
                        if key is not None and key not in out:
                            out.setdefault(key, []).append(n.value)
        todo.extend(classes[b.id] for b in c.bases if isinstance(b, ast.Name) and b.id in classes)
    return out


def _class_of(values: list[ast.expr] | None, binds: dict[str, list[ast.expr]], classes: dict[str, ast.ClassDef],
              imports: dict[str, str]) -> str:
    if not values or len(values) != 1:
        return "other:unbound" if not values else "other:several"
    v = values[0]
    if not isinstance(v, ast.Call):
        return f"other:{ast.unparse(v)[:60]}"
    name = ast.unparse(v.func)
    head = name.split(".")[0]
    if name.rsplit(".", 1)[-1].startswith("Conv"):
        return f"conv:{name}"
    if name in ("nn.Linear", "torch.nn.Linear") or imports.get(name, "") == "torch.nn.Linear":
        return "linear"
    if name in classes:
        return f"same-file:{name}"
    local = binds.get(f"local:{name}")
    if local and isinstance(local[0], ast.Call) and _callee(local[0].func) == "partial" and local[0].args:
        return f"partial:{ast.unparse(local[0].args[0])}"
    if head in imports:
        return f"imported:{imports[head]}{name[len(head):]}"
    return f"other:{name}"


def scan(path: Path) -> list[list[object]]:
    try:
        tree = ast.parse(path.read_text(errors="replace"))
    except (SyntaxError, ValueError):
        return []
    imports: dict[str, str] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom):
            for a in n.names:
                imports[a.asname or a.name] = f"{'.' * n.level}{n.module or ''}.{a.name}"
        elif isinstance(n, ast.Import):
            for a in n.names:
                imports[a.asname or a.name.split(".")[0]] = a.name
    classes = {c.name: c for c in tree.body if isinstance(c, ast.ClassDef)}
    rows: list[list[object]] = []
    for cls in classes.values():
        binds = _bindings(cls, classes)
        for fn in cls.body:
            if not isinstance(fn, ast.FunctionDef) or not fn.args.args or fn.name == "__init__":
                continue
            self_name = fn.args.args[0].arg
            names = _assigned(fn)
            for n in ast.walk(fn):
                if not (isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult)):
                    continue
                for act, other in ((n.left, n.right), (n.right, n.left)):
                    if not _is_act(act):
                        continue
                    gates = _self_calls(act, names, self_name)
                    ups = _self_calls(other, names, self_name)
                    pairs = [(g, u) for g in gates for u in ups if g[1] == u[1] and g[0] != u[0]
                             and not _is_act_attr(g[0]) and not _is_act_attr(u[0])]
                    if pairs:
                        (g, _), (u, _) = pairs[0]
                        rows.append([str(path), cls.name, fn.name, fn.lineno, fn.end_lineno, n.lineno,
                                     g, _class_of(binds.get(g), binds, classes, imports),
                                     u, _class_of(binds.get(u), binds, classes, imports)])
                        break
    return rows


def _is_act_attr(attr: str) -> bool:
    return bool(_ACT.search(attr)) and not attr.startswith("gate")


def main(roots: list[str]) -> None:
    rows: list[list[object]] = []
    for root in roots:
        for path in sorted(Path(root).rglob("*.py")):
            rows.extend(scan(path))
    json.dump(rows, sys.stdout, indent=None)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
