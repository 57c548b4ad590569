"""Census of Linear-like projection classes and the family 14 / 6 / 9 sites they reach, by syntax (mech73).

Walks the `.py` files that mention `torch` and `Linear` in the readable dev corpora (`gated_norm_census.corpus_files`:
main's transformers 4.35 wheel, the realworld and dev2 archives, fresh1's and fresh2's site-packages; held-out
distributions and infrastructure packages skipped by name, never opened), with stdlib `ast` only:

- wrapper classes: `__init__` binds exactly one attribute to a call named `Linear`, `forward` calls it once and
  calls no other bound attribute, with no `@`/matmul/einsum/conv/attention/softmax/bmm in its text;
- user classes: classes binding an attribute to such a wrapper of the same file, to an imported name containing
  `Linear` (not torch's) or to a `build_*` call naming fc/linear, whose forward holds a candidate site: family 14
  (a product of an activation-named call of such a projection and another value), family 6 (an activation-named
  call of one: `6` when the name says gelu, `6?` otherwise), family 9 (two or more calls of such projections on
  one argument text: deliberately broad, gated MLPs match too).

    .venv/bin/python bench/linear_like_census.py scan /tmp/llc           # rows.json, src/, files.txt, wrappers.txt
    PYTHONPATH=$PWD/server .venv/bin/python bench/linear_like_census.py classes /tmp/llc   # linear_shape verdicts
    ADOPTER_NATIVE=0 ADOPTER_RESULT_CACHE=0 PYTHONPATH=$PWD/server nice -n 10 .venv/bin/python -m adopter check \\
        --target cuda --format json --jobs 1 --quiet --no-cache $(cat /tmp/llc/files.txt) > /tmp/llc/check.json
    .venv/bin/python bench/linear_like_census.py left /tmp/llc/check.json /tmp/llc   # per sub-form and family
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gated_norm_census as corpora

_ACTIVATION = re.compile(r"(silu|gelu|swish|act|activation|nonlin)", re.I)
_NOT_ELEMENTWISE = re.compile(r"@|matmul|einsum|conv|attention|softmax|bmm")


def _self_call(node: ast.AST) -> str | None:
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "self"):
        return node.func.attr
    return None


def _ctor_name(value: ast.expr) -> str | None:
    if isinstance(value, ast.Call):
        f = value.func
        return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
    return None


def _self_assigns(fn: ast.AST) -> dict[str, list[ast.expr]]:
    out: dict[str, list[ast.expr]] = collections.defaultdict(list)
    for n in ast.walk(fn):
        if isinstance(n, ast.Assign):
            for t in n.targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                    out[t.attr].append(n.value)
    return out


def _methods(cls: ast.ClassDef) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    return {m.name: m for m in cls.body if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef)}


def wrapper_kind(cls: ast.ClassDef) -> str | None:
    """"wrapper", or why not ("twice", "other-submodule", "other-product"); None when not a candidate."""
    ms = _methods(cls)
    if "__init__" not in ms or "forward" not in ms:
        return None
    binds = _self_assigns(ms["__init__"])
    linears = [a for a, vs in binds.items() if any(_ctor_name(v) == "Linear" for v in vs)]
    if len(linears) != 1:
        return None
    calls = [c for c in (_self_call(n) for n in ast.walk(ms["forward"])) if c]
    if linears[0] not in calls:
        return None
    if calls.count(linears[0]) > 1:
        return "twice"
    if any(c != linears[0] and c in binds for c in calls):
        return "other-submodule"
    return "other-product" if _NOT_ELEMENTWISE.search(ast.unparse(ms["forward"])) else "wrapper"


def _imported_linears(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.module and "torch" not in n.module:
            names.update(a.asname or a.name for a in n.names if "Linear" in (a.asname or a.name))
    return names


def _families(forward: ast.AST, projections: set[str]) -> set[str]:
    local: dict[str, ast.expr] = {}
    for n in ast.walk(forward):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            local[n.targets[0].id] = n.value

    def projected(e: ast.expr, depth: int = 0) -> bool:
        if depth > 3:
            return False
        if _self_call(e) in projections:
            return True
        if isinstance(e, ast.Name) and e.id in local:
            return projected(local[e.id], depth + 1)
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr in ("chunk", "float", "to"):
            return projected(e.func.value, depth + 1)
        return isinstance(e, ast.Subscript) and projected(e.value, depth + 1)

    def activated(e: ast.expr, depth: int = 0) -> str | None:
        if depth > 3:
            return None
        if isinstance(e, ast.Name) and e.id in local:
            return activated(local[e.id], depth + 1)
        if isinstance(e, ast.Call) and e.args and projected(e.args[0]):
            name = ast.unparse(e.func)
            return name if _ACTIVATION.search(name) else None
        return None

    found: set[str] = set()
    for n in ast.walk(forward):
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult):
            for a, b in ((n.left, n.right), (n.right, n.left)):
                if activated(a) and (projected(b) or isinstance(b, ast.Name)):
                    found.add("14")
        if isinstance(n, ast.Call) and (name := activated(n)):
            found.add("6" if "gelu" in name.lower() else "6?")
    arguments = collections.Counter(ast.unparse(n.args[0]) for n in ast.walk(forward)
                                    if _self_call(n) in projections and isinstance(n, ast.Call) and n.args)
    if arguments and max(arguments.values()) >= 2:
        found.add("9")
    return found


def scan(out: Path) -> None:
    rows: list[dict[str, Any]] = []
    for package, path, data in corpora.corpus_files(corpora.held_out_names()):
        if b"torch" not in data or b"Linear" not in data:
            continue
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError):
            continue
        dest = out / "src" / package.replace(":", "__") / path
        classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
        kinds = {c.name: k for c in classes if (k := wrapper_kind(c)) is not None}
        imported = _imported_linears(tree)
        keep = False
        for c in classes:
            ms = _methods(c)
            if "__init__" not in ms or "forward" not in ms:
                continue
            sub: dict[str, str] = {}
            for attr, values in _self_assigns(ms["__init__"]).items():
                for v in values:
                    name = _ctor_name(v) or ""
                    if kinds.get(name) == "wrapper":
                        sub[attr] = f"samefile:{name}"
                    elif name in imported:
                        sub[attr] = f"imported:{name}"
                    elif name.startswith("build_") and ("fc" in name or "linear" in name.lower()):
                        sub[attr] = f"builder:{name}"
            if sub:
                fams = _families(ms["forward"], set(sub))
                rows.append({"package": package, "path": path, "file": str(dest), "cls": c.name,
                             "kinds": sorted(set(sub.values())), "fams": sorted(fams)})
                keep = keep or bool(fams)
        for name, kind in kinds.items():
            rows.append({"package": package, "path": path, "file": str(dest), "wrapper": name, "kind": kind})
            keep = keep or kind == "wrapper"
        if keep:
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
    (out / "rows.json").write_text(json.dumps(rows, indent=1))
    files = sorted({r["file"] for r in rows if r.get("fams")})
    (out / "files.txt").write_text("\n".join(files) + "\n")
    wrappers = sorted({r["file"] for r in rows if r.get("kind") == "wrapper"})
    (out / "wrappers.txt").write_text("\n".join(wrappers) + "\n")
    print(f"{sum('wrapper' in r for r in rows)} one-Linear classes, "
          f"{sum(r.get('kind') == 'wrapper' for r in rows)} wrapper candidates in "
          f"{len({r['package'] for r in rows if r.get('kind') == 'wrapper'})} packages; "
          f"{sum(bool(r.get('fams')) for r in rows)} user classes with a candidate site in {len(files)} files")


def classes(out: Path) -> None:
    """The analysis's verdict on every wrapper candidate: chain, linear-like or other (needs PYTHONPATH=server)."""
    from adopter.analysis.names.forward_shape import chain_shape
    from adopter.analysis.names.linear_shape import linear_shape
    from adopter.analysis.parse.source import Field, SourceText, new_parser

    verdicts: dict[str, list[list[str]]] = collections.defaultdict(list)
    for r in json.loads((out / "rows.json").read_text()):
        if r.get("kind") != "wrapper":
            continue
        data = Path(r["file"]).read_bytes()
        tree = new_parser().parse(data)
        src = SourceText(data, tree, None)
        verdict = "not found"
        stack = [tree.root_node]
        while stack:
            node = stack.pop()
            name = node.child_by_field_id(Field.NAME) if node.type == "class_definition" else None
            if name is not None and src.text(name) == r["wrapper"]:
                for fn in node.child_by_field_id(Field.BODY).named_children:  # type: ignore[union-attr]
                    fn_name = fn.child_by_field_id(Field.NAME) if fn.type == "function_definition" else None
                    if fn_name is not None and src.text(fn_name) == "forward":
                        verdict = ("chain" if chain_shape(fn, src) is not None
                                   else "linear-like" if linear_shape(fn, src) else "other")
                break
            stack.extend(node.named_children)
        verdicts[verdict].append([r["package"], r["path"], r["wrapper"]])
    for verdict, found in sorted(verdicts.items()):
        print(f"{verdict}: {len(found)} classes in {len({p.split(':')[1] for p, _, _ in found})} packages")
    for package, path, name in sorted(verdicts["linear-like"]):
        print(f"  {package} {path} {name}")
    (out / "classes.json").write_text(json.dumps(verdicts, indent=1))


def left(check: Path, out: Path) -> None:
    """Per sub-form and family: candidates, found (a finding of the family in the class), packages left."""
    found: dict[tuple[str, str], set[int]] = collections.defaultdict(set)
    for f in json.loads(check.read_text()):
        found[(f["path"], f["scope"])].add(f["family"])
    table: dict[tuple[str, str], list[Any]] = collections.defaultdict(lambda: [0, 0, set()])
    for r in json.loads((out / "rows.json").read_text()):
        if not r.get("fams"):
            continue
        kind = sorted(k.split(":")[0] for k in r["kinds"])[0]
        for fam in r["fams"]:
            row = table[(kind, fam)]
            row[0] += 1
            if int(fam.rstrip("?")) in found[(r["file"], r["cls"])]:
                row[1] += 1
            else:
                row[2].add(r["package"].split(":")[1])
    print("sub-form family candidates found packages-left")
    for (kind, fam), (n, hit, packages) in sorted(table.items()):
        print(f"{kind:10} {fam:3} {n:5} {hit:5} {len(packages):4}  {', '.join(sorted(packages))}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("scan", "classes", "left"))
    parser.add_argument("paths", nargs="+", type=Path, help="scan/classes: OUT; left: CHECK_JSON OUT")
    args = parser.parse_args()
    if args.command == "scan":
        args.paths[0].mkdir(parents=True, exist_ok=True)
        scan(args.paths[0])
    elif args.command == "classes":
        classes(args.paths[0])
    else:
        left(args.paths[0], args.paths[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
