"""Census net for family 9 (mech109): methods with three attribute calls on one input named like q, k, v.

Reads each file with Python's `ast` (never imports it). A row is a method of a class with three calls
`self.<a>(x, ...)` or `self.<a>.forward(x, ...)` on the same first-argument text, whose attribute names read as
query, key and value; each attribute is classed by how the class's `__init__` (or a same-file base's) binds it:
the callee's dotted text, `<inherited>` when no class of the file binds it. Rows print as tab-separated
`path, class, method, line, call form, q attr, its callee, k attr, its callee, v attr, its callee`.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

_Q = re.compile(r"(^|_)(q|query|queries|to_q|q_proj|wq|w_q|linear_q|q_linear|proj_q)(_|$)", re.I)
_K = re.compile(r"(^|_)(k|key|keys|to_k|k_proj|wk|w_k|linear_k|k_linear|proj_k)(_|$)", re.I)
_V = re.compile(r"(^|_)(v|value|values|to_v|v_proj|wv|w_v|linear_v|v_linear|proj_v)(_|$)", re.I)


def _calls(method: ast.FunctionDef) -> list[tuple[str, str, str, int]]:
    """(attribute, first-argument text, call form, line) of every `self.a(x)` / `self.a.forward(x)`."""
    out = []
    for n in ast.walk(method):
        if not isinstance(n, ast.Call) or not n.args:
            continue
        f = n.func
        form = "call"
        if isinstance(f, ast.Attribute) and f.attr == "forward" and isinstance(f.value, ast.Attribute):
            f, form = f.value, ".forward"
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self":
            out.append((f.attr, ast.unparse(n.args[0]), form, n.lineno))
    return out


def _bindings(cls: ast.ClassDef, classes: dict[str, ast.ClassDef]) -> dict[str, str]:
    found: dict[str, str] = {}
    todo, seen = [cls], set()
    while todo:
        c = todo.pop(0)
        if c.name in seen:
            continue
        seen.add(c.name)
        for f in c.body:
            if isinstance(f, ast.FunctionDef) and f.name == "__init__":
                for n in ast.walk(f):
                    if isinstance(n, ast.Assign):
                        for t in n.targets:
                            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                                v = n.value
                                text = ast.unparse(v.func) if isinstance(v, ast.Call) else type(v).__name__
                                found.setdefault(t.attr, text)
        for b in c.bases:
            if isinstance(b, ast.Name) and b.id in classes:
                todo.append(classes[b.id])
    return found


def rows(path: Path) -> list[list[str]]:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (SyntaxError, ValueError, RecursionError):
        return []
    classes = {c.name: c for c in tree.body if isinstance(c, ast.ClassDef)}
    out = []
    for cls in classes.values():
        binds = None
        for m in cls.body:
            if not isinstance(m, ast.FunctionDef) or m.name == "__init__":
                continue
            by_arg: dict[str, dict[str, tuple[str, str, int]]] = {}
            for attr, arg, form, line in _calls(m):
                by_arg.setdefault(arg, {}).setdefault(attr, (attr, form, line))
            for attrs in by_arg.values():
                pick = []
                for rx in (_Q, _K, _V):
                    hit = [a for a in attrs if rx.search(a)]
                    pick.append(hit[0] if hit else None)
                if None in pick or len(set(pick)) != 3:
                    continue
                binds = binds if binds is not None else _bindings(cls, classes)
                line = min(attrs[a][2] for a in pick if a)
                form = ",".join(sorted({attrs[a][1] for a in pick if a}))
                row = [str(path), cls.name, m.name, str(line), form]
                for a in pick:
                    row += [a or "", binds.get(a or "", "<inherited>")]
                out.append(row)
    return out


def main(argv: list[str]) -> int:
    for root in argv:
        for p in sorted(Path(root).rglob("*.py")):
            for row in rows(p):
                print("\t".join(row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
