"""Python idioms that the compiled (mypyc) build of a module does not keep, checked in every module it compiles.

A class-body alias of a method (`visit_AsyncFunctionDef = visit_FunctionDef`) is a class attribute in Python; mypyc
compiles the class without it, so `getattr(obj, "visit_AsyncFunctionDef")` fails in the native build only. Stop 32's
`engine/called_elsewhere._Uses` did this: the pure run passed, CI's native run rewrote sites it had refused. The
source is read as text here, so the check holds whether or not a native build exists.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def _build_native() -> Any:
    spec = importlib.util.spec_from_file_location("adopter_build_native_idioms", REPO / "scripts" / "build_native.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def method_aliases(source: str) -> list[tuple[int, str, str]]:
    """(line, class, alias) of each `name = method` in a class body where `method` is a def of that class."""
    found: list[tuple[int, str, str]] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ClassDef):
            continue
        methods = {s.name for s in node.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)}
        for s in node.body:
            if isinstance(s, ast.Assign) and isinstance(s.value, ast.Name) and s.value.id in methods:
                found.extend((s.lineno, node.name, ast.unparse(t)) for t in s.targets)
    return found


def test_the_check_sees_a_method_alias() -> None:
    source = "class V:\n    def visit_A(self, n):\n        pass\n\n    visit_B = visit_A\n    limit = 3\n"
    assert method_aliases(source) == [(5, "V", "visit_B")]


def test_no_compiled_module_aliases_a_method_in_its_class_body() -> None:
    server = REPO / "server"
    files = _build_native().sources(server)
    assert len(files) > 50
    found = [(f, *hit) for f in files for hit in method_aliases((server / f).read_text(encoding="utf-8"))]
    assert not found, f"class-body aliases of methods in compiled modules (write a method that calls the other): {found}"
