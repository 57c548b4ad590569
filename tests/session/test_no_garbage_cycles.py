"""An open document's keystrokes leave no reference cycles behind: what an edit's analysis and matching built and
dropped is freed when dropped, not kept for the cyclic garbage collector.

A cycle keeps everything it reaches alive until a collection finds it (the run's source, symbol tables, a flow
walk's state), and the collector then walks it all: in the server that lands on whichever keystroke's analysis
happens to trigger it. Checked under whichever build runs (the native build's closures made cycles of their own:
a nested function and its enclosing function's environment refer to each other) and under pure Python.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from types import CellType, FunctionType

import pytest

from adopter.engine.environment import Environment
from adopter.session import OpenText, RuleContext, Session, load_context

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def session() -> Session:
    context = load_context()
    return Session(RuleContext(context.rules, context.problems, Environment("cuda", frozenset({"torch"}), "2.4.0")))


def _keystrokes(text: str) -> Iterator[str]:
    """A character typed and deleted again at a few places: in a name (`torch.`), into a layer's construction
    (a call left open: broken), at column 0 inside a class (broken), into a `return`'s keyword (broken)."""
    for anchor, typed in (("torch.", "x"), ("nn.Linear(", "("), ("nn.Linear(", "a"), ("\n    def ", "z"),
                          ("return ", "x")):
        at = text.find(anchor)
        assert at >= 0, anchor
        at += 1
        yield text[:at] + typed + text[at:]
        yield text


def _garbage(session: Session, name: str) -> list[object]:
    """What the collector finds after the keystrokes (gc off meanwhile, everything it would free kept)."""
    text = (EXAMPLES / name).read_text(encoding="utf-8")
    document = OpenText(text, str(EXAMPLES / name))
    session.update(document)
    document.prepare()
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for version in _keystrokes(text):
            document.update(version)
            analysed, _ = session.update(document)
            assert analysed.module_file.architectures
        gc.collect()
        return list(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


def _stdlib_literal_eval(o: object) -> bool:
    """Part of the cycle each `ast.literal_eval` call leaves (its nested functions refer to each other through
    their cells): a few small objects holding no analysis."""
    if isinstance(o, FunctionType):
        return o.__module__ == "ast"
    if isinstance(o, CellType):
        return _stdlib_literal_eval(o.cell_contents)
    return isinstance(o, tuple) and bool(o) and all(isinstance(c, CellType) and _stdlib_literal_eval(c) for c in o)


def _ours(garbage: list[object]) -> list[str]:
    """The types of what the collector found, but for `ast.literal_eval`'s cycles."""
    return sorted({type(o).__qualname__ for o in garbage if not _stdlib_literal_eval(o)})


@pytest.mark.parametrize("name", ["bert_encoder.py", "llama_block.py"])
def test_keystrokes_leave_no_reference_cycles(session: Session, name: str) -> None:
    assert _ours(_garbage(session, name)) == []


@pytest.mark.pure_python
def test_keystrokes_leave_no_reference_cycles_in_pure_python(session: Session) -> None:
    assert _ours(_garbage(session, "bert_encoder.py")) == []
