"""`idioms.bias_submodules.updated_attributes`: the `x = self.attr(x, ...)` calls of a forward, found from each `=`
(issue 21, lat38: the search from every identifier cost 8.8 ms over T5's 106 KB, each time a class is analysed
again). It must give exactly what the identifier-first pattern gave."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from adopter.analysis.idioms.bias_submodules import updated_attributes

# The pattern the search replaced (adopter 8c2d50f7), the reference.
_REFERENCE = re.compile(rb"\b([A-Za-z_]\w*)\s*=\s*self\.([A-Za-z_]\w*)\(\s*([A-Za-z_]\w*)\s*[,)]")


def _reference(text: bytes) -> set[str]:
    return {m.group(2).decode() for m in _REFERENCE.finditer(text) if m.group(1) == m.group(3)}


# Shaped on transformers 4.35.0 models/t5/modeling_t5.py, `T5DenseActDense.forward` (l. 287-297) and
# `T5LayerFF.forward` (l. 344-348), rewritten at fixture size.
_FORWARD = b"""\
    def forward(self, hidden):
        hidden = self.wi(hidden)
        hidden = self.act(hidden)
        forwarded = self.norm(hidden)
        forwarded = self.ff(forwarded, mask)
        hidden = hidden + self.dropout(forwarded)
        out =self.wo( out )
        return hidden
"""


def test_the_forward_s_updates():
    assert updated_attributes(_FORWARD) == {"wi", "act", "ff", "wo"} == _reference(_FORWARD)


def test_look_alikes_are_not_updates():
    # each the nearest text the pattern refuses: another name, a comparison, an augmented or annotated
    # assignment, a name that starts with a digit or runs on into a longer word, a parenthesised target
    for text in (b"y = self.f(x)", b"x == self.f(x)", b"x != self.f(x)", b"x <= self.f(x)", b"x += self.f(x)",
                 b"x: T = self.f(x)", b"1x = self.f(1x)", b"ax = self.f(x)", b"x = self.f(xa)",
                 b"x = self.f(x + 1)", b"x = self.f(*x)", b"x = self.a.f(x)", b"x = self .f(x)", b"x = other.f(x)",
                 b"(x)=self.k(x)"):
        assert updated_attributes(text) == set() == _reference(text), text


def test_edges_that_are_updates():
    # the name at the text's start, blanks and line breaks around `=`, a word byte run ending in a digit,
    # a non-ASCII byte right before the name (not a word byte in a bytes pattern), a keyword argument (the
    # pattern reads it as an update too)
    for text, attr in ((b"x = self.f(x)", "f"), (b"x\n=\n self.f(\n x\n, y)", "f"), (b"x1 = self.g(x1)", "g"),
                       (b"\xc3\xa9x = self.h(x)", "h"), (b"_=self.m(_)", "m"), (b"g(x=self.f(x))", "f")):
        assert updated_attributes(text) == {attr} == _reference(text), text


_PIECES = st.sampled_from([b"x", b"y", b"x1", b"1", b"_", b" ", b"\n", b"\t", b"=", b"==", b"+", b"self", b".",
                           b"f", b"(", b")", b",", b"\xc3\xa9", b":", b"[", b"]", b"self.f(", b"x = ", b"= self."])


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=30))
def test_the_same_as_the_identifier_first_pattern(pieces):
    text = b"".join(pieces)
    assert updated_attributes(text) == _reference(text)
