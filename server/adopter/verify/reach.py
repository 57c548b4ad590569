"""Whether a run reached the code a fix wrote: the lines it changed in functions other than `__init__`.

A class can hold its hand-written code on a path its inputs never take (`if self.fused_attn: sdpa(...) else:
<the matched code>`); comparing it with its rewrite then compares the same code twice, and "equivalent"
would prove nothing. `verify` watches the rewritten module's lines while the comparison runs and reports
such a class as not run, with the lines its inputs did not reach.
"""

from __future__ import annotations

import ast
import difflib
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any


def watched_lines(old: str, new: str) -> frozenset[int]:
    """The 1-based lines of `new` that the change from `old` wrote (replaced or inserted) and that lie in
    a function other than `__init__` (where the forward and its helpers compute); empty when the change
    writes only constructors and module-level code, which run before any comparison."""
    matcher = difflib.SequenceMatcher(None, old.split("\n"), new.split("\n"), autojunk=False)
    written = {j + 1 for tag, _, _, j1, j2 in matcher.get_opcodes() if tag in ("replace", "insert")
               for j in range(j1, j2)}
    try:
        tree = ast.parse(new)
    except SyntaxError:
        return frozenset()
    bodies: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name != "__init__" and node.body:
            bodies.update(range(node.body[0].lineno, (node.end_lineno or node.lineno) + 1))
    inits: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            inits.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return frozenset((written & bodies) - inits)


@contextmanager
def lines_run(filename: str) -> Iterator[set[int]]:
    """The lines of `filename` that Python runs inside the block (this thread), as a set filled in place."""
    ran: set[int] = set()

    def local(frame: FrameType, event: str, arg: Any) -> Callable[..., Any] | None:
        if event == "line":
            ran.add(frame.f_lineno)
        return local

    def calls(frame: FrameType, event: str, arg: Any) -> Callable[..., Any] | None:
        if event == "call" and frame.f_code.co_filename == filename:
            ran.add(frame.f_lineno)
            return local
        return None

    previous = sys.gettrace()
    sys.settrace(calls)
    try:
        yield ran
    finally:
        sys.settrace(previous)
