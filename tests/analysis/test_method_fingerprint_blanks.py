"""The `method:` fingerprint reads a method's text without blanks at line ends (those a blanked statement
leaves), the same on a very long run of blanks (where the earlier regex backtracked for seconds: the timing lives in
docs/notes/latency14.md, not here — tests check behaviour, never time)."""

from __future__ import annotations

from adopter.analysis.names.symbols import METHOD, ModuleSymbols
from adopter.analysis.parse.source import SourceText, new_parser


def _fingerprint(text: bytes, key: str) -> tuple[object, ...]:
    tree = new_parser().parse(text)
    assert not tree.root_node.has_error
    return ModuleSymbols(SourceText(text, tree, None), None).fingerprint(key)


def test_blanks_at_line_ends_are_not_read_even_after_a_long_run_of_blanks() -> None:
    clean = b"class A:\n    def f(self, x):\n        y = x\n\n        return y\n"
    cases = (  # blanks before a line break, on an empty line, tabs, at the text's end without a line break
        b"class A:\n    def f(self, x):  \n        y = x\t \n        \n        return y   ",
        b"class A:\n    def f(self, x):\n        y = x \n\n        return y\t\n",
    )
    want = _fingerprint(clean, f"{METHOD}A.f")
    assert want[1] == clean[13:].rstrip(b"\n")
    for text in cases:
        assert _fingerprint(text, f"{METHOD}A.f")[1] == want[1]
    # Blanks inside a line stay: only a line's end is stripped.
    inner = b"class A:\n    def f(self, x):  \n        y = x  +  1\n        return y\n"
    assert _fingerprint(inner, f"{METHOD}A.f")[1] == b"def f(self, x):\n        y = x  +  1\n        return y"
    # 20,000 blanks of indentation (then code) in a method that has a blank at a line end.
    run = b" " * 20_000
    long = b"class A:\n    def f(self, x):  \n        if x:\n" + run + b"return x\n        return x\n"
    found = _fingerprint(long, f"{METHOD}A.f")
    assert found[1] == b"def f(self, x):\n        if x:\n" + run + b"return x\n        return x"
