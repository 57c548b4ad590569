"""`function_constant`: the number a module-level function memoises on itself (`f._a = math.sqrt(2 / math.pi)`
in `f`'s body), and the bindings it refuses (`analysis/names/function_constants.py`)."""

from __future__ import annotations

import pytest

from adopter.analysis.names.function_constants import function_constant
from adopter.analysis.names.symbols import ModuleSymbols
from adopter.analysis.parse.source import SourceText, new_parser

MEMO = """import math


def f(x):
    if not hasattr(f, "_a"):
        f._a = math.sqrt(2 / math.pi)
    return f._a * x
"""


def _of(name: str, attr: str, symbols: ModuleSymbols) -> str | None:
    function = symbols.function_node(name)
    return function_constant(function, attr, symbols.src) if function is not None else None


def _constant(text: str, name: str = "f", attr: str = "_a") -> str | None:
    data = text.encode()
    tree = new_parser().parse(data)
    assert not tree.root_node.has_error
    return _of(name, attr, ModuleSymbols(SourceText(data, tree, None), None))


def test_the_memoised_number_is_read_as_its_expression() -> None:
    assert _constant(MEMO) == "math.sqrt(2 / math.pi)"
    assert _constant(MEMO.replace("math.sqrt(2 / math.pi)", "0.7978845608")) == "0.7978845608"


@pytest.mark.parametrize("text, name, attr", [
    (MEMO, "f", "_b"),  # no such attribute
    (MEMO, "g", "_a"),  # not a function of the file
    (MEMO.replace("def f(x)", "def h(x)").replace("hasattr(f", "hasattr(h"), "f", "_a"),  # f is no function
    (MEMO + "\nf._a = 0.8\n", "f", "_a"),  # bound again at module level
    (MEMO + "\n\ndef g(x):\n    f._a = 0.8\n    return x\n", "f", "_a"),  # bound again in another function
    (MEMO.replace("        f._a = math", "        f._a = 1.0\n        f._a = math"), "f", "_a"),  # bound twice
    (MEMO + "\n\nclass C:\n    def f(self):\n        f._a = 0.8\n", "f", "_a"),  # in a method: the global f
    (MEMO.replace("    return", "    f._a *= 1.0\n    return"), "f", "_a"),  # updated in place
    (MEMO.replace("    return", "    del f._a\n    return"), "f", "_a"),  # deleted
    (MEMO.replace("    return", '    setattr(f, "_a", 1.0)\n    return'), "f", "_a"),  # set by setattr
    (MEMO.replace("f._a = math", "f._a = g._a = math"), "f", "_a"),  # chained
    (MEMO.replace("math.sqrt(2 / math.pi)", "x.mean()"), "f", "_a"),  # not a constant
    (MEMO.replace('    if not hasattr(f, "_a"):\n        f._a = math.sqrt(2 / math.pi)\n', "")
     + "\nf._a = math.sqrt(2 / math.pi)\n", "f", "_a"),  # bound outside the function
])
def test_bindings_that_are_not_evident_are_refused(text: str, name: str, attr: str) -> None:
    assert _constant(text, name, attr) is None


def test_a_closure_of_the_same_name_binds_its_own_object() -> None:
    closure = "\n\ndef get_act(name):\n" + "".join(f"    {line}\n" if line else "\n" for line in MEMO.splitlines()[3:])
    closure = closure.replace("math.sqrt(2 / math.pi)", "0.5") + "    return f\n"
    assert _constant(MEMO + closure) == "math.sqrt(2 / math.pi)"


def test_a_longer_name_that_contains_the_attribute_is_not_a_binding() -> None:
    text = MEMO + "\n\ndef g(x):\n    x.f._a = 1.0\n    my_f._a = 2.0\n    f._ab = 3.0\n    return x\n"
    assert _constant(text) == "math.sqrt(2 / math.pi)"
