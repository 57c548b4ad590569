"""Census of family-14 and family-15 candidates in dev code (mech100): the functions whose body looks like a gated
MLP or a rotary embedding, by a broad syntactic net, for comparison with what `adopter check --select 14,15` reports.

- family 14: a product `act(a) * b` (either order) with `act` a SiLU/GELU-like call by name (`silu`, `gelu`, `swish`,
  `act*`, `activation*`, `ACT2FN[...]`, not `sigmoid`/`relu`/`tanh`/`softmax`/`softplus`), or a call of `glu`;
- family 15: a rotation (a negated part stacked or concatenated, a call of a `rotate*` helper) next to a product
  with a cos/sin-named value, or a `view_as_complex` next to a product.

Run: `.venv/bin/python bench/gated_rope_census.py ROOT... > OUT.json` (dev sources only: `.cache/devsrc/src`,
fresh6's site-packages; never a held-out set), then `adopter check --format json --select 14` (or 15) on the files
listed and compare each function's line range with the findings. Prints JSON rows
`[family, path, first line, last line, class, function, line of the candidate]`.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

_ACT = re.compile(r"silu|gelu|swish|^act|activation|act_fn|ACT2FN|glu", re.IGNORECASE)
_NOT_ACT = re.compile(r"sigmoid|relu|tanh|softmax|softplus", re.IGNORECASE)
_NEG_CAT = re.compile(r"(cat|stack|concat)\(\s*[\(\[]\s*-")
_ROT_CALL = re.compile(r"\brotate\w*\(|\brot\(|rotate_every_two|rotate_half")
_TRIG_PRODUCT = re.compile(r"\*\s*\w*(cos|sin)\w*|\w*(cos|sin)\w*\s*\*")


def _callee(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Subscript):
        return ast.unparse(func.value)
    return ""


def _is_act(node: ast.expr) -> bool:
    if not isinstance(node, ast.Call):
        return False
    name = _callee(node.func)
    return bool(_ACT.search(name)) and not _NOT_ACT.search(name)


def _gated_line(fn: ast.FunctionDef) -> int | None:
    for node in ast.walk(fn):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and (_is_act(node.left)
                                                                              or _is_act(node.right)):
            return node.lineno
        if isinstance(node, ast.Call) and _callee(node.func) == "glu":
            return node.lineno
    return None


def _rotary(body: str) -> bool:
    rest = body.split("\n", 1)[1] if "\n" in body else ""
    rotates = bool(_NEG_CAT.search(body)) or bool(_ROT_CALL.search(rest))
    return (rotates and bool(_TRIG_PRODUCT.search(body))) or ("view_as_complex" in body and "*" in body)


def census(roots: list[str]) -> list[tuple[int, str, int, int, str, str, int]]:
    rows: list[tuple[int, str, int, int, str, str, int]] = []
    for root in roots:
        for path in sorted(Path(root).rglob("*.py")):
            if "_tf_" in path.name or "_flax_" in path.name:
                continue
            try:
                source = path.read_text(errors="ignore")
                tree = ast.parse(source)
            except (OSError, SyntaxError, ValueError):
                continue
            lines = source.splitlines()
            owner = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
            for fn in ast.walk(tree):
                if not isinstance(fn, ast.FunctionDef):
                    continue
                cls = owner.get(fn)
                cname = cls.name if isinstance(cls, ast.ClassDef) else ""
                end = fn.end_lineno or fn.lineno
                if (line := _gated_line(fn)) is not None:
                    rows.append((14, str(path), fn.lineno, end, cname, fn.name, line))
                if _rotary("\n".join(lines[fn.lineno - 1:end])):
                    rows.append((15, str(path), fn.lineno, end, cname, fn.name, fn.lineno))
    return rows


if __name__ == "__main__":
    json.dump(census(sys.argv[1:]), sys.stdout)
