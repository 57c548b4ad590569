"""`inline_lookups._called_lookups` finds the calls from the text (issue 20, spdinit): the same callees, in the
same order, as the walk of every node of the forward it replaced (`descendants`, each node tested)."""

from __future__ import annotations

import itertools

import pytest

from adopter.analysis.parse.source import SourceText, descendants, new_parser
from adopter.analysis.scope import inline_lookups
from adopter.analysis.scope.inline_lookups import _called_lookups, _lookup_callee

HEAD = "from .activations import ACT2FN, get_activation\nimport torch.nn as nn\n\n\nclass Head(nn.Module):\n"

# What may stand between a lookup and its `(`, and calls around it (transformers' ELECTRA / Funnel heads,
# `x = ACT2FN[self.config.hidden_act](x)`, reshaped).
GAPS = ["", " ", "  # why\n        ", " \\\n        ", "\n", "\f", "\u200b", "\ufeff", "\u2060", " #](\n  "]
CALLS = [
    "ACT2FN[self.config.hidden_act]{g}(x)",
    "get_activation('gelu'){g}(x)",
    "get_activation(k, j){g}(x)",  # two arguments: not a lookup
    "self.layers[i]{g}(x)",  # read off self: not one
    "ACT2FN[a]{g}(ACT2FN[b]{g}(x))",  # nested: the outer first
    "get_activation(ACT2FN[a]{g}(y)){g}(x)",
    "ACT2FN[a]{g}(x for x in y)",  # a generator expression as the arguments
    "f'{{ACT2FN[a]{g}(x)}}'",  # inside an f-string
    "'ACT2FN[a](x)'",  # in a string: no call
    "[a]{g}(x)",  # a list called: no lookup
    "(ACT2FN)[a]{g}(x)",
    "mods[0](x)[1]{g}(y)",
]


def _forward(body: str) -> tuple[SourceText, object]:
    text = HEAD + "    def forward(self, x, k=None, j=None):\n" + "".join(f"        {line}\n" for line in body.splitlines())
    data = text.encode()
    src = SourceText(data, new_parser().parse(data), "m.py")
    forward = next(n for n in descendants(src.tree.root_node) if n.type == "function_definition")
    return src, forward


def _walked(forward: object, src: SourceText) -> list[tuple[int, int]]:
    found = [_lookup_callee(n, src) for n in descendants(forward)]  # type: ignore[arg-type]
    return [(f.start_byte, f.end_byte) for f in found if f is not None]


def _found(forward: object, src: SourceText) -> list[tuple[int, int]]:
    return [(f.start_byte, f.end_byte) for f in _called_lookups(forward, src)]  # type: ignore[arg-type]


@pytest.mark.parametrize("gap", GAPS)
def test_every_call_shape_is_found_as_the_walk_finds_it(gap: str) -> None:
    for first, second in itertools.product(CALLS, repeat=2):
        body = f"h = {first.format(g=gap)}\nreturn {second.format(g=gap)} + ACT2FN[k](h)"
        src, forward = _forward(body)
        assert _found(forward, src) == _walked(forward, src), body


def test_the_lookups_and_their_order() -> None:
    src, forward = _forward("h = ACT2FN[a](ACT2FN[b](x))  # ACT2FN[c](x)\nreturn get_activation('gelu')  \\\n  (h)")
    names = [src.text(f) for f in _called_lookups(forward, src)]  # type: ignore[arg-type]
    assert names == ["get_activation('gelu')", "ACT2FN[a]", "ACT2FN[b]"]  # the walk's order: later statements first


def test_a_forward_with_an_error_is_walked(monkeypatch: pytest.MonkeyPatch) -> None:
    src, forward = _forward("h = ACT2FN[a](x\nreturn ACT2FN[b](h)")
    assert forward.has_error  # type: ignore[attr-defined]
    assert _found(forward, src) == _walked(forward, src)


def test_no_pattern_backtracks_on_a_long_comment() -> None:
    # A possessive pattern: a run of `#` after a `)` with no `(` after it costs one pass, not one per split.
    text = b"x = f(a)  " + b"# " * 5000 + b"\n"
    assert inline_lookups._BRACKET_THEN_PAREN.search(text) is None
