"""Census of the user's own layer classes that write a GELU or a LayerNorm out (families 5, 6, 14), dev code only.

Walks the `.py` files of dev distributions unpacked one folder per distribution (`.cache/devsrc/src/<dist>/` by
default, or the dev2 packages `bench/dev2_corpus.py --packages DIR` unpacks), never a held-out one, and

- `scan ROOT OUT`: finds every top-level class whose `forward` `adopter.analysis.crossfile.written_layers`
  reads as `nn.GELU` or `nn.LayerNorm` (the analysis's own reader, Python's `ast`) and every file of the same
  distribution that names the class (its own file: `same`; another one that imports it: `sibling`), writing
  OUT/classes.json and OUT/files.txt (the user files);
- `diff BASE.json BRANCH.json`: compares two `adopter check --format json` runs over those files (base and
  branch) and lists the findings only one of them has, with their distribution.

    PYTHONPATH=server .venv/bin/python bench/written_layers_census.py scan .cache/devsrc/src /tmp/wl
    for t in /tmp/base/server server; do ADOPTER_NATIVE=0 ADOPTER_RESULT_CACHE=0 PYTHONPATH=$t nice -n 5 \\
        .venv/bin/python -m adopter check --target cuda --format json --jobs 1 --quiet --no-cache \\
        $(cat /tmp/wl/files.txt) > /tmp/wl/$(basename $(dirname $t)).json; done
    .venv/bin/python bench/written_layers_census.py diff /tmp/wl/base.json /tmp/wl/mech98.json
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from collections import defaultdict
from pathlib import Path


def scan(root: Path, out: Path) -> None:
    from adopter.analysis.crossfile.ast_files import imports_of, qualify
    from adopter.analysis.crossfile.written_layers import written_layer

    classes: list[dict[str, object]] = []
    files: set[str] = set()
    for dist in sorted(p for p in root.iterdir() if p.is_dir()):
        texts: dict[Path, str] = {}
        for path in sorted(dist.rglob("*.py")):
            try:
                texts[path] = path.read_text(errors="replace")
            except OSError:
                continue
        for path, text in texts.items():
            if "forward" not in text or ("tanh" not in text and "erf" not in text and "mean" not in text):
                continue
            try:
                tree = ast.parse(text)
            except (SyntaxError, ValueError):
                continue
            imports = imports_of(tree)
            for node in _module_classes(tree.body):
                methods = {f.name: f for f in node.body if isinstance(f, ast.FunctionDef)}
                if "forward" not in methods or "__call__" in methods:
                    continue
                found = written_layer(methods["forward"], methods.get("__init__"), lambda n, imports=imports: qualify(n, imports))
                if found is None:
                    continue
                calls = re.compile(rf"(?<!class )\b{re.escape(node.name)}\s*\(")  # built, not defined
                used = sorted(str(p.relative_to(root)) for p, t in texts.items() if calls.search(t))
                classes.append({"dist": dist.name, "file": str(path.relative_to(root)), "line": node.lineno,
                                "class": node.name, "layer": found[0], "kwargs": found[1], "users": used})
                files.update(str(root / u) for u in used)
    out.mkdir(parents=True, exist_ok=True)
    (out / "classes.json").write_text(json.dumps(classes, indent=1))
    (out / "files.txt").write_text("\n".join(sorted(files)) + "\n")
    by_layer: dict[str, set[str]] = defaultdict(set)
    for c in classes:
        by_layer[str(c["layer"])].add(str(c["dist"]))
    for layer, dists in sorted(by_layer.items()):
        n = sum(1 for c in classes if c["layer"] == layer)
        print(f"{layer}: {n} classes in {len(dists)} distributions: {', '.join(sorted(dists))}")
    print(f"{len(files)} user files -> {out / 'files.txt'}")


def _module_classes(body: list[ast.stmt]) -> list[ast.ClassDef]:
    """The classes a module defines at its top level, under `if` / `try` included (`try: from apex import
    LayerNorm` / `except ImportError: class LayerNorm(nn.Module)`), not inside functions or classes."""
    out: list[ast.ClassDef] = []
    for stmt in body:
        if isinstance(stmt, ast.ClassDef):
            out.append(stmt)
        elif isinstance(stmt, ast.If | ast.Try):
            out.extend(_module_classes(stmt.body + stmt.orelse + getattr(stmt, "finalbody", [])))
            for handler in getattr(stmt, "handlers", []):
                out.extend(_module_classes(handler.body))
    return out


def _findings(path: Path) -> set[tuple[str, int, int, str, bool]]:
    data = json.loads(path.read_text())
    rows = data["findings"] if isinstance(data, dict) else data
    return {(f["path"], f["family"], f["range"]["start"]["line"], f["rule"], f.get("fixable", False)) for f in rows}


def diff(base: Path, branch: Path) -> None:
    old, new = _findings(base), _findings(branch)
    for sign, rows in (("-", old - new), ("+", new - old)):
        for p, fam, line, rule, fixable in sorted(rows):
            print(f"{sign} {p}:{line} family {fam} {rule}{' (fixable)' if fixable else ''}")
    print(f"base {len(old)}, branch {len(new)}, only base {len(old - new)}, only branch {len(new - old)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("scan")
    s.add_argument("root", type=Path)
    s.add_argument("out", type=Path)
    d = sub.add_parser("diff")
    d.add_argument("base", type=Path)
    d.add_argument("branch", type=Path)
    args = parser.parse_args()
    if args.cmd == "scan":
        scan(args.root, args.out)
    else:
        diff(args.base, args.branch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
