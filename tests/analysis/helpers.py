"""Helpers for the analysis tests: analyse a snippet, pick a class, flatten ops."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator

from adopter.analysis import analyse
from adopter.dsl.types import Architecture, Binding, Block, Branch, Loop, ModuleFile, Op, Ref, Return, Value

HEADER = "import math\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def module(code: str, *, header: bool = True, path: str | None = None) -> ModuleFile:
    text = (HEADER if header else "") + textwrap.dedent(code)
    return analyse(text, path)


def arch(code: str, name: str | None = None, **kw: object) -> Architecture:
    mf = module(code, **kw)  # type: ignore[arg-type]
    found = [a for a in mf.architectures if name is None or a.name == name]
    assert found, f"no architecture {name!r} in {[a.name for a in mf.architectures]}; problems {mf.problems}"
    return found[-1]


def walk(block: Block) -> Iterator[Op | Return | Branch | Loop]:
    """Every statement of a block, depth first, in source order."""
    for stmt in block:
        yield stmt
        if isinstance(stmt, Branch):
            for path in stmt.paths:
                yield from walk(path)
        elif isinstance(stmt, Loop):
            yield from walk(stmt.body)


def ops(block: Block) -> list[Op]:
    return [s for s in walk(block) if isinstance(s, Op)]


def show(v: Value) -> str:
    return v.name if isinstance(v, Ref) else v.text


def line(op: Op) -> str:
    """`out = kind target(args, k=v)` in a compact form for table-driven assertions."""
    args = [show(a) for a in op.args] + [f"{k.name}={show(k.value)}" for k in op.kwargs]
    return f"{', '.join(op.outputs)} = {op.kind.value} {op.target}({', '.join(args)})"


def lines(block: Block) -> list[str]:
    return [line(op) for op in ops(block)]


def forward_lines(code: str, name: str | None = None) -> list[str]:
    a = arch(code, name)
    assert a.forward is not None
    return lines(a.forward.body)


def bindings(code: str, name: str | None = None) -> list[Binding]:
    a = arch(code, name)
    assert a.init is not None
    return list(a.init.bindings)


def run_without_native(test_file: str, test_name: str) -> None:
    """Run one test of `test_file` in a fresh interpreter on the pure-Python modules (for tests that
    patch analysis internals, which compiled modules do not allow); fail with its output."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "ADOPTER_NATIVE": "0"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"{test_file}::{test_name}"],
        env=env, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]


def reanalysed_after(code: str, old: str, new: str) -> tuple[tuple[str, ...], bool]:
    """Analyse `code` (with the header) incrementally, replace the first line equal to `old` (leading
    spaces kept) by `new`: the units analysed again, and whether the result equals a fresh analysis."""
    from adopter.analysis.incremental import DocumentAnalysis

    text = HEADER + textwrap.dedent(code)
    doc = DocumentAnalysis(text, "m.py")
    doc.result()
    i = text.index(old)
    line = text[:i].count("\n")
    indent = len(old) - len(old.lstrip())
    doc.edit((line, indent), (line, len(old)), new.lstrip())
    result = doc.result()
    return tuple(doc.reanalysed), result == analyse(doc.text, "m.py")


def strictly_equal(a: object, b: object) -> bool:
    """`a == b` field by field, including the fields dataclass equality leaves out (`compare=False`)."""
    import dataclasses

    if type(a) is not type(b):
        return False
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return all(strictly_equal(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, tuple | list) and isinstance(b, tuple | list):
        return len(a) == len(b) and all(strictly_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)
