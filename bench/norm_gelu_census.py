"""Recall census of written-out norms and GELU formulas (families 11, 12, 13) over the dev sources, by syntax.

Walks the `.py` files of the dev distributions unpacked under `.cache/devsrc/src/<distribution>/` and of the
fresh6 slice's distributions installed in `.cache/fresh6/venv` (listed by their `RECORD`), never a held-out one,
and flags, with stdlib `ast` only, the innermost functions that

- **norm**: call `mean` or `var_mean` and take a root (`sqrt`, `rsqrt`, `std`, `** 0.5`, `** -0.5`);
- **gelu**: call `erf`, or hold the constant `0.044715` or `0.7978845608`.

`scan` writes the candidates to OUT/candidates.json and the files holding them to OUT/files.txt; run
`adopter check --select 11,12,13 --format json` over the files (pure Python, no result cache) into a JSON file,
and `left OUT CHECK.json` subtracts what it reports (a finding of family 11 or 12 for a norm, 13 for a GELU,
inside the candidate's function), writes OUT/left_<CHECK>.json and lists the leftovers whose `mean` keeps its
dims (`keepdim=True`: the broadcasting normalisations), with their statistic and root lines, to read by hand.

    .venv/bin/python bench/norm_gelu_census.py scan /tmp/census
    ADOPTER_NATIVE=0 ADOPTER_RESULT_CACHE=0 PYTHONPATH=server nice -n 5 .venv/bin/python -m adopter check \\
        --select 11,12,13 --target cuda --format json --jobs 1 --quiet --no-cache $(cat /tmp/census/files.txt) \\
        > /tmp/census/check.json
    .venv/bin/python bench/norm_gelu_census.py left /tmp/census /tmp/census/check.json
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEVSRC = ROOT / ".cache" / "devsrc" / "src"
FRESH6_SITE = ROOT / ".cache" / "fresh6" / "venv" / "lib" / "python3.11" / "site-packages"
sys.path.insert(0, str(ROOT / "bench"))
from oracle.fresh import FRESH6  # noqa: E402

_FAMILIES = {"norm": (11, 12), "gelu": (13,)}
_ROOT_LINE = re.compile(r"mean\(|var_mean\(|sqrt|rsqrt|\.std\(|\*\* *-?0?\.5|var\(")


def _norm_name(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _callee(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def corpus_files() -> Iterator[tuple[str, Path]]:
    """(distribution, path) of every dev source file: devsrc's, then fresh6's installed ones."""
    for folder in sorted(DEVSRC.iterdir()):
        for path in sorted(folder.rglob("*.py")):
            yield folder.name, path
    for name in FRESH6.names():
        for info in FRESH6_SITE.glob("*.dist-info"):
            if _norm_name(info.name.split("-")[0]) != _norm_name(name) or not (info / "RECORD").exists():
                continue
            for line in (info / "RECORD").read_text().splitlines():
                rel = line.split(",")[0]
                if rel.endswith(".py") and not rel.startswith(".."):
                    yield name, FRESH6_SITE / rel


def kinds(fn: ast.AST) -> list[str]:
    """Which candidate kinds a function is."""
    names = [_callee(n) for n in ast.walk(fn) if isinstance(n, ast.Call)]
    powers = [n for n in ast.walk(fn) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Pow)]
    floats = {n.value for n in ast.walk(fn) if isinstance(n, ast.Constant) and isinstance(n.value, float)}
    root = any(n in ("sqrt", "rsqrt", "std") for n in names) or any(
        ast.unparse(p.right) in ("0.5", "-0.5", ".5", "-.5") for p in powers)
    out = []
    if ("mean" in names or "var_mean" in names) and root:
        out.append("norm")
    if "erf" in names or 0.044715 in floats or any(abs(c - 0.7978845608) < 1e-6 for c in floats):
        out.append("gelu")
    return out


def scan(out: Path) -> None:
    found: list[dict[str, Any]] = []
    for package, path in corpus_files():
        try:
            data = path.read_bytes()
            tree = ast.parse(data) if b"torch" in data else None
        except (OSError, SyntaxError, ValueError):
            continue
        if tree is None:
            continue
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for kind in kinds(fn):
                inner = [g for g in ast.walk(fn) if g is not fn and isinstance(g, ast.FunctionDef | ast.AsyncFunctionDef)
                         and kind in kinds(g)]
                if not inner:  # the innermost function holding the form
                    found.append({"package": package, "path": str(path), "family": kind, "function": fn.name,
                                  "start": fn.lineno, "end": fn.end_lineno or fn.lineno})
    (out / "candidates.json").write_text(json.dumps(found, indent=0))
    (out / "files.txt").write_text("\n".join(sorted({c["path"] for c in found})) + "\n")
    _summary(found, "candidates")


def _summary(records: list[dict[str, Any]], what: str) -> None:
    for kind in _FAMILIES:
        mine = [r for r in records if r["family"] == kind]
        print(f"{kind}: {len(mine)} {what} in {len({r['package'] for r in mine})} packages")


def left(out: Path, check: Path) -> None:
    candidates = json.loads((out / "candidates.json").read_text())
    reported: dict[str, list[int]] = collections.defaultdict(list)
    families: dict[str, list[int]] = collections.defaultdict(list)
    for finding in json.loads(check.read_text()):
        reported[finding["path"]].append(finding["range"]["start"]["line"])
        families[finding["path"]].append(int(finding["family"]))
    rest = [c for c in candidates if not any(
        family in _FAMILIES[c["family"]] and c["start"] - 1 <= line <= c["end"] + 1
        for family, line in zip(families[c["path"]], reported[c["path"]], strict=True))]
    (out / f"left_{check.stem}.json").write_text(json.dumps(rest, indent=0))
    _summary(rest, "left")
    for c in rest:
        lines = Path(c["path"]).read_bytes().decode("utf-8", "replace").splitlines()
        body = lines[c["start"] - 1:c["end"]]
        if c["family"] == "norm" and not any(re.search(r"keepdims? *= *True", t) for t in body):
            continue
        print(f"== {c['package']} {c['path']}:{c['start']} {c['function']} ({c['family']})")
        for number, text in enumerate(body, c["start"]):
            if _ROOT_LINE.search(text) or (c["family"] == "gelu" and re.search(r"erf|tanh|044715", text)):
                print(f"    {number} {text.strip()[:140]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("scan", "left"))
    parser.add_argument("out", type=Path, help="a folder outside the checkout")
    parser.add_argument("check", type=Path, nargs="?", help="left: the JSON of `adopter check --format json`")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.command == "scan":
        scan(args.out)
    elif args.check is None:
        parser.error("left needs the check JSON")
    else:
        left(args.out, args.check)


if __name__ == "__main__":
    main()
