"""Census of layers run by a loop over a container in forward (mech85), by syntax, stdlib `ast` only.

A candidate is a loop of `forward` (or of a method `forward` calls as `self.m(...)`) that applies an item of
a `self.` attribute bound in `__init__` to a value it carries: `for m in self.X: x = m(x, ...)` (also over
`enumerate`, `zip`, `reversed`, a slice, `.values()` / `.items()` / `.children()`), the index form
`for i in range(...): x = self.X[i](x)`, and `functools.reduce(..., self.X, x)`. Each is classified by
its body (`pure`: only `x = m(x)`; `extra-args`: the one statement passes more arguments; `more-stmts`;
`control`: an `if` / `break` / `continue` / `return` in the body; `residual`: only `x = x + m(x)`-like) and
by how `__init__` builds the container (literal, `append`/`extend`/`+=` in order, comprehension, factory).
Where the order of the items is read (a literal list, one pass of the appends), consecutive constructors
that would form a family pair are listed (Linear→GELU, Linear→another activation, ConvNd→BatchNorm,
Linear→BatchNorm1d); and items built by a class that subclasses `nn.Sequential` in the same package (or
torchvision's `Conv*NormActivation`) with a conv and a norm (or a Linear and an activation) in its source
are listed as item chains, imported or defined in the file.

Never a held-out distribution (`bench/heldout_corpus.py` MANIFEST, skipped by name).

    .venv/bin/python bench/container_loop_census.py OUT.json ROOT [ROOT ...]

each ROOT a folder of package folders (`.cache/devsrc/src`, an extracted realworld / dev2 set) or one
package folder given as `NAME=PATH` (`transformers=/tmp/t435`). Then run `adopter check --format json`
over the files of the candidates with a pair or an item chain and subtract (docs/notes/mech85.md).
"""

from __future__ import annotations

import ast
import collections
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.heldout_corpus import MANIFEST

_ACTS = {"ReLU", "SiLU", "Tanh", "Sigmoid", "LeakyReLU", "Mish", "ELU", "ReLU6", "Hardswish", "SELU", "PReLU",
         "ACT2FN", "get_activation", "get_act_layer"}
_GELUS = {"GELU", "GELUActivation", "NewGELUActivation", "QuickGELU"}
_CONV = re.compile(r"Conv[123]d$")


def family_pair(a: str | None, b: str | None) -> str | None:
    """The family two consecutive constructors would form, by their names."""
    if a == "Linear" and b in _GELUS:
        return "f6"
    if a == "Linear" and b in _ACTS:
        return "f6-act?"
    if a is not None and _CONV.search(a) and b is not None and b.startswith("BatchNorm"):
        return "f7"
    if a == "Linear" and b == "BatchNorm1d":
        return "f8"
    return None


def _callee(node: ast.expr | None, local: dict[str, str | None]) -> str | None:
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        return node.value.id  # ACT2FN[...]
    if isinstance(node, ast.Name):
        return local.get(node.id)
    if not isinstance(node, ast.Call):
        return None
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None


def _statements(stmts: list[ast.stmt]) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for s in stmts:
        out.append(s)
        for field in ("body", "orelse", "finalbody"):
            out.extend(_statements(getattr(s, field, []) or []))
    return out


def _is_self_attr(node: ast.expr, name: str | None = None) -> bool:
    return (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"
            and (name is None or node.attr == name))


def _added(stmts: list[ast.stmt], holder: ast.expr | str, before: int, local: dict[str, str | None]) -> list:
    """The constructors added to a list (a local name or `self.<attr>`) in order, one pass of each loop;
    None where an addition is not one known constructor (an `if` around it, `insert`, an unknown list)."""
    out: list[str | None] = []

    def same(target: ast.expr) -> bool:
        if isinstance(holder, str):
            return isinstance(target, ast.Name) and target.id == holder
        return _is_self_attr(target, holder.attr) if isinstance(holder, ast.Attribute) else False

    def visit(ss: list[ast.stmt]) -> None:
        for s in ss:
            if s.lineno >= before:
                return
            if isinstance(s, ast.Assign) and any(same(t) for t in s.targets):
                out.clear()
                if isinstance(s.value, ast.List):
                    out.extend(_callee(e, local) for e in s.value.elts)
            elif isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and isinstance(s.value.func, ast.Attribute) \
                    and same(s.value.func.value):
                args, method = s.value.args, s.value.func.attr
                if method == "append" and args:
                    out.append(_callee(args[0], local))
                elif method == "extend" and args and isinstance(args[0], ast.List | ast.Tuple):
                    out.extend(_callee(e, local) for e in args[0].elts)
                else:
                    out.append(None)
            elif isinstance(s, ast.AugAssign) and same(s.target) and isinstance(s.value, ast.List):
                out.extend(_callee(e, local) for e in s.value.elts)
            elif isinstance(s, ast.For | ast.While):
                visit(s.body)
            elif isinstance(s, ast.If):
                n = len(out)
                visit(s.body)
                if len(out) != n:
                    out.append(None)

    visit(stmts)
    return out


def container(value: ast.expr, attr: str, init: ast.FunctionDef, line: int,
              local: dict[str, str | None]) -> tuple[str, list[str | None] | None]:
    """How `__init__` builds the container and, where evident, its items' constructors in order."""
    name = _callee(value, local) if isinstance(value, ast.Call) else None
    if isinstance(value, ast.Call) and name in ("ModuleList", "Sequential", "ModuleDict"):
        if not value.args:
            return "append", _added(init.body, ast.Attribute(ast.Name("self"), attr), 10**9, local)
        first = value.args[0].value if isinstance(value.args[0], ast.Starred) else value.args[0]
        if name == "Sequential" and not any(isinstance(a, ast.Starred) for a in value.args) and len(value.args) > 1:
            return "literal", [_callee(a, local) for a in value.args]
        if isinstance(first, ast.Dict):
            return "literal", [_callee(v, local) for v in first.values]
        if isinstance(first, ast.List | ast.Tuple):
            return "literal", [_callee(e, local) for e in first.elts]
        if isinstance(first, ast.ListComp | ast.GeneratorExp):
            return "comprehension", None
        if isinstance(first, ast.Name | ast.Attribute):
            return "append", _added(init.body, first.id if isinstance(first, ast.Name) else first, line, local)
        return "factory", None
    if isinstance(value, ast.List | ast.Tuple):
        return "literal", [_callee(e, local) for e in value.elts]
    if isinstance(value, ast.ListComp):
        return "comprehension", None
    if isinstance(value, ast.Call):
        return "factory", None
    return "other", None


def _walked(it: ast.expr) -> str | None:
    """The `self.` attribute a `for` walks."""
    if _is_self_attr(it):
        return it.attr  # type: ignore[attr-defined]
    if isinstance(it, ast.Subscript) and _is_self_attr(it.value):
        return it.value.attr  # type: ignore[attr-defined]
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id in ("enumerate", "reversed", "zip"):
        for a in it.args:
            if (found := _walked(a)) is not None:
                return found
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and _is_self_attr(it.func.value) \
            and it.func.attr in ("values", "items", "children"):
        return it.func.value.attr  # type: ignore[attr-defined]
    return None


def _names(target: ast.expr) -> set[str]:
    if isinstance(target, ast.Name):
        return {target.id}
    return {n for e in target.elts for n in _names(e)} if isinstance(target, ast.Tuple) else set()


def body_form(loop: ast.For, items: set[str]) -> str | None:
    """How the loop body applies the item (see the module doc); None when it does not call one."""
    applies, residual = [], False
    for node in (n for s in loop.body for n in ast.walk(s)):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            carried, value = node.targets[0].id, node.value
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in items \
                    and value.args and isinstance(value.args[0], ast.Name) and value.args[0].id == carried:
                applies.append(node)
            elif isinstance(value, ast.BinOp) and any(isinstance(x, ast.Call) and isinstance(x.func, ast.Name)
                                                      and x.func.id in items for x in (value.left, value.right)):
                residual = True
        elif isinstance(node, ast.AugAssign) and isinstance(node.value, ast.Call) \
                and isinstance(node.value.func, ast.Name) and node.value.func.id in items:
            residual = True
    if not applies:
        return "residual" if residual else None
    one = applies[0]
    if len(loop.body) == 1 and loop.body[0] is one and not loop.orelse:
        assert isinstance(one.value, ast.Call)
        return "pure" if len(one.value.args) == 1 and not one.value.keywords else "extra-args"
    flow = (ast.Break, ast.Continue, ast.If, ast.Return)
    return "control" if any(isinstance(x, flow) for s in loop.body for x in ast.walk(s)) else "more-stmts"


def _index_loop(loop: ast.For) -> tuple[str, str] | None:
    """`for i in ...: x = self.X[i](x)`: the attribute and the body form."""
    if not isinstance(loop.target, ast.Name):
        return None
    for s in loop.body:
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) \
                and isinstance(s.value, ast.Call) and isinstance(s.value.func, ast.Subscript) \
                and _is_self_attr(s.value.func.value) and isinstance(s.value.func.slice, ast.Name) \
                and s.value.func.slice.id == loop.target.id and s.value.args \
                and isinstance(s.value.args[0], ast.Name) and s.value.args[0].id == s.targets[0].id:
            return s.value.func.value.attr, "index-pure" if len(loop.body) == 1 else "index-more"  # type: ignore
    return None


def sequential_classes(package: Path) -> dict[str, bool]:
    """Classes of the package deriving from `...Sequential` whose source holds a conv and a norm (or a
    Linear and an activation): name -> True."""
    out: dict[str, bool] = {"Conv2dNormActivation": True, "Conv3dNormActivation": True}
    for f in package.rglob("*.py"):
        try:
            tree = ast.parse(f.read_text(encoding="utf-8", errors="replace"))
        except (SyntaxError, ValueError):
            continue
        for c in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            if any(ast.unparse(b).endswith("Sequential") for b in c.bases):
                text = ast.unparse(c)
                if (re.search(r"Conv[123]d", text) and re.search(r"BatchNorm|norm_layer", text)) or (
                        "Linear" in text and re.search(r"GELU|act", text)):
                    out[c.name] = True
    return out


def scan_file(path: Path, package: str, chains: dict[str, bool], rows: list[dict[str, object]]) -> None:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (SyntaxError, ValueError):
        return
    defined = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        methods = {m.name: m for m in cls.body if isinstance(m, ast.FunctionDef)}
        init, forward = methods.get("__init__"), methods.get("forward")
        if init is None or forward is None:
            continue
        run = {"forward"} | {n.func.attr for n in ast.walk(forward) if isinstance(n, ast.Call)
                             and isinstance(n.func, ast.Attribute) and _is_self_attr(n.func)
                             and n.func.attr in methods}
        bound: dict[str, list[ast.Assign]] = collections.defaultdict(list)
        local: dict[str, str | None] = {}
        for s in _statements(init.body):
            if isinstance(s, ast.Assign):
                for t in s.targets:
                    if _is_self_attr(t):
                        bound[t.attr].append(s)  # type: ignore[attr-defined]
                    elif isinstance(t, ast.Name) and isinstance(s.value, ast.Call):
                        local[t.id] = _callee(s.value, {})
        for method in sorted(run):
            for node in ast.walk(methods[method]):
                found: tuple[str, str | None] | None = None
                if isinstance(node, ast.For):
                    attr = _walked(node.iter)
                    found = (attr, body_form(node, _names(node.target))) if attr is not None else _index_loop(node)
                elif isinstance(node, ast.Call) and len(node.args) >= 2 and _is_self_attr(node.args[1]) and (
                        getattr(node.func, "id", None) == "reduce" or getattr(node.func, "attr", None) == "reduce"):
                    found = (node.args[1].attr, "reduce")  # type: ignore[attr-defined]
                if found is None or found[1] is None or found[0] not in bound:
                    continue
                attr, form = found
                last = bound[attr][-1]
                kind, items = container(last.value, attr, init, last.lineno, local)
                pairs = [p for a, b in zip(items or [], (items or [])[1:]) if (p := family_pair(a, b))]
                built = {_callee(n, {}) for n in ast.walk(init) if isinstance(n, ast.Call)} & set(items or [])
                if kind == "comprehension":
                    built |= {_callee(n.elt, {}) for n in ast.walk(init)
                              if isinstance(n, ast.ListComp | ast.GeneratorExp)}
                item_chains = sorted(f"{c} ({'same file' if c in defined else 'imported'})"
                                     for c in built if c in chains)
                rows.append({"package": package, "file": str(path), "class": cls.name, "line": node.lineno,
                             "attr": attr, "form": form, "container": kind, "items": items,
                             "pairs": pairs, "item_chains": item_chains, "rebound": len(bound[attr]) > 1})


def main(argv: list[str]) -> int:
    out, roots = Path(argv[0]), argv[1:]
    held = {str(m[0] if isinstance(m, tuple | list) else m).lower().replace("_", "-") for m in MANIFEST}
    rows: list[dict[str, object]] = []
    for root in roots:
        name, _, where = root.rpartition("=")
        packages = [(name, Path(where))] if name else [(p.name, p) for p in sorted(Path(where).iterdir())
                                                        if p.is_dir()]
        for package, folder in packages:
            if package.lower().replace("_", "-") in held:
                continue
            chains = sequential_classes(folder)
            for f in sorted(folder.rglob("*.py")):
                scan_file(f, package, chains, rows)
    out.write_text(json.dumps(rows, indent=1))
    by_form = collections.defaultdict(set)
    for r in rows:
        by_form[r["form"]].add(r["package"])
    print(f"{len(rows)} loops in {len({r['package'] for r in rows})} packages")
    for form, pkgs in sorted(by_form.items()):
        print(f"  {form:12} {sum(r['form'] == form for r in rows):5} loops {len(pkgs):4} packages")
    for r in rows:
        if r["pairs"] or r["item_chains"]:
            print(r["form"], r["package"], f"{r['file']}:{r['line']}", r["container"], r["pairs"], r["item_chains"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
